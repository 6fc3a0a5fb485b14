#!/usr/bin/env bash
# mkvm.sh MODULES WORKERD OUT — the initramfs of the clock-skew test's virtual
# machine (clockskew_test.go): a workerd that runs under a QEMU guest's own
# wall clock.
#
# OUT/initrd is two concatenated cpio archives (the kernel unpacks them in
# turn):
#  - a base, cached per machine under $BINDERY_VM_CACHE (default
#    /tmp/bindery-vm-cache): busybox, the modules for virtio-net and
#    their dependencies (modules.dep) from MODULES, the kernel's module
#    folder (lib/modules/<version>), the shared libraries workerd and
#    busybox link (ldd; the dynamic loader too, all at the same paths) and
#    init. Its name is a digest of this script,
#    init, the modules, busybox and every library, so it is made again only
#    when one of them changes;
#  - WORKERD as /bin/workerd, made each run (it is the code under test).
# Uncompressed: under software emulation the guest's gunzip of 100 MB of
# libraries costs more than reading them uncompressed.
#
# The guest takes its settings from the kernel command line, which the
# kernel hands to init as environment variables (NAME=value):
# the BINDERY_* that configure workerd (see vminit.sh). It prints
# "bindery-vm: clock <unix seconds>" (its own wall clock) and "bindery-vm:
# network up" on the console before it starts workerd, and powers off when
# workerd exits.
set -euo pipefail

moddir=$1 workerd=$2 out=$3
kver=$(basename "$moddir")
here=$(cd "$(dirname "$0")" && pwd)
busybox=$(command -v busybox)
cache=${BINDERY_VM_CACHE:-/tmp/bindery-vm-cache}

# libs BIN...: the absolute paths of the shared objects BIN... load,
# the dynamic loader included.
libs() {
  ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*[^:]$/ && $2 ~ /^\(/ {print $1}' | sort -u
}

# modules NAME...: NAME's module files (paths under moddir) after those
# they depend on, nothing for a driver built into the kernel.
modules() {
  local name line dep
  for name in "$@"; do
    line=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$moddir/modules.dep" || true)
    [ -n "$line" ] || continue
    for dep in $(echo "${line#*:}" | tr ' ' '\n' | tac); do echo "$dep"; done
    echo "${line%%:*}"
  done | awk '!seen[$0]++'
}

mods=$(modules virtio_pci virtio_net)
mapfile -t shared < <(libs "$workerd" "$busybox")
# What the base is made of: the contents of its files and the paths the
# libraries take (not where this script was called from).
key=$( {
  sha256sum "$here/mkvm.sh" "$here/vminit.sh" "$busybox" "$moddir/modules.dep" | cut -d' ' -f1
  for m in $mods; do sha256sum "$moddir/$m"; done
  sha256sum "${shared[@]}"
} | sha256sum | cut -c1-16)
base=$cache/base-$kver-$key.cpio

if [ ! -s "$base" ]; then
  mkdir -p "$cache"
  root=$(mktemp -d "$cache/root.XXXXXX") tmp=
  trap 'rm -rf "$root" $tmp' EXIT
  mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,srv/library,srv/state,lib/modules}
  cp "$busybox" "$root/bin/busybox"
  for lib in "${shared[@]}"; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  : >"$root/etc/modules"
  for m in $mods; do
    f=$(basename "$m")
    case "$f" in
      *.ko) cp "$moddir/$m" "$root/lib/modules/$f" ;;
      *.ko.xz) xz -dc "$moddir/$m" >"$root/lib/modules/${f%.xz}" ;;
      *.ko.zst) zstd -qdc "$moddir/$m" >"$root/lib/modules/${f%.zst}" ;;
      *.ko.gz) gzip -dc "$moddir/$m" >"$root/lib/modules/${f%.gz}" ;;
    esac
    echo "${f%.ko*}.ko" >>"$root/etc/modules"
  done
  install -m 0755 "$here/vminit.sh" "$root/init"
  # Written aside and renamed: a test binary running this script at the
  # same time reads either no base or a whole one.
  tmp=$(mktemp "$base.XXXXXX")
  (cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$tmp"
  mv "$tmp" "$base"
  rm -rf "$root"
  trap - EXIT
  # Older bases of this machine are stale: keep the cache to one.
  find "$cache" -maxdepth 1 -name 'base-*.cpio' ! -path "$base" -delete
fi

layer=$(mktemp -d)
trap 'rm -rf "$layer"' EXIT
mkdir -p "$layer/bin"
cp "$workerd" "$layer/bin/workerd"
mkdir -p "$out"
{
  cat "$base"
  # The file alone: /bin is the base's.
  (cd "$layer" && echo bin/workerd | "$busybox" cpio -o -H newc 2>/dev/null)
} >"$out/initrd"
