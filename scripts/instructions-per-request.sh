#!/usr/bin/env bash
# Instructions the gateway executes per request, counted by callgrind: a figure
# that does not move with the machine's noise, for comparing two builds of the
# gateway (wall-clock CPU per request on a shared VM varies by ±15 % run to run).
#
#   scripts/instructions-per-request.sh [GATEWAY_BINARY] [LABEL]
#
# Runs switchyard-bench (next to the gateway binary, else target/release) with a
# short load, the gateway under `valgrind --tool=callgrind` (unpinned: callgrind
# serializes the threads anyway), reads the number of requests the gateway served
# from its /metrics, and prints user-space instructions per request (startup
# included, about 10k per request at this load). The callgrind profile is kept
# in $TMPDIR/switchyard-callgrind.LABEL.out for callgrind_annotate.
# Needs valgrind (apt-get install valgrind) and curl. Symbols: build with
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none.
set -euo pipefail
cd "$(dirname "$0")/.."
gateway="$(realpath "${1:-target/release/switchyard}")"
label="${2:-run}"
bench="$(dirname "$gateway")/switchyard-bench"
[ -x "$bench" ] || bench=target/release/switchyard-bench
for tool in valgrind curl callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
tmp="${TMPDIR:-/tmp}"
out="$tmp/switchyard-callgrind.$label.out"
wrapper="$tmp/switchyard-callgrind-wrapper.$$.sh"
rm -f "$out"
# The bench kills the process it started; the gateway under valgrind is started
# in the background so it outlives that and can be asked for its counts.
cat >"$wrapper" <<WRAP
#!/bin/sh
if [ "\$1" = serve ]; then
  valgrind --tool=callgrind --callgrind-out-file="$out" "$gateway" "\$@" 2>"$tmp/switchyard-callgrind.$label.log" &
  wait \$!
fi
exec "$gateway" "\$@"
WRAP
chmod +x "$wrapper"
trap 'rm -f "$wrapper"' EXIT
"$bench" --gateway "$wrapper" --no-nginx --no-floor --no-pin --requests 400 --streams 8 \
  --duration 3 --retries 0 >"$tmp/switchyard-callgrind.$label.bench" 2>&1 || true
pid="$(pgrep -f "callgrind-out-file=$out" | head -n1)"
[ -n "$pid" ] || { echo "the gateway under callgrind is not running; see $tmp/switchyard-callgrind.$label.*" >&2; exit 1; }
addr="$(ps -o args= -p "$pid" | sed 's/.*--listen //')"
requests="$(curl -s "http://$addr/metrics" | awk '/^gateway_requests_total/ {s += $2} END {print s + 0}')"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
total="$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
[ "$requests" -gt 0 ] || { echo "the gateway served no requests" >&2; exit 1; }
echo "$label: $requests requests, $total instructions, $((total / requests)) per request (profile: $out)"
