#!/usr/bin/env bash
# Instructions the gateway executes per request, counted by callgrind: a figure
# that does not move with the machine's noise, for comparing two builds of the
# gateway (wall-clock CPU per request on a shared VM varies by ±15 % run to run).
#
#   scripts/instructions-per-request.sh [--marginal] [GATEWAY_BINARY] [LABEL]
#
# Runs switchyard-bench (next to the gateway binary, else target/release) with a
# short load, the gateway under `valgrind --tool=callgrind` (unpinned: callgrind
# serializes the threads anyway), reads the number of requests the gateway served
# from its /metrics, and prints user-space instructions per request (startup
# included: about 20k per request at this load). The callgrind profile is kept
# in $TMPDIR/switchyard-callgrind.LABEL.out for callgrind_annotate.
#
# The bench's load phases are timed, so the number of requests served, and with
# it startup's share of each, differs from run to run by up to a fifth. Two
# builds whose difference is a few percent are compared with --marginal: it runs
# the load twice, for 2 s and for 12 s of throughput, and prints the instructions
# the extra requests cost, each (startup and the fixed phases cancel out). It
# pins the gateway to one CPU, so it runs its single-threaded scheduler: a
# work-stealing pool's spinning and signalling under callgrind's serialised
# threads moved the figure by 5 % between two runs of one binary. And it counts
# from the moment the gateway serves: startup includes a clock calibration loop
# whose length varies, by 1 % of the figure.
#
# Needs valgrind (apt-get install valgrind) and curl. Symbols: build with
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none.
set -euo pipefail
cd "$(dirname "$0")/.."
marginal=false
if [ "${1:-}" = --marginal ]; then marginal=true; shift; fi
gateway="$(realpath "${1:-target/release/switchyard}")"
label="${2:-run}"
bench="$(dirname "$gateway")/switchyard-bench"
[ -x "$bench" ] || bench=target/release/switchyard-bench
for tool in valgrind curl callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
tmp="${TMPDIR:-/tmp}"
# The gateway key the bench configures (API_KEY in crates/bench/src/main.rs):
# /metrics needs one on a keyed gateway.
auth="authorization: Bearer sk-bench-0123456789abcdef"

# measure LABEL DURATION: prints "REQUESTS INSTRUCTIONS".
measure() {
  local label="$1" duration="$2" pin=""
  $marginal && pin="taskset -c 0"
  local out="$tmp/switchyard-callgrind.$label.out"
  local wrapper="$tmp/switchyard-callgrind-wrapper.$$.sh"
  rm -f "$out"
  # The bench kills the process it started; the gateway under valgrind is started
  # in the background so it outlives that and can be asked for its counts.
  cat >"$wrapper" <<WRAP
#!/bin/sh
if [ "\$1" = serve ]; then
  $pin valgrind --tool=callgrind --callgrind-out-file="$out" "$gateway" "\$@" 2>"$tmp/switchyard-callgrind.$label.log" &
  vg=\$!
  if $marginal; then
    # Counted from the moment it serves: startup's cost varies from run to run
    # (a clock calibration loop), and would not cancel out.
    addr="\$(echo "\$*" | sed 's/.*--listen //')"
    ( until curl -sf -H "$auth" "http://\$addr/metrics" >/dev/null; do sleep 0.1; done
      callgrind_control -z \$vg >/dev/null ) &
  fi
  wait \$vg
fi
exec "$gateway" "\$@"
WRAP
  chmod +x "$wrapper"
  "$bench" --gateway "$wrapper" --no-nginx --no-floor --no-pin --requests 400 --streams 8 \
    --duration "$duration" --retries 0 >"$tmp/switchyard-callgrind.$label.bench" 2>&1 || true
  rm -f "$wrapper"
  local pid addr requests total
  pid="$(pgrep -f "callgrind-out-file=$out" | head -n1)"
  [ -n "$pid" ] || { echo "the gateway under callgrind is not running; see $tmp/switchyard-callgrind.$label.*" >&2; exit 1; }
  addr="$(ps -o args= -p "$pid" | sed 's/.*--listen //')"
  requests="$(curl -s -H "$auth" "http://$addr/metrics" | awk '/^gateway_requests_total/ {s += $2} END {print s + 0}')"
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
  total="$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
  [ "$requests" -gt 0 ] || { echo "the gateway served no requests" >&2; exit 1; }
  echo "$requests $total"
}

if ! $marginal; then
  m="$(measure "$label" 3)"
  read -r requests total <<<"$m"
  echo "$label: $requests requests, $total instructions, $((total / requests)) per request (profile: $tmp/switchyard-callgrind.$label.out)"
  exit 0
fi
m="$(measure "$label.short" 2)"
read -r r1 t1 <<<"$m"
m="$(measure "$label.long" 12)"
read -r r2 t2 <<<"$m"
[ "$r2" -gt "$r1" ] || { echo "the longer run served no more requests ($r1, $r2)" >&2; exit 1; }
echo "$label: $r1 requests, $t1 instructions; $r2 requests, $t2 instructions;" \
  "$(((t2 - t1) / (r2 - r1))) per extra request (profiles: $tmp/switchyard-callgrind.$label.{short,long}.out)"
