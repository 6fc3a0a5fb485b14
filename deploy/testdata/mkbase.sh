#!/usr/bin/env bash
# mkbase.sh [debian|golang|postgres|systemd]... — the base images the deploy tests need,
# made on this machine because no container registry is reachable.
#
#   debian:bookworm-slim   a `debootstrap --variant=minbase bookworm` rootfs
#                          with the packages deploy/Dockerfile's runtime
#                          stage installs already installed (see below).
#   golang:1.26-bookworm   that rootfs plus the host's Go toolchain
#                          (/usr/local/go), gcc, pkg-config and libvips-dev,
#                          with its module cache and build cache warmed by one
#                          build of this tree (see below).
#   postgres:15-bookworm   the debian image plus Debian's postgresql-15 and
#                          an entry point honouring the variables of Docker
#                          Hub's postgres image that docker-compose.postgres.yml
#                          sets (testdata/postgres-entrypoint.sh).
#   bindery-test/systemd:bookworm
#                          a minbase rootfs with systemd as PID 1 and the
#                          daemons' runtime libraries, for the systemd test.
#
# The names are exactly those deploy/Dockerfile's FROM lines give, so the
# shipped Dockerfile builds unchanged. Two stand-ins differ from Docker Hub's:
#  - The golang image carries a warm module cache and build cache. Without
#    them every test build compiles go-sqlite3 and the libvips binding from
#    scratch (minutes on two cores) and downloads every module through a
#    proxy whose TLS a container may not trust. The Dockerfile still runs
#    `go mod download` and `go build`; they just find their work done.
#  - The debian image already holds the runtime stage's packages (read off
#    deploy/Dockerfile; editing that list rebuilds it). The Dockerfile still
#    runs `apt-get update && apt-get install`, which checks every name and
#    finds it installed: without this, each test build unpacks libvips and
#    ffmpeg (over 300 packages) over fuse-overlayfs while the rest of make
#    test runs, and two such builds at once passed 15 minutes on two cores.
#  - Every image trusts the host's locally added CAs
#    (/usr/local/share/ca-certificates), so a proxying network works inside.
# Images are labelled org.bindery.testbase=<fingerprint> and skipped when one
# with the current fingerprint exists: a digest of the shell functions that
# make the image, and for golang of the Go version and go.sum, so editing
# one image's recipe rebuilds that image only.
#
# Needs root (debootstrap), docker and network access to deb.debian.org.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
release=bookworm
mirror=${BINDERY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
goroot=${BINDERY_GOROOT:-$(go env GOROOT)}
gover=$(sed -n 's/^go\([0-9]*\.[0-9]*\).*/\1/p' "$goroot/VERSION" | head -1)
label=org.bindery.testbase
fingerprint=
work=$(mktemp -d /tmp/bindery-mkbase.XXXXXX)
mounted=
# A proc mounted in a rootfs (in_root) goes first, and rm never leaves this
# filesystem.
trap '[ -z "$mounted" ] || umount -l "$mounted"; rm -rf --one-file-system "$work"' EXIT

log() { echo "mkbase: $(date +%T) $*" >&2; }

# Packages go in with apt, in the rootfs (in_root) or a container.
apt='export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq --no-install-recommends'
apt_clean='rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb'


# fresh IMAGE: 0 when IMAGE exists with this script's fingerprint.
fresh() {
  [ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$1" 2>/dev/null)" = "$fingerprint" ]
}

# rootfs DIR [PACKAGES]: a minbase rootfs in DIR trusting the host's CAs.
rootfs() {
  local dir=$1 include=${2:-}
  log "debootstrap $release into $dir${include:+ (+$include)}"
  debootstrap --variant=minbase ${include:+--include="$include"} "$release" "$dir" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; return 1; }
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$dir/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
    if [ -x "$dir/usr/sbin/update-ca-certificates" ]; then
      chroot "$dir" update-ca-certificates >/dev/null 2>&1 || true
    fi
  fi
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
  slim "$dir"
}

