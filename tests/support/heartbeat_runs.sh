#!/usr/bin/env bash
# Runs the template's heartbeat plugin in a host until it has beaten three times (its counter on
# /metrics), after check-config accepted the config; then stops the host with SIGTERM, which must
# end it with status 0. Used by tests/sdk_consumer/run.sh and packaging/test-packages.sh.
# usage: heartbeat_runs.sh KUSCIA-HOST PLUGIN.so WORK-DIR
set -euo pipefail
host=${1:?usage: heartbeat_runs.sh KUSCIA-HOST PLUGIN.so WORK-DIR} so=${2:?} work=${3:?}
mkdir -p "$work"
# The loader refuses plugins in group- or world-writable directories.
chmod 0755 "$work" "$(dirname "$so")"
cat >"$work/heartbeat.yaml" <<YAML
admin: { listen: 127.0.0.1:0 }
domains:
  - id: alice
    plugins:
      - name: heartbeat
        path: $so
        config: { intervalMillis: 10 }
YAML
"$host" check-config --config "$work/heartbeat.yaml" >/dev/null
# The log exists before the first read: the background job may not have opened it yet.
: >"$work/err"
"$host" run --config "$work/heartbeat.yaml" 2>"$work/err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
port="" beats=0
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*admin server listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/err")
  [ -n "$port" ] && beats=$( (curl -fsS "http://127.0.0.1:$port/metrics" || true) |
    sed -n 's/^heartbeat_beats_total{plugin="heartbeat",domain="alice"} \([0-9]*\)$/\1/p')
  [ "${beats:-0}" -ge 3 ] && break
  sleep 0.1
done
kill -TERM "$pid"
if ! wait "$pid"; then
  echo "the host did not stop cleanly:" >&2
  cat "$work/err" >&2
  exit 1
fi
trap - EXIT
if [ "${beats:-0}" -lt 3 ]; then
  echo "heartbeat did not beat in $host (${beats:-no} beats):" >&2
  cat "$work/err" >&2
  exit 1
fi
echo "heartbeat beat $beats times in $host"
