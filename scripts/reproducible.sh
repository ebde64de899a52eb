#!/usr/bin/env bash
# Two builds of one commit give the same binary:
#   scripts/reproducible.sh [COMMIT]   (default HEAD)
# Clones the commit twice, into two directories of different names, builds each
# from cold with scripts/build-release.sh (each its own target directory), and
# compares the two binaries byte for byte. Prints both SHA-256s; exits 1 if they
# differ, after listing the first differing bytes. Takes two cold release builds
# (about 15 minutes each on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse "${1:-HEAD}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sums=()
for side in a bb; do
  # Different lengths of path, so a path left in the binary shows as a difference.
  dir="$work/$side/switchyard-$side"
  git clone --quiet --no-checkout "$(pwd)" "$dir"
  git -C "$dir" checkout --quiet "$commit"
  (cd "$dir" && scripts/build-release.sh > "$work/$side.log" 2>&1) \
    || { tail -20 "$work/$side.log"; exit 1; }
  sums+=("$(sha256sum < "$dir/target/release/switchyard" | cut -d' ' -f1)")
  echo "build $side ($dir): sha256 ${sums[-1]}, $(stat -c %s "$dir/target/release/switchyard") bytes"
done
if [ "${sums[0]}" = "${sums[1]}" ]; then
  echo "reproducible: commit $commit builds to the same binary twice (sha256 ${sums[0]})"
else
  echo "NOT reproducible: commit $commit built to two different binaries" >&2
  cmp -l "$work/a/switchyard-a/target/release/switchyard" "$work/bb/switchyard-bb/target/release/switchyard" | head -20 >&2 || true
  exit 1
fi
