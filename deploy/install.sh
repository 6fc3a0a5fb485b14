#!/usr/bin/env bash
# Installs Bindery for systemd: both binaries, the health-check helper, the
# units and bindery.target, the environment file, the dedicated user and
# the state directory.
#
#   make build && sudo deploy/install.sh          # then: systemctl enable --now bindery.target
#   DESTDIR=/tmp/pkg deploy/install.sh            # staged, unprivileged (packaging, tests)
#
# Variables (default):
#   DESTDIR       staging root; when set, no user is created and nothing is chowned ("")
#   PREFIX        /usr/local; BINDIR ($PREFIX/bin), DOCDIR ($PREFIX/share/doc/bindery)
#   SYSCONFDIR    /etc; the environment file is $SYSCONFDIR/bindery/bindery.env
#   UNITDIR       /etc/systemd/system
#   STATEDIR      /var/lib/bindery: database, -wal/-shm, covers, admin token (LOCAL disk)
#   LIBRARY_ROOT  /srv/library: the library root, read-only for both daemons
#   BINDERY_USER / BINDERY_GROUP   bindery / bindery
#   BIN_SRC       folder holding the built controld and workerd (<repo>/bin)
#
# Paths in the units and the example environment file are rewritten to the
# values above. An existing $SYSCONFDIR/bindery/bindery.env is never
# overwritten; the new example is installed beside it as bindery.env.example.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
DOCDIR=${DOCDIR:-$PREFIX/share/doc/bindery}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-/etc/systemd/system}
STATEDIR=${STATEDIR:-/var/lib/bindery}
LIBRARY_ROOT=${LIBRARY_ROOT:-/srv/library}
BINDERY_USER=${BINDERY_USER:-bindery}
BINDERY_GROUP=${BINDERY_GROUP:-$BINDERY_USER}
BIN_SRC=${BIN_SRC:-$repo/bin}

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

# Unit files take paths without quoting here: refuse what would break them.
for var in PREFIX BINDIR DOCDIR SYSCONFDIR UNITDIR STATEDIR LIBRARY_ROOT; do
  val=${!var}
  case $val in
    /*) ;;
    *) die "$var must be an absolute path, got '$val'" ;;
  esac
  case $val in
    *[[:space:]\|\\\"\'\$%]*) die "$var must not contain spaces, quotes, |, \\, \$ or %: '$val'" ;;
  esac
done
case $BINDERY_USER$BINDERY_GROUP in
  *[!a-z0-9_-]*|'') die "BINDERY_USER/BINDERY_GROUP must be lowercase names, got '$BINDERY_USER/$BINDERY_GROUP'" ;;
esac
for b in controld workerd; do
  [ -x "$BIN_SRC/$b" ] || die "$BIN_SRC/$b not found or not executable: run 'make build' first (or set BIN_SRC)"
done

# system: a real install on this machine (root, no staging) that may create
# the user, chown the state directory and reload systemd.
system=0
if [ -z "$DESTDIR" ] && [ "$(id -u)" -eq 0 ]; then system=1; fi

envdir=$SYSCONFDIR/bindery

# render SRC DST MODE: copy SRC to DESTDIR/DST with the shipped default paths
# replaced by the configured ones. Two passes through placeholders, so that
# one replacement can never rewrite another's result.
render() {
  local src=$1 dst=$DESTDIR$2 mode=$3 tmp
  tmp=$(mktemp)
  sed -e 's|/usr/local/bin/|@BINDIR@/|g' \
      -e 's|/usr/local/share/doc/bindery|@DOCDIR@|g' \
      -e 's|/etc/bindery/bindery\.env|@ENVDIR@/bindery.env|g' \
      -e 's|/var/lib/bindery|@STATEDIR@|g' \
      -e 's|/srv/library|@LIBRARY_ROOT@|g' \
      -e 's|^User=bindery$|User=@USER@|' \
      -e 's|^Group=bindery$|Group=@GROUP@|' \
      "$src" |
  sed -e "s|@BINDIR@|$BINDIR|g" \
      -e "s|@DOCDIR@|$DOCDIR|g" \
      -e "s|@ENVDIR@|$envdir|g" \
      -e "s|@STATEDIR@|$STATEDIR|g" \
      -e "s|@LIBRARY_ROOT@|$LIBRARY_ROOT|g" \
      -e "s|@USER@|$BINDERY_USER|g" \
      -e "s|@GROUP@|$BINDERY_GROUP|g" >"$tmp"
  install -D -m "$mode" "$tmp" "$dst"
  rm -f "$tmp"
}

say "binaries -> $DESTDIR$BINDIR"
install -d -m 0755 "$DESTDIR$BINDIR"
install -m 0755 "$BIN_SRC/controld" "$BIN_SRC/workerd" "$DESTDIR$BINDIR/"
install -m 0755 "$here/healthcheck.sh" "$DESTDIR$BINDIR/bindery-healthcheck"

if [ -f "$repo/docs/OPERATIONS.md" ]; then
  install -D -m 0644 "$repo/docs/OPERATIONS.md" "$DESTDIR$DOCDIR/OPERATIONS.md"
fi

say "units -> $DESTDIR$UNITDIR"
for unit in bindery-controld.service bindery-workerd.service bindery.target; do
  render "$here/systemd/$unit" "$UNITDIR/$unit" 0644
done

say "environment -> $DESTDIR$envdir"
install -d -m 0755 "$DESTDIR$envdir"
render "$here/systemd/bindery.env.example" "$envdir/bindery.env.example" 0644
if [ -e "$DESTDIR$envdir/bindery.env" ]; then
  say "kept existing $DESTDIR$envdir/bindery.env (compare with bindery.env.example)"
else
  render "$here/systemd/bindery.env.example" "$envdir/bindery.env" 0640
fi

if [ "$system" -eq 1 ]; then
  if ! getent group "$BINDERY_GROUP" >/dev/null; then
    say "creating group $BINDERY_GROUP"
    groupadd --system "$BINDERY_GROUP"
  fi
  if ! getent passwd "$BINDERY_USER" >/dev/null; then
    say "creating user $BINDERY_USER"
    useradd --system --gid "$BINDERY_GROUP" --home-dir "$STATEDIR" --no-create-home \
            --shell /usr/sbin/nologin --comment "Bindery comic indexer" "$BINDERY_USER"
  fi
fi

say "state directory -> $DESTDIR$STATEDIR"
install -d -m 0750 "$DESTDIR$STATEDIR"

if [ "$system" -eq 1 ]; then
  chown "$BINDERY_USER:$BINDERY_GROUP" "$STATEDIR"
  chown "root:$BINDERY_GROUP" "$envdir/bindery.env"
  [ -d "$LIBRARY_ROOT" ] || say "warning: library root $LIBRARY_ROOT does not exist yet"
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
  fi
  say "done. Edit $envdir/bindery.env, then: systemctl enable --now bindery.target"
else
  say "staged install done (no user created, nothing chowned): $DESTDIR"
fi
