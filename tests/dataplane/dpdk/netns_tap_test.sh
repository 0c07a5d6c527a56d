#!/usr/bin/env bash
# The DPDK backend through the kernel: inside a network namespace this test
# creates, the dataplane runs on a net_tap port (dpq0) with its own
# addresses; the kernel side of the TAP gets a neighbour address. Then:
# ping (v4 and v6) answers from the engine, gtlsclient downloads 10 MB over
# h3 byte-exact (v4, then v6), dpdk-telemetry.py reads /dpquic/stats and
# /dpquic/shards, and SIGINT stops the server cleanly. The namespace is
# deleted whatever happens. Needs root and no Bazel sandbox (tags).
DATAPLANE=$1
source "$(dirname "$0")/netns_lib.sh"
netns_start dpq_test

# -l 0-1: the main lcore supervises, lcore 1 runs the one shard.
# (ip netns exec execs: $! is the dataplane itself, which the trap kills.)
ip netns exec "$NS" "$DATAPLANE" --backend=dpdk \
  --eal="--no-huge -m 256 --no-pci --no-shconf --file-prefix=$PREFIX -l 0-1 --vdev=net_tap0,iface=dpq0" \
  --ip=10.99.0.1/24 --ip6=fd00:99::1/64 --listen=0.0.0.0:4433 --metrics=127.0.0.1:9100 \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
await_log "$WORK/server.log" "certificate" "$SERVER_PID" dataplane
grep -q "DPDK poll mode" "$WORK/server.log" || fail "no DPDK banner"
grep -q "metrics on http://127.0.0.1:9100/metrics" "$WORK/server.log" || fail "no metrics banner"
in_ns ip link show dpq0 >/dev/null || fail "no dpq0 in the namespace"
in_ns ip addr add 10.99.0.2/24 dev dpq0 || fail "address v4"
in_ns ip -6 addr add fd00:99::2/64 dev dpq0 nodad || fail "address v6"
in_ns ip link set dpq0 up || fail "dpq0 up"

in_ns ping -c 3 -i 0.2 -W 2 10.99.0.1 >"$WORK/ping.log" 2>&1 || fail "ping 10.99.0.1"
grep -q "3 received" "$WORK/ping.log" || fail "ping: not every echo answered"
in_ns ping -6 -c 3 -i 0.2 -W 2 fd00:99::1 >"$WORK/ping6.log" 2>&1 || fail "ping -6 fd00:99::1"
grep -q "3 received" "$WORK/ping6.log" || fail "ping -6: not every echo answered"

expect_synthetic() {
  python3 - "$1" "$2" <<'PY' || fail "$1 is not the $2 synthetic bytes"
import sys
alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
path, n = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
expected = (alphabet * (n // 64 + 1))[:n]
if data != expected:
    print(f"{path}: {len(data)} bytes, expected the {n} synthetic bytes")
    sys.exit(1)
PY
}
download() {  # download HOST URLHOST DIR
  mkdir -p "$WORK/$3"
  in_ns timeout 60 gtlsclient --quiet --exit-on-all-streams-close --download="$WORK/$3" \
    "$1" 4433 "https://$2:4433/10000000" >>"$WORK/gtlsclient.log" 2>&1 ||
    fail "gtlsclient $1 exited $?"
  expect_synthetic "$WORK/$3/10000000" 10000000
}
download 10.99.0.1 10.99.0.1 v4
download fd00:99::1 "[fd00:99::1]" v6

# Telemetry over the EAL's socket, as an operator would read it.
stats=$(printf '/dpquic/stats\n/dpquic/shards\n' |
  in_ns timeout 10 dpdk-telemetry.py -f "$PREFIX" 2>&1) || fail "dpdk-telemetry.py: $stats"
python3 - "$stats" <<'PY' || fail "telemetry: $stats"
import json, sys
text = sys.argv[1]
# The tool prints the connect banner then one JSON object per command.
objects, decoder, i = [], json.JSONDecoder(), 0
while True:
    start = text.find("{", i)
    if start < 0:
        break
    obj, end = decoder.raw_decode(text, start)
    objects.append(obj)
    i = end
stats = next(o["/dpquic/stats"] for o in objects if "/dpquic/stats" in o)
shards = next(o["/dpquic/shards"] for o in objects if "/dpquic/shards" in o)
assert stats["handshakes"] == 2, stats
assert stats["bytes_out"] > 20_000_000, stats
assert stats["shards"] == 1, stats
assert shards["0"]["handshakes"] == 2, shards
PY

# The same counters, and the handshake histogram, over --metrics (its
# HTTP server listens on the namespace's loopback, off the DPDK port).
metrics=$(in_ns python3 -c '
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:9100/metrics", timeout=5).read().decode())
' 2>&1) || fail "GET /metrics: $metrics"
grep -qx 'dpquic_handshakes_total{shard="0"} 2' <<<"$metrics" || fail "metrics: $metrics"
grep -qx 'dpquic_handshake_duration_seconds_count{shard="0"} 2' <<<"$metrics" ||
  fail "metrics: $metrics"
# The shard's loop time (DPDK only): the downloads kept it busy part of the
# time, never more than all of it.
python3 - "$metrics" <<'PY' || fail "loop time: $(grep dpquic_dpdk_ <<<"$metrics")"
import re, sys
def value(name):
    match = re.search(r'^%s\{shard="0"\} (\S+)$' % name, sys.argv[1], re.MULTILINE)
    return float(match.group(1)) if match else None
busy = value("dpquic_dpdk_busy_seconds_total")
poll = value("dpquic_dpdk_poll_seconds_total")
assert busy is not None and poll is not None and 0 < busy < poll, (busy, poll)
PY

stop_by_signal INT "$SERVER_PID" dataplane
grep -q "dataplane: stopped" "$WORK/server.log" || fail "no clean stop"
grep -q "handshakes=2 " "$WORK/server.log" || fail "totals line: $(grep totals "$WORK/server.log")"
echo "DPDK netns/tap: ok"
