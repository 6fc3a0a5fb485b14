#!/usr/bin/env bash
# Installs the system packages Bindery builds and tests with, when missing.
# As root it uses apt-get; otherwise it names what to install and fails.
#
#   deps.sh [EXTRA...]          the build's packages plus each EXTRA's
#   deps.sh --only EXTRA...     each EXTRA's packages only
set -euo pipefail

need=()
only=false
if [ "${1:-}" = --only ]; then
  only=true
  shift
fi
$only || {
pkg-config --exists vips 2>/dev/null || need+=(libvips-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists liblzma 2>/dev/null || need+=(liblzma-dev) # 7z's LZMA through cgo (libvips-dev pulls it in too)
command -v vipsthumbnail >/dev/null || need+=(libvips-tools)
command -v 7zz >/dev/null || need+=(7zip)
command -v b3sum >/dev/null || need+=(b3sum)
for tool in jdupes rdfind fdupes; do command -v $tool >/dev/null || need+=($tool); done
command -v bsdtar >/dev/null || need+=(libarchive-tools)
command -v lsar >/dev/null || need+=(unar)
command -v zip >/dev/null || need+=(zip) # split zips for the archive tests (zip -s)
command -v jing >/dev/null || need+=(jing) # the OPDS 1.2 feeds are validated against their RELAX NG schema
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v python3 >/dev/null || need+=(python3) # third-party writer in tests (Python sqlite3)
command -v gcc >/dev/null || need+=(gcc)
command -v ffmpeg >/dev/null || need+=(ffmpeg) # video probes and frames (ffprobe too)
command -v ffmpegthumbnailer >/dev/null || need+=(ffmpegthumbnailer) # the video cover benchmark's baseline
# The PostgreSQL tests start private servers (internal/pgtest), never the
# system's: the package is asked not to create or start one.
compgen -G '/usr/lib/postgresql/1[5-9]/bin/postgres' >/dev/null || need+=(postgresql)
command -v ip >/dev/null || need+=(iproute2) # the scale-out test's hosts are network namespaces
}
# The clock-skew test's hosts are virtual machines (internal/chaos/vm_test.go)
# booting Debian's cloud kernel, unpacked into a folder of their own:
# installing it would make this machine's initramfs, minutes of work.
vm_kernel_dir=${BINDERY_VM_KERNEL_DIR:-/var/cache/bindery/vm-kernel}
kernel=false
for extra in "$@"; do
  case "$extra" in
    chromium) command -v chromium >/dev/null || need+=(chromium) ;;
    systemd) command -v systemd-analyze >/dev/null || need+=(systemd) ;;
    compose) command -v docker-compose >/dev/null || need+=(docker-compose) ;;
    # The container tests build their base images (deploy/testdata/mkbase.sh).
    docker) command -v debootstrap >/dev/null || need+=(debootstrap) ;;
    vm)
      command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
      command -v busybox >/dev/null || need+=(busybox-static)
      command -v depmod >/dev/null || need+=(kmod)
      compgen -G "$vm_kernel_dir/boot/vmlinuz-*" >/dev/null || kernel=true
      ;;
  esac
done

[ ${#need[@]} -eq 0 ] && ! $kernel && exit 0

if [ "$(id -u)" -ne 0 ]; then
  [ ${#need[@]} -eq 0 ] || echo "bindery: missing system packages: ${need[*]}" >&2
  [ ${#need[@]} -eq 0 ] || echo "bindery: install them with: sudo apt-get install -y ${need[*]}" >&2
  $kernel && echo "bindery: no kernel for the test VMs in $vm_kernel_dir: run sudo scripts/deps.sh vm" >&2
  exit 1
fi
[ ${#need[@]} -eq 0 ] || echo "bindery: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if [[ " ${need[*]} " == *" postgresql "* ]]; then
  mkdir -p /etc/postgresql-common/createcluster.d
  echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/bindery.conf
fi
apt-get update -qq >/dev/null
[ ${#need[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

# unpack_kernel DIR: the kernel Debian's linux-image-cloud-amd64 depends on,
# with its modules and their modules.dep, under DIR/boot and DIR/lib/modules.
unpack_kernel() {
  local dir=$1 pkg tmp kver
  pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$pkg" ] || { echo "bindery: no kernel package behind linux-image-cloud-amd64" >&2; return 1; }
  echo "bindery: unpacking $pkg into $dir" >&2
  tmp=$(mktemp -d)
  chmod 0755 "$tmp" # apt downloads as its own user
  (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null)
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  kver=$(basename "$tmp"/root/boot/vmlinuz-*)
  kver=${kver#vmlinuz-}
  depmod -b "$tmp/root" "$kver"
  mkdir -p "$dir"
  rm -rf "$dir/boot" "$dir/lib"
  mv "$tmp/root/boot" "$tmp/root/lib" "$dir/"
  rm -rf "$tmp"
}
if $kernel; then
  unpack_kernel "$vm_kernel_dir"
fi
