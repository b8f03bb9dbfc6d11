#!/usr/bin/env bash
# Builds the lab's QEMU guest: a Debian kernel and a busybox initramfs whose /init bridges the
# guest's two virtio NICs or bonds them in 802.3ad mode (docs/TESTBED.md, "VM guests"). Everything comes from Debian packages
# through apt (`apt-get download` + `dpkg-deb -x`: the kernel and busybox-static are unpacked into
# the cache, not installed on the host). Nothing is downloaded from anywhere else.
#
#   scripts/guest/build.sh [OUT_DIR]      # default: build/guest in the repository
#
# Output (OUT_DIR): vmlinux (the kernel, uncompressed: QEMU boots it through its PVH entry point,
# which skips the XZ decompression that takes ~40 s under TCG on a loaded 2-core machine),
# initramfs.cpio.gz, and `version` (the kernel and busybox package versions and the /init the
# image was built from). Idempotent: a second run finds `version` up to date and
# only checks. Needs `apt-get download` to reach Debian's archive the first time, and the host
# tools cpio, gzip, kmod (modinfo), which setup.sh installs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$repo/build/guest}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

for tool in apt-get apt-cache dpkg-deb cpio gzip xz file modinfo mknod; do
  command -v "$tool" >/dev/null || { echo "guest/build.sh: $tool not found (make setup installs it)" >&2; exit 1; }
done

# The kernel package behind Debian's linux-image-amd64 metapackage (e.g. linux-image-6.1.0-56-amd64).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
  echo "guest/build.sh: apt-cache knows no linux-image-amd64 dependency (run apt-get update)" >&2
  exit 1
fi
kver_pkg=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')
bver_pkg=$(apt-cache policy busybox-static | awk '/Candidate:/ {print $2}')
# The modules /init loads (bonding: the LACP partner of the LAG interop test, crates/testbed/tests/
# lacp_guest.rs; the lab machine's own kernel has no bonding driver).
modules="virtio_pci virtio_net bridge bonding"
want="kernel=$kpkg $kver_pkg busybox-static=$bver_pkg init=$(sha256sum "$here/init" | cut -c1-16) modules=${modules// /,}"
if [ -f "$out/version" ] && [ "$(cat "$out/version")" = "$want" ] \
  && [ -s "$out/vmlinux" ] && [ -s "$out/initramfs.cpio.gz" ]; then
  echo "guest: up to date ($want)"
  exit 0
fi
echo "guest: building in $out ($want)"

work=$(mktemp -d "$out/.work.XXXXXX")
chmod 777 "$work" # apt-get download hands the file to the _apt user
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -q "$kpkg" busybox-static >/dev/null)
dpkg-deb -x "$work"/linux-image-*.deb "$work/kernel"
dpkg-deb -x "$work"/busybox-static_*.deb "$work/busybox"

kver=$(ls "$work/kernel/lib/modules" | head -1)
moddir="$work/kernel/lib/modules/$kver"
[ -n "$kver" ] && [ -d "$moddir" ] || { echo "guest/build.sh: no modules in $kpkg" >&2; exit 1; }

# The modules the guest needs and, depth first, what they depend on (modinfo -F depends on the
# extracted files), so that loading them in the listed order satisfies every dependency.
find "$moddir/kernel" -name '*.ko*' >"$work/modules.list"
find_mod() { # name -> path of its .ko / .ko.xz / .ko.zst (names use _ or - interchangeably)
  local n=${1//_/[_-]} f
  f=$(grep -E "/${n}\.ko(\.xz|\.zst)?$" "$work/modules.list" | head -1)
  [ -n "$f" ] || { echo "guest/build.sh: module $1 not found in $kpkg" >&2; return 1; }
  echo "$f"
}
order=()
visit() {
  local m=${1//-/_} path dep
  for x in "${order[@]:-}"; do [ "$x" = "$m" ] && return 0; done
  path=$(find_mod "$m") || exit 1
  for dep in $(modinfo -F depends "$path" | tr ',' ' '); do visit "$dep"; done
  order+=("$m")
}
for m in $modules; do visit "$m"; done

root="$work/root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,lib/modules,etc}
# The kernel opens /dev/console for init before anything is mounted.
mknod -m 600 "$root/dev/console" c 5 1
cp "$work/busybox/bin/busybox" "$root/bin/busybox"
for m in "${order[@]}"; do
  src=$(find_mod "$m")
  case "$src" in
    *.ko) cp "$src" "$root/lib/modules/$m.ko" ;;
    *.ko.xz) xz -dc "$src" >"$root/lib/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$src" >"$root/lib/modules/$m.ko" ;;
    *) echo "guest/build.sh: unknown module format $src" >&2; exit 1 ;;
  esac
  echo "$m" >>"$root/lib/modules/order"
done
cp "$here/init" "$root/init"
chmod 755 "$root/init" "$root/bin/busybox"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -9 >"$out/initramfs.cpio.gz.new"
# The bzImage is a decompressor plus an XZ payload (Debian: CONFIG_KERNEL_XZ); the payload is the
# ELF vmlinux with the PVH note (CONFIG_PVH) that QEMU's -kernel boots directly.
bz=$(ls "$work"/kernel/boot/vmlinuz-*)
off=$(grep -abo $'\xfd7zXZ' "$bz" | head -1 | cut -d: -f1)
[ -n "$off" ] || { echo "guest/build.sh: no XZ payload in $bz" >&2; exit 1; }
# xz stops at the end of its stream and complains about the bytes after it: expected.
tail -c +$((off + 1)) "$bz" | xz -dc >"$out/vmlinux.new" 2>/dev/null || true
file -b "$out/vmlinux.new" | grep -q '^ELF 64-bit' || { echo "guest/build.sh: $bz did not unpack to an ELF vmlinux" >&2; exit 1; }
mv "$out/initramfs.cpio.gz.new" "$out/initramfs.cpio.gz"
mv "$out/vmlinux.new" "$out/vmlinux"
echo "$want" >"$out/version"
echo "guest: kernel $kver, modules: ${order[*]}; $(du -h "$out/initramfs.cpio.gz" | cut -f1) initramfs"
