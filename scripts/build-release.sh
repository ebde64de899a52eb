#!/usr/bin/env bash
# The release binary, built so that two builds of one commit are the same file:
#   scripts/build-release.sh            -> target/release/switchyard
# - the lock file as committed (--locked);
# - cargo-auditable, when installed, embeds the dependency list (`cargo audit
#   bin`, `syft` and others read it back from the binary);
# - no path of this machine in the binary: the source tree and cargo's home are
#   remapped to fixed names (panic locations and the like name /switchyard/…);
# - the build script records no time and no path (crates/switchyard/build.rs).
# scripts/reproducible.sh builds twice with this and compares; scripts/release.sh
# ships what it builds.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
export RUSTFLAGS="--remap-path-prefix=$(pwd)=/switchyard --remap-path-prefix=$cargo_home=/cargo ${SWITCHYARD_RUSTFLAGS:-}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
build=(cargo build)
if command -v cargo-auditable >/dev/null; then
  build=(cargo auditable build)
elif [ -n "${SWITCHYARD_REQUIRE_AUDITABLE:-}" ]; then
  echo "$0: cargo-auditable is not installed (cargo install --locked cargo-auditable)" >&2; exit 1
fi
"${build[@]}" --release --locked -p switchyard --bin switchyard
