#!/usr/bin/env bash
# The container image, built with buildah: no Docker daemon, and no base image
# pulled (the image is `scratch` plus what scripts/image-rootfs.sh makes).
#   scripts/image.sh [--binary PATH] [--tag NAME] [--archive FILE]
# --binary: the binary to ship (default: a release build of this tree, with
#   cargo-auditable's dependency list inside when that tool is installed).
# --tag: the image's name (default localhost/switchyard:<version>).
# --archive: also write the image as an OCI archive (for `podman load`,
#   `skopeo copy`, or a registry push from another machine).
# Run as root (buildah's storage is root's here). The image: docs/operations.md,
# "Container image"; the Containerfile builds the same one with Docker or Podman.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="" tag="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--tag NAME] [--archive FILE]" >&2; exit 2 ;;
  esac
done
command -v buildah >/dev/null || { echo "$0: buildah is not installed (apt-get install buildah)" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
commit=$(git rev-parse HEAD 2>/dev/null || echo "${SWITCHYARD_COMMIT:-unknown}")
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
tag=${tag:-localhost/switchyard:$version}
if [ -z "$binary" ]; then
  build=(cargo build)
  command -v cargo-auditable >/dev/null && build=(cargo auditable build)
  "${build[@]}" --release --locked -p switchyard --bin switchyard
  binary=target/release/switchyard
fi

rootfs=$(mktemp -d)
ctr=""
cleanup() { [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true; rm -rf "$rootfs"; }
trap cleanup EXIT
scripts/image-rootfs.sh "$binary" "$rootfs"

ctr=$(buildah from scratch)
mnt=$(buildah mount "$ctr")
cp -a "$rootfs/." "$mnt/"
buildah umount "$ctr" >/dev/null
# The working directory is the data directory: the embedded defaults' relative
# SQLite path and spill file land there, the one place the user can write.
buildah config --os linux --arch amd64 \
  --entrypoint '["/usr/bin/switchyard"]' --cmd '["serve"]' \
  --user 65532:65532 --workingdir /var/lib/switchyard --volume /var/lib/switchyard \
  --env SWITCHYARD_LISTEN_ADDR=0.0.0.0:8080 --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --port 8080/tcp --port 9090/tcp --stop-signal SIGTERM \
  --label org.opencontainers.image.title=switchyard \
  --label org.opencontainers.image.description="A self-hosted LLM gateway" \
  --label org.opencontainers.image.version="$version" \
  --label org.opencontainers.image.revision="$commit" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --created-by "scripts/image.sh" "$ctr"
buildah commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" "$ctr" "$tag" >/dev/null
buildah rm "$ctr" >/dev/null; ctr=""

size=$(du -sb "$rootfs" | cut -f1)
echo "image $tag: $((size / 1024)) KiB uncompressed ($(du -b "$binary" | cut -f1) bytes of it the binary)"
if [ -n "$archive" ]; then
  rm -f "$archive"
  buildah push --quiet "$tag" "oci-archive:$archive:$tag"
  echo "archive $archive: $(($(du -b "$archive" | cut -f1) / 1024)) KiB"
fi
