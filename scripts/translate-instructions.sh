#!/usr/bin/env bash
# Instructions per translation step, counted by callgrind: the figures of
# `switchyard-translate` that do not move with the machine's noise (its timings
# on a shared VM vary by half from one run to the next).
#
#   scripts/translate-instructions.sh [BINARY] [COUNT]
#
# Runs BINARY (default target/release/switchyard-translate) with `--count COUNT
# --pair K` under `valgrind --tool=callgrind` for each of its table's rows, and
# prints each step's inclusive instructions divided by COUNT (default 200).
# Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-target/release/switchyard-translate}")"
n="${2:-200}"
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The rows' names, from a timed run's table is too slow; they are listed here
# in the binary's order.
rows=("openai-chat → openai-chat" "anthropic → openai-chat" "openai-responses → openai-chat"
  "gemini → openai-chat" "openai-chat → anthropic" "openai-chat → gemini" "openai-chat → bedrock")
echo "| client → upstream | parse request | write upstream's | parse answer | write client's | whole request | stream, per frame |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for k in "${!rows[@]}"; do
  out="$tmp/cg.$k"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --count "$n" --pair "$k" 2>"$tmp/log.$k" \
    || { cat "$tmp/log.$k" >&2; exit 1; }
  # Each step's inclusive cost, per call; frames per stream from the binary.
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk -v n="$n" -v row="${rows[$k]}" -v frames="$("$bin" --frames "$k")" '
    /translate::step_/ {
      gsub(",", "", $1)
      name = $0; sub(/.*translate::step_/, "", name); sub(/[^a-z_].*/, "", name)
      cost[name] = $1 / n
    }
    END {
      whole = cost["parse"] + cost["encode"] + cost["parse_answer"] + cost["encode_answer"]
      printf "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", row, cost["parse"], cost["encode"], cost["parse_answer"], cost["encode_answer"], whole, cost["stream"] / frames
    }'
done
echo
echo "Instructions per operation (inclusive, callgrind), $n calls of each."
