#!/bin/bash
# bindery-healthcheck [controld|workerd] [workerd healthcheck flags...]
#
# The container health check of both Bindery services, and a handy probe on
# a systemd host. With no role it finds the daemon running in this process
# namespace. The image has no curl, so controld is probed with bash's
# /dev/tcp: GET /readyz must answer 200 (database reachable, schema current;
# workerd waits for exactly that before it starts). workerd is probed with
# `workerd healthcheck`, which fails when its workers row is stale.
#
# Exit 0 healthy, 1 unhealthy, 64 usage.
set -u

role=${1:-}
[ $# -gt 0 ] && shift

if [ -z "$role" ]; then
  for comm in /proc/[0-9]*/comm; do
    read -r name <"$comm" 2>/dev/null || continue
    case $name in
      controld|workerd) role=$name; break ;;
    esac
  done
fi

# probe_http ADDR PATH: 0 when an HTTP GET of PATH on ADDR answers 200.
probe_http() {
  local addr=$1 path=$2 host port status
  host=${addr%:*}
  port=${addr##*:}
  case $host in
    ''|0.0.0.0|'[::]'|'::') host=127.0.0.1 ;;
    \[*\]) host=${host#[}; host=${host%]} ;;
  esac
  case $port in
    ''|*[!0-9]*) echo "bindery-healthcheck: bad listen address '$addr'" >&2; return 1 ;;
  esac
  # The group's 2>/dev/null hides bash's own message; fd 3 stays open.
  if ! { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
    echo "bindery-healthcheck: controld: nothing listens on $host:$port" >&2
    return 1
  fi
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$host" >&3
  IFS=$' \t\r' read -r -t "${BINDERY_HEALTHCHECK_TIMEOUT:-4}" _ status _ <&3
  exec 3<&-
  if [ "${status:-}" != 200 ]; then
    echo "bindery-healthcheck: controld: GET $path answered ${status:-nothing}" >&2
    return 1
  fi
}

case $role in
  controld) probe_http "${BINDERY_LISTEN:-127.0.0.1:8080}" /readyz ;;
  workerd) exec workerd healthcheck "$@" ;;
  '') echo "bindery-healthcheck: neither controld nor workerd is running" >&2; exit 1 ;;
  *) echo "usage: bindery-healthcheck [controld|workerd] [flags...]" >&2; exit 64 ;;
esac
