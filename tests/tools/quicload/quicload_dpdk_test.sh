#!/usr/bin/env bash
# quicload --backend=dpdk: inside a network namespace this test creates, our
# server (kernel UDP) listens on the kernel side of a TAP that quicload's
# DPDK port (net_tap, iface dpq1) creates; quicload's client shard on the
# EAL worker lcore resolves the server's MAC with ARP (holding its first
# datagrams meanwhile) and downloads 1 MB over h3, byte-checked, then runs
# 100 handshakes, each connection from a source port of its own (20 more
# with --shared-port: one port). The namespace is deleted whatever happens.
# Needs root and no Bazel sandbox (tags).
QUICLOAD=$1
DATAPLANE=$2
source "$(dirname "$0")/../../dataplane/dpdk/netns_lib.sh"
netns_start dpq_quicload

# The server first, on every address of the namespace (the TAP's comes later).
# (ip netns exec, not the in_ns function: $! must be the process itself.)
ip netns exec "$NS" timeout --preserve-status 120 "$DATAPLANE" --listen=0.0.0.0:4433 --cores=1 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
await_log "$WORK/server.log" "SHA-256 fingerprint" "$SERVER_PID" dataplane

# quicload_dpdk NAME [flags...] URL: quicload on DPDK in the background; the
# TAP's kernel side gets its address once quicload created it.
quicload_dpdk() {
  local name=$1
  shift
  ip netns exec "$NS" timeout 90 "$QUICLOAD" --backend=dpdk \
    --eal="--no-huge -m 256 --no-pci --no-shconf --no-telemetry --log-level=lib.eal:error --file-prefix=$PREFIX -l 0-1 --vdev=net_tap0,iface=dpq1" \
    --ip=10.98.0.1/24 --timeout=20 --json="$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1 &
  CLIENT_PID=$!
  PIDS+=("$CLIENT_PID")
  for _ in $(seq 100); do
    in_ns ip link show dpq1 >/dev/null 2>&1 && break
    kill -0 "$CLIENT_PID" 2>/dev/null || fail "quicload ($name) exited at start"
    sleep 0.1
  done
  in_ns ip addr replace 10.98.0.2/24 dev dpq1 || fail "address on dpq1"
  in_ns ip link set dpq1 up || fail "dpq1 up"
  wait "$CLIENT_PID"
  local rc=$?
  [[ $rc -eq 0 ]] || fail "quicload ($name) exited $rc"
}

expect_json() {  # expect_json NAME PYTHON-CONDITION (r: the report)
  python3 - "$WORK/$1.json" "$2" <<'PY' || fail "$1: $2: $(cat "$WORK/$1.json")"
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

quicload_dpdk download --connections=1 --requests=4 --streams=2 "https://10.98.0.2:4433/1000000"
expect_json download 'r["requests_ok"] == 4 and r["bytes_received"] == 4000000'
expect_json download 'r["backend"] == "dpdk" and r["requests_failed"] == 0'
expect_json download 'all(v == 0 for v in r["errors"].values())'

quicload_dpdk handshakes --handshake-only --connections=4 --requests=100 "https://10.98.0.2:4433/"
expect_json handshakes 'r["handshakes"] == 100 and r["handshakes_failed"] == 0'
expect_json handshakes 'r["source_ports"] >= 4'

quicload_dpdk shared --shared-port --handshake-only --connections=4 --requests=20 "https://10.98.0.2:4433/"
expect_json shared 'r["handshakes"] == 20 and r["source_ports"] == 1'

stop_by_signal TERM "$SERVER_PID" dataplane
grep -q "handshakes=121 " "$WORK/server.log" || fail "server totals: $(grep totals "$WORK/server.log")"
echo "quicload DPDK: ok"
