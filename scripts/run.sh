#!/usr/bin/env bash
# make run: build, start controld and workerd on ./var, index a library
# (LIBRARY=… or a generated sample), print the token and URLs, and stop both
# daemons on Ctrl-C. The flags are the same ones deploy/ uses.
set -euo pipefail
cd "$(dirname "$0")/.."

VAR=${VAR:-var}
STATE="$PWD/$VAR/state"
LISTEN=${BINDERY_LISTEN:-127.0.0.1:8080}
mkdir -p "$STATE"

if [ -n "${LIBRARY:-}" ]; then
  LIB=$(realpath "$LIBRARY")
else
  LIB="$PWD/$VAR/sample"
  if [ ! -d "$LIB" ]; then
    echo "run: generating a sample library in $LIB"
    ./bin/bindery-sample --out "$LIB"
  fi
fi
ROOT=$(dirname "$LIB")

export BINDERY_DB="$STATE/bindery.db" BINDERY_STATE_DIR="$STATE" BINDERY_LIBRARY_ROOT="$ROOT" BINDERY_LISTEN="$LISTEN"

pids=()
stop() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT INT TERM

./bin/controld serve >"$VAR/controld.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://$LISTEN/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://$LISTEN/readyz" >/dev/null || { echo "run: controld did not become ready; see $VAR/controld.log"; exit 1; }
./bin/workerd run >"$VAR/workerd.log" 2>&1 &
pids+=($!)

TOKEN=$(cat "$STATE/admin.token")
api() { curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
base="http://$LISTEN/api/v1"

lib_id=$(api "$base/libraries?limit=200" | python3 -c "import json,sys; d=json.load(sys.stdin); print(next((l['id'] for l in d['items'] if l['path']==sys.argv[1]), ''))" "$LIB")
if [ -z "$lib_id" ]; then
  lib_id=$(api -X POST "$base/libraries" -d "{\"name\":\"$(basename "$LIB")\",\"path\":\"$LIB\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
fi
echo "run: library $lib_id at $LIB; requesting a scan"
api -X POST "$base/jobs" -d "{\"kind\":\"scan\",\"library_id\":$lib_id}" >/dev/null

for _ in $(seq 1 600); do
  s=$(api "$base/libraries/$lib_id")
  state=$(printf '%s' "$s" | python3 -c "import json,sys; d=json.load(sys.stdin); ls=d.get('last_scan') or {}; print(ls.get('status',''))")
  [ "$state" = succeeded ] || [ "$state" = failed ] && break
  sleep 0.5
done
echo "run: scan $state: $(api "$base/libraries/$lib_id")"
cat <<MSG

Bindery is running.
  admin API   http://$LISTEN/api/v1   (token: $TOKEN)
  dashboard   http://$LISTEN/
  token file  $STATE/admin.token
  logs        $VAR/controld.log, $VAR/workerd.log
Press Ctrl-C to stop both daemons.
MSG
wait
