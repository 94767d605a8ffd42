#!/usr/bin/env bash
# The whole main job on this machine, from nothing: a placement server on
# SQLite, one tracker-agent cycle against this host (libvirt when a
# hypervisor answers at qemu:///system, otherwise the bare host), the
# provider tree it reported with its usage, and an audit that must say the
# host is in sync. Everything lives in a temporary directory, removed at
# the end (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-env.sh
BIN=$PWD/.venv/bin

work=$(mktemp -d "${TMPDIR:-/tmp}/tracker-demo.XXXXXX")
server_pid=
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "demo: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

port=$("$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
echo "demo: placement-server on $url (SQLite in $work)"
"$BIN/placement-server" --host 127.0.0.1 --port "$port" --auth-strategy noauth2 \
    --sync-db --database-connection "sqlite:///$work/placement.sqlite" \
    >"$work/placement-server.log" 2>&1 &
server_pid=$!
answers() { "$BIN/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$url/" 2>/dev/null; }
for _ in $(seq 1 100); do
    answers && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "demo: placement-server did not start:" >&2; tail -20 "$work/placement-server.log" >&2; exit 1
    fi
    sleep 0.2
done
answers || { echo "demo: placement-server does not answer" >&2; exit 1; }

if "$BIN/python" -c 'import libvirt, sys; libvirt.registerErrorHandler(lambda *a: None, None); libvirt.openReadOnly("qemu:///system")' 2>/dev/null; then
    driver=libvirt
else
    driver=host
fi
echo "demo: discovery driver: $driver"

cat >"$work/tracker.conf" <<CONF
[DEFAULT]
instances_path = $work
[tracker]
state_path = $work/state
driver = $driver
notifications = false
rpc = false
[compute]
provider_config_location = $work/provider_config
[placement]
auth_type = admin_token
token = admin
endpoint = $url
CONF

echo "demo: tracker-agent --once"
"$BIN/tracker-agent" --config-file "$work/tracker.conf" --once
echo "demo: tracker-audit"
"$BIN/tracker-audit" --config-file "$work/tracker.conf"
