#!/bin/bash
# The entry point of the postgres:15-bookworm stand-in that mkbase.sh builds
# from Debian's postgresql-15, for deploy/docker-compose.postgres.yml's
# tests (no registry is reachable). It honours what that compose file uses
# of Docker Hub's postgres image: POSTGRES_PASSWORD (required),
# POSTGRES_USER, POSTGRES_DB and PGDATA; a first start makes the cluster,
# password logins from other containers (scram-sha-256), and the database.
set -euo pipefail

: "${PGDATA:=/var/lib/postgresql/data}"

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "${1:-}" != postgres ]; then
  exec "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set: it is the password of POSTGRES_USER}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  initdb -D "$PGDATA" -U "$user" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 \
    --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") >/dev/null
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -q \
      -c "CREATE DATABASE \"$db\" OWNER \"$user\""
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "postgres-entrypoint: initialized $PGDATA (user $user, database $db)"
fi

shift
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
