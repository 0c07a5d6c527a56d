#!/usr/bin/env bash
# //tests/interop:browser_dpdk_test: headless Chromium against our server on
# the DPDK backend. Inside a network namespace this test creates, the
# dataplane runs on a net_tap port (dpq0, engine address 10.99.0.1) and the
# kernel side of the TAP gets 10.99.0.2; Chromium, started once in the same
# namespace, loads the page with 100 sub-resources and fetches 20 MB
# byte-exact from https://10.99.0.1:4433 over h3. Then SIGINT must stop the
# server cleanly, and its qlog must show no connection ended with an error.
# The namespace is deleted and every process this test started is stopped
# (by PID) whatever happens. Needs root and no Bazel sandbox (tags).
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 DATAPLANE NETNS_LIB BROWSER_CHECK_PY" >&2; exit 2; }
DATAPLANE=$1
DRIVER=$3
ADDRESS=10.99.0.1
ORIGIN="https://$ADDRESS:4433"
command -v chromium >/dev/null || { echo "FAIL: chromium missing: run tools/setup.sh"; exit 1; }
source "$2"
netns_start dpq_browser

# The driver holds Chromium; SIGTERM lets it close Chromium (its process
# group) before netns_cleanup kills what is left by PID and deletes the
# namespace. Errors must not cut the cleanup short.
CHECKS_PID=""
cleanup() {
  set +e
  if [[ -n $CHECKS_PID ]] && kill -0 "$CHECKS_PID" 2>/dev/null; then
    kill -TERM "$CHECKS_PID"
    for _ in $(seq 100); do kill -0 "$CHECKS_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  netns_cleanup
}
trap cleanup EXIT

# The site and a certificate whose SAN is the engine's address.
SPKI=$(/usr/bin/python3 "$DRIVER" prepare --out="$WORK/site" --address="$ADDRESS") ||
  fail "browser_check.py prepare"
mkdir "$WORK/qlog"

# -l 0-1: the main lcore supervises, lcore 1 runs the one shard.
# (ip netns exec execs: $! is the dataplane itself, which the trap kills.)
ip netns exec "$NS" "$DATAPLANE" --backend=dpdk \
  --eal="--no-huge -m 512 --no-pci --no-shconf --no-telemetry --file-prefix=$PREFIX -l 0-1 --vdev=net_tap0,iface=dpq0" \
  --ip="$ADDRESS/24" --listen=0.0.0.0:4433 --root="$WORK/site/root" \
  --cert="$WORK/site/cert.pem" --key="$WORK/site/key.pem" --qlog-dir="$WORK/qlog" \
  --drain-timeout=5 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
await_log "$WORK/server.log" "certificate" "$SERVER_PID" dataplane
grep -q "DPDK poll mode" "$WORK/server.log" || fail "no DPDK banner"
in_ns ip addr add 10.99.0.2/24 dev dpq0 || fail "address on dpq0"
in_ns ip link set dpq0 up || fail "dpq0 up"

# Chromium in the namespace, bounded: the driver stops by itself well
# before; timeout relays a SIGTERM from the trap to it. (ip netns exec
# execs: $! is timeout itself.)
ip netns exec "$NS" timeout -k 10 200 /usr/bin/python3 "$DRIVER" checks --origin="$ORIGIN" --spki="$SPKI" \
  --only=subresources,download &
CHECKS_PID=$!
checks_rc=0
wait "$CHECKS_PID" || checks_rc=$?
CHECKS_PID=""

# SIGINT: the server drains (nothing is in flight by now, and the drain is
# bounded by --drain-timeout anyway) and exits 0 within 10 s.
kill -INT "$SERVER_PID"
for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && fail "dataplane did not stop within 10 s of SIGINT"
server_rc=0
wait "$SERVER_PID" || server_rc=$?
if [[ $server_rc -eq 0 ]]; then
  echo "PASS dataplane stop: exit 0 on SIGINT"
else
  echo "FAIL dataplane stop: exit $server_rc on SIGINT, expected 0"
fi
qlog_rc=0
/usr/bin/python3 "$DRIVER" qlog "$WORK/qlog" || qlog_rc=$?

if [[ $checks_rc -ne 0 || $server_rc -ne 0 || $qlog_rc -ne 0 ]]; then
  fail "browser over DPDK: see the FAIL lines above"
fi
echo "browser over DPDK: ok"
