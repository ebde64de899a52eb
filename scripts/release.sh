#!/usr/bin/env bash
# A release anyone can check:  scripts/release.sh [DIR]   (default dist/)
# First the dependency checks (cargo-deny, deny.toml): licences, sources and
# banned crates must pass; security advisories are checked when the RustSec
# database can be fetched (it cannot from this project's CI machines, so CI runs
# the other three) and a release fails on any advisory found.
# Then DIR gets:
#   switchyard-VERSION-TARGET           the binary (scripts/build-release.sh:
#                                       --locked, cargo-auditable's dependency
#                                       list inside, reproducible)
#   switchyard-VERSION-TARGET.cdx.json  the CycloneDX 1.5 SBOM of its dependency tree
#   switchyard-VERSION-image.oci.tar    the container image (scripts/image.sh), with buildah
#   version.txt                         `switchyard version --verbose`
#   SHA256SUMS                          of each of the above
# scripts/reproducible.sh checks that a second build gives the same binary.
# Tools: cargo install --locked cargo-deny cargo-auditable cargo-cyclonedx
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
target=$(rustc -vV | sed -n 's/^host: //p')
name="switchyard-$version-$target"
for tool in cargo-deny cargo-auditable cargo-cyclonedx; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not installed (cargo install --locked $tool)" >&2; exit 1; }
done
git diff --quiet HEAD 2>/dev/null || echo "warning: the tree has uncommitted changes; the release is not of one commit" >&2

echo "== dependencies: licences, sources, bans"
cargo deny --locked check bans licenses sources
echo "== dependencies: advisories"
if cargo deny fetch db >/dev/null 2>&1; then
  cargo deny --locked check advisories
else
  echo "warning: the RustSec advisory database could not be fetched: advisories NOT checked" >&2
  [ -z "${SWITCHYARD_REQUIRE_ADVISORIES:-}" ] || exit 1
fi

echo "== binary"
SWITCHYARD_REQUIRE_AUDITABLE=1 scripts/build-release.sh
rm -rf "$dist"; mkdir -p "$dist"
cp target/release/switchyard "$dist/$name"
"$dist/$name" version --verbose | tee "$dist/version.txt"

echo "== SBOM"
# The binary's package: its normal and build dependencies (not dev), for the
# target it was built for; SOURCE_DATE_EPOCH fixes its timestamp.
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || echo 0)" cargo cyclonedx --quiet \
  --manifest-path crates/switchyard/Cargo.toml --format json --spec-version 1.5 \
  --target "$target" --override-filename "$name.cdx"
# It writes one per workspace member: keep the binary's, with this machine's
# path to the source replaced as the binary's own paths are.
sed "s|path+file://$(pwd)|path+file:///switchyard|g" "crates/switchyard/$name.cdx.json" > "$dist/$name.cdx.json"
find crates examples -name "$name.cdx.json" -delete

if command -v buildah >/dev/null; then
  echo "== image"
  scripts/image.sh --binary "$dist/$name" --tag "localhost/switchyard:$version" --archive "$dist/switchyard-$version-image.oci.tar"
else
  echo "warning: buildah is not installed: no image" >&2
fi

(cd "$dist" && sha256sum -- * | grep -v ' SHA256SUMS$' > SHA256SUMS)
echo "== $dist"; ls -l "$dist"