# slim DIR: what Docker Hub's -slim images leave out, now and for every
# later apt-get install: documentation, manuals and translations. Besides
# size, every file counts: the classic builder commits each Dockerfile step
# by walking the whole tree over fuse-overlayfs (measured: 3 s a step on
# 13,000 files, 12 s on 54,000).
slim() {
  local dir=$1
  mkdir -p "$dir/etc/dpkg/dpkg.cfg.d"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' \
    >"$dir/etc/dpkg/dpkg.cfg.d/bindery-slim"
  # As in Docker Hub's Debian images: no fsync per unpacked file, which
  # over fuse-overlayfs made a container's apt-get install crawl.
  echo force-unsafe-io >"$dir/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  find "$dir/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
  rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/* "$dir"/usr/share/lintian/*
}

# import DIR IMAGE [CHANGES...]: DIR as IMAGE, labelled.
import() {
  local dir=$1 image=$2
  shift 2
  local changes=(--change "LABEL $label=$fingerprint")
  for c in "$@"; do changes+=(--change "$c"); done
  tar -C "$dir" -c . | docker import "${changes[@]}" - "$image" >/dev/null
  log "imported $image"
}

# runtime_packages: what deploy/Dockerfile's runtime stage installs (the
# apt-get install line after `FROM debian`), one per line.
runtime_packages() {
  awk '/^FROM debian/ { rt = 1 } rt && /apt-get install/ {
    for (i = 1; i <= NF; i++) if ($i !~ /^(-|&&|\\|apt-get|install)/) print $i
    exit }' "$repo/deploy/Dockerfile"
}

# in_root DIR SCRIPT: SCRIPT run by bash as root inside the rootfs DIR
# (chroot, with its own /proc and this machine's DNS). Packages and the Go
# caches go in this way, on this machine's filesystem: the same apt-get and
# go build inside a container wrote through fuse-overlayfs and were then
# committed, and took 14 minutes for the golang image under make test.
# (debootstrap --include cannot configure a set as large as libvips-dev's.)
in_root() {
  local dir=$1 script=$2 rc=0
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" # start no service
  chmod 0755 "$dir/usr/sbin/policy-rc.d"
  mount -t proc proc "$dir/proc"
  mounted=$dir/proc
  chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -ec "$script" >&2 || rc=$?
  umount "$dir/proc"
  mounted=
  rm -f "$dir/usr/sbin/policy-rc.d"
  : >"$dir/etc/resolv.conf" # Docker writes a container's own
  return $rc
}

debian_image() {
  local image="debian:$release-slim" pkgs dir="$work/debian"
  fresh "$image" && return 0
  pkgs=$(runtime_packages | tr '\n' ' ')
  [ -n "$pkgs" ] || { log "no apt-get install line in deploy/Dockerfile's runtime stage"; return 1; }
  rootfs "$dir"
  log "installing the runtime stage's packages into $image: $pkgs"
  in_root "$dir" "$apt $pkgs; $apt_clean"
  import "$dir" "$image" 'CMD ["bash"]'
  rm -rf "$dir"
}

golang_image() {
  local image="golang:$gover-$release" dir="$work/golang"
  fresh "$image" && return 0
  rootfs "$dir" ca-certificates
  cp -a "$goroot" "$dir/usr/local/go"
  # Go's own test suite and the standard library's test data: no build
  # reads them, and they are a third of the toolchain's files.
  rm -rf "$dir/usr/local/go/test"
  find "$dir/usr/local/go/src" -type d -name testdata -prune -exec rm -rf {} +
  mkdir -p "$dir/go/bin" "$dir/go/src"

  # Warm the caches with the Dockerfile's own commands, modules served from
  # the host's module cache (made complete first) instead of the network.
  (cd "$repo" && go mod download)
  mkdir -p "$dir/src"
  cp -a "$(go env GOMODCACHE)/cache/download" "$dir/goproxy"
  cp -r "$repo/go.mod" "$repo/go.sum" "$repo/cmd" "$repo/internal" "$repo/protocol" "$repo/migrations" "$dir/src/"
  local ldflags='-s -w -X github.com/bindery-nas/bindery/internal/version.Version=warmup'
  log "warming the module and build caches of $image (one full build)"
  in_root "$dir" "
    $apt gcc libc6-dev pkg-config libvips-dev
    export GOPATH=/go GOTOOLCHAIN=local GOPROXY=file:///goproxy GOSUMDB=off CGO_ENABLED=1
    cd /src && go mod download
    go build -trimpath -buildvcs=false -ldflags '$ldflags' -o /tmp/out/ ./cmd/controld ./cmd/workerd
    cd / && rm -rf /src /goproxy /tmp/out && $apt_clean"
  import "$dir" "$image" 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV GOPATH=/go' 'ENV GOTOOLCHAIN=local' 'WORKDIR /go' 'CMD ["bash"]'
  rm -rf "$dir"
}

postgres_image() {
  local image="postgres:15-$release" base="debian:$release-slim"
  fresh "$image" && return 0
  docker image inspect "$base" >/dev/null 2>&1 || { log "$image is built on $base: run mkbase.sh debian first"; return 1; }
  docker rm -f bindery-mkbase-postgres >/dev/null 2>&1 || true
  # No cluster at install time: the entry point makes it in the volume.
  docker run --name bindery-mkbase-postgres --label "$label=warm" \
    -v "$here/postgres-entrypoint.sh:/tmp/entrypoint.sh:ro" "$base" bash -ec "
    mkdir -p /etc/postgresql-common/createcluster.d
    echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/bindery.conf
    $apt postgresql-15
    install -m 0755 /tmp/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
    $apt_clean" >&2
  docker commit --change "LABEL $label=$fingerprint" \
    --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV PGDATA=/var/lib/postgresql/data' --change 'VOLUME /var/lib/postgresql/data' \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["postgres"]' \
    --change 'EXPOSE 5432' \
    bindery-mkbase-postgres "$image" >/dev/null
  docker rm -f bindery-mkbase-postgres >/dev/null
  log "committed $image"
}

systemd_image() {
  local image="bindery-test/systemd:$release"
  fresh "$image" && return 0
  rootfs "$work/systemd" ca-certificates
  import "$work/systemd" "$image-cold"
  rm -rf "$work/systemd"
  docker rm -f bindery-mkbase-systemd >/dev/null 2>&1 || true
  # No getty or udev fighting the host inside a container.
  docker run --name bindery-mkbase-systemd --label "$label=warm" "$image-cold" bash -ec "
    $apt systemd systemd-sysv dbus libvips42 sqlite3 curl procps
    systemctl mask getty@tty1.service serial-getty@console.service \
      systemd-udevd.service systemd-udev-trigger.service systemd-logind.service >/dev/null
    $apt_clean" >&2
  docker commit --change "LABEL $label=$fingerprint" --change 'CMD ["/sbin/init"]' \
    bindery-mkbase-systemd "$image" >/dev/null
  docker rm -f bindery-mkbase-systemd >/dev/null
  docker rmi "$image-cold" >/dev/null
  log "committed $image"
}

[ "$(id -u)" -eq 0 ] || { log "needs root (debootstrap)"; exit 1; }
command -v debootstrap >/dev/null || { log "needs debootstrap (scripts/deps.sh docker)"; exit 1; }
[ $# -gt 0 ] || set -- debian golang postgres systemd
# fingerprint_of FUNCTION [FILE...]: the digest naming one image's recipe.
fingerprint_of() {
  local fn=$1
  shift
  { declare -f "$fn" rootfs slim import in_root; echo "$apt $apt_clean $release"; cat "$@"; } | sha256sum | cut -c1-16
}

for what in "$@"; do
  # One build of an image at a time, a lock per image: make test builds all
  # three in the background while the deploy tests ask for the ones they
  # need, and a test waiting for debian and golang must not also wait for
  # the systemd image built after them (a shared lock made it: five minutes
  # under make test's load).
  exec 9>"/tmp/bindery-mkbase-$what.lock"
  flock 9
  case $what in
    golang) fingerprint=$(fingerprint_of golang_image "$goroot/VERSION" "$repo/go.sum") ;;
    debian) fingerprint=$(runtime_packages | fingerprint_of debian_image) ;;
    postgres) fingerprint=$(fingerprint_of postgres_image "$here/postgres-entrypoint.sh") ;;
    *) fingerprint=$(fingerprint_of "${what}_image" 2>/dev/null) ;;
  esac
  case $what in
    debian) debian_image ;;
    golang) golang_image ;;
    postgres) postgres_image ;;
    systemd) systemd_image ;;
    *) log "unknown image '$what' (debian, golang, postgres, systemd)"; exit 64 ;;
  esac
  exec 9>&-
done
