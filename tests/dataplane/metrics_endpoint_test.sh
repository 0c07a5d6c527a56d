#!/usr/bin/env bash
# --metrics end to end on loopback: without the flag the server holds no TCP
# socket; with it, after 3 gtlsclient downloads, GET /metrics answers
# Prometheus text whose handshake counter and handshake-time histogram sum
# to 3 over the shards, every family has HELP and TYPE, other paths get 404
# and other methods 405. Only the processes started here are stopped.
set -uo pipefail
DATAPLANE=$1
source tests/interop/interop_lib.sh

# A TCP port free on 127.0.0.1 right now.
free_tcp_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# tcp_sockets PID: how many TCP sockets (any state) the process holds.
tcp_sockets() {
  python3 - "$1" <<'PY'
import os, sys
pid = sys.argv[1]
inodes = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        with open(table) as f:
            next(f)
            inodes.update(line.split()[9] for line in f)
    except FileNotFoundError:
        pass
held = 0
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        continue
    if target.startswith("socket:[") and target[8:-1] in inodes:
        held += 1
print(held)
PY
}

# check_metrics URL SHARDS HANDSHAKES: the endpoint's answers, judged in
# python; prints what is wrong and fails, or prints nothing.
check_metrics() {
  python3 - "$@" <<'PY'
import re, sys, urllib.error, urllib.request
base, shards, handshakes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
problems = []
with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
    ctype = r.headers.get("Content-Type")
    text = r.read().decode()
if ctype != "text/plain; version=0.0.4":
    problems.append(f"Content-Type {ctype!r}")
families, samples = {}, {}
for line in text.splitlines():
    m = re.match(r"# (HELP|TYPE) (\S+) (.+)$", line)
    if m:
        families.setdefault(m.group(2), {})[m.group(1)] = m.group(3)
        continue
    m = re.match(r'(\w+)\{shard="(\d+)"(?:,le="([^"]+)")?\} (\S+)$', line)
    if not m:
        problems.append(f"unparsed line {line!r}")
        continue
    name, shard, le, value = m.groups()
    samples[(name, int(shard), le)] = float(value)
for name, parts in families.items():
    if set(parts) != {"HELP", "TYPE"}:
        problems.append(f"{name}: {sorted(parts)}")
def total(name, le=None):
    return sum(v for (n, s, l), v in samples.items() if n == name and l == le)
hist = "dpquic_handshake_duration_seconds"
if families.get(hist, {}).get("TYPE") != "histogram":
    problems.append(f"{hist} is not a histogram")
if families.get("dpquic_connections", {}).get("TYPE") != "gauge":
    problems.append("dpquic_connections is not a gauge")
labels = {s for (_, s, _) in samples}
if labels != set(range(shards)):
    problems.append(f"shard labels {sorted(labels)}, expected 0..{shards - 1}")
if total("dpquic_handshakes_total") != handshakes:
    problems.append(f"dpquic_handshakes_total sums to {total('dpquic_handshakes_total')}")
if total(hist + "_count") != handshakes:
    problems.append(f"{hist}_count sums to {total(hist + '_count')}")
if total(hist + "_bucket", "+Inf") != handshakes:
    problems.append(f"{hist}_bucket{{le=+Inf}} sums to {total(hist + '_bucket', '+Inf')}")
if handshakes and not total(hist + "_sum") > 0:
    problems.append(f"{hist}_sum is {total(hist + '_sum')}")
for path, method, want in (("/nope", "GET", 404), ("/metrics", "POST", 405)):
    try:
        urllib.request.urlopen(urllib.request.Request(base + path, method=method,
                                                      data=b"" if method == "POST" else None),
                               timeout=5)
        problems.append(f"{method} {path}: 200")
    except urllib.error.HTTPError as e:
        if e.code != want:
            problems.append(f"{method} {path}: {e.code}, expected {want}")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
}

# Two shards where the machine has them, so the sum over labels matters.
shards=$(($(nproc) >= 2 ? 2 : 1))

# 1. Without --metrics nothing listens on TCP.
start_dataplane "$DATAPLANE"
held=$(tcp_sockets "$SERVER_PID")
[[ $held -eq 0 ]] || fail "without --metrics the server holds $held TCP sockets"
grep -q "metrics on" "$WORK/server.log" && fail "banner names a metrics endpoint without --metrics"
stop_dataplane

# 2. With it: 3 handshakes show in the counters and the histogram.
METRICS_PORT=$(free_tcp_port)
start_dataplane "$DATAPLANE" --cores=$shards --metrics=127.0.0.1:$METRICS_PORT
grep -q "^dataplane: metrics on http://127.0.0.1:$METRICS_PORT/metrics\$" "$WORK/server.log" ||
  fail "no metrics line in the banner"
check_metrics "http://127.0.0.1:$METRICS_PORT" "$shards" 0 >"$WORK/metrics0.log" ||
  fail "before any download: $(cat "$WORK/metrics0.log")"
for size in 1000 20000 300000; do
  gtls_get -- "https://127.0.0.1:$PORT/$size"
  expect_synthetic "$WORK/download/$size" "$size"
done
# Shards publish within ShardCore::kPublishInterval (100 ms) of a change.
for _ in $(seq 1 20); do
  check_metrics "http://127.0.0.1:$METRICS_PORT" "$shards" 3 >"$WORK/metrics.log" && break
  sleep 0.1
done
check_metrics "http://127.0.0.1:$METRICS_PORT" "$shards" 3 >"$WORK/metrics.log" ||
  fail "after 3 downloads: $(cat "$WORK/metrics.log")"
stop_dataplane
[[ $(server_total handshakes) -eq 3 ]] || fail "totals line: $(server_total handshakes) handshakes"

echo "metrics endpoint: ok ($shards shards)"
