#!/usr/bin/env bash
# The container image's whole filesystem, made from nothing but the binary:
#   scripts/image-rootfs.sh BINARY DIR
# DIR gets the binary as /usr/bin/switchyard, the shared objects it loads (glibc's
# loader, libc, libm, libgcc_s: what `ldd` names, copied from this machine),
# the CA roots, the licences of what was copied, a passwd and group naming the
# one user (65532, "switchyard"), and two directories: /etc/switchyard for the
# configuration (mounted read-only) and /var/lib/switchyard, the working
# directory and the only one that user can write (the SQLite database and the
# record spill go there). Nothing else: no shell, no package manager.
#
# Used by scripts/image.sh (buildah) and by the Containerfile's last stage, so
# both make the same tree. Every file's time is SOURCE_DATE_EPOCH (default: the
# commit's time), so two runs on one commit make the same tree.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BINARY DIR" >&2; exit 2; }
bin=$1 dir=$2
[ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 2; }
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || echo 0)}"
uid=65532

rm -rf "$dir"
mkdir -p "$dir"/usr/bin "$dir"/etc/ssl/certs "$dir"/etc/switchyard "$dir"/var/lib/switchyard \
  "$dir"/usr/share/doc
install -m 0755 "$bin" "$dir/usr/bin/switchyard"

# The shared objects, at the paths the binary's loader looks for them. A static
# (musl) binary would need none; this toolchain has only the glibc target, and
# glibc's resolver (getaddrinfo, used for upstream hosts) is unreliable linked
# statically, so the image carries glibc's own few files instead.
libs=$(ldd "$bin" | awk '/=> \//{print $3} /^\s*\/.*ld-linux/{print $1}' | sort -u)
[ -n "$libs" ] || { echo "$0: ldd found no shared objects for $bin" >&2; exit 1; }
for lib in $libs; do
  mkdir -p "$dir$(dirname "$lib")"
  cp -L "$lib" "$dir$lib"
  chmod 0755 "$dir$lib"
  # The package's copyright file travels with what it shipped (glibc is LGPL).
  pkg=$(dpkg -S "$lib" 2>/dev/null | head -n1 | cut -d: -f1) || true
  if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$dir/usr/share/doc/$pkg"; cp "/usr/share/doc/$pkg/copyright" "$dir/usr/share/doc/$pkg/"
  fi
done
# /lib64 and friends are symlinks on merged-/usr systems: the loader path the
# binary names must exist as named.
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ -z "$interp" ] || [ -e "$dir$interp" ] || { mkdir -p "$dir$(dirname "$interp")"; cp -L "$interp" "$dir$interp"; }

# CA roots for the providers' TLS (rustls-platform-verifier reads this file).
cp -L /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$dir/usr/share/doc/ca-certificates"
cp /usr/share/doc/ca-certificates/copyright "$dir/usr/share/doc/ca-certificates/" 2>/dev/null || true
mkdir -p "$dir/usr/share/doc/switchyard"
cp "$(dirname "$0")/../LICENSE" "$dir/usr/share/doc/switchyard/"

cat > "$dir/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
switchyard:x:$uid:$uid:switchyard:/var/lib/switchyard:/sbin/nologin
EOF
cat > "$dir/etc/group" <<EOF
root:x:0:
switchyard:x:$uid:
EOF
# Names from /etc/hosts first, then DNS (the runtime mounts both files).
echo "hosts: files dns" > "$dir/etc/nsswitch.conf"

chmod 0755 "$dir/etc/switchyard"
chown "$uid:$uid" "$dir/var/lib/switchyard"
chmod 0750 "$dir/var/lib/switchyard"
find "$dir" -exec touch -h -d "@$epoch" {} +
