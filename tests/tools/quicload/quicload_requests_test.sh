#!/usr/bin/env bash
# quicload's request modes against our server: h3 with several streams over
# several connections (exact counts and bytes), URLs cycled, two cores,
# IPv6, a timed run, and perf downloads with uploads.
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

start_dataplane "$DATAPLANE" --listen=127.0.0.1:$PORT --listen=[::1]:$PORT

# 4 connections x 8 streams, 400 requests of 100 kB: every body length- and
# content-checked against the synthetic bytes.
run_quicload h3 0 --connections=4 --streams=8 --requests=400 "https://127.0.0.1:$PORT/100000"
expect_json h3 requests_ok 400
expect_json h3 requests_failed 0
expect_json h3 bytes_received 40000000
expect_json h3 handshakes 4
expect_json h3 connections 4
expect_json h3 streams 8
expect_no_errors h3
grep -q "^  requests       400 ok, 0 failed" "$WORK/h3.log" || fail "h3: no human report"
python3 - "$WORK/h3.json" <<'PY' || fail "h3: latency figures"
import json, sys
r = json.load(open(sys.argv[1]))
assert 0 < r["latency_p50_ms"] <= r["latency_p99_ms"] <= r["latency_max_ms"], r
assert r["duration_sec"] > 0 and r["goodput_gbps"] > 0, r
for key in ["duration_sec", "connections", "handshakes", "handshakes_per_sec", "requests_ok",
            "requests_failed", "bytes_received", "bytes_sent", "goodput_gbps", "latency_p50_ms",
            "latency_p99_ms", "latency_max_ms", "errors"]:
    assert key in r, key
PY

# Two URLs, cycled: 10 requests on one core are 5 of each.
run_quicload cycle 0 --connections=2 --streams=2 --requests=10 \
  "https://127.0.0.1:$PORT/1000" "https://127.0.0.1:$PORT/3000"
expect_json cycle requests_ok 10
expect_json cycle bytes_received 20000

# Two client cores over IPv6.
run_quicload cores 0 --cores=2 --connections=4 --streams=4 --requests=64 "https://[::1]:$PORT/20000"
expect_json cores requests_ok 64
expect_json cores bytes_received 1280000
expect_json cores cores 2

# --per-connection: 12 requests, 3 per connection, 2 at a time: 4 connections.
run_quicload churn 0 --connections=2 --per-connection=3 --requests=12 "https://127.0.0.1:$PORT/5000"
expect_json churn requests_ok 12
expect_json churn handshakes 4

# A timed run: requests repeat until the time is up, none fail.
run_quicload timed 0 --no-progress --duration=1.5 --connections=2 --streams=4 \
  "https://127.0.0.1:$PORT/10000"
expect_json_at_least timed requests_ok 20
expect_json timed requests_failed 0
python3 - "$WORK/timed.json" <<'PY' || fail "timed: duration"
import json, sys
r = json.load(open(sys.argv[1]))
assert 1.5 <= r["duration_sec"] < 7, r["duration_sec"]
assert r["bytes_received"] == 10000 * r["requests_ok"], r
PY

# perf: 30 downloads of 50 kB, each with a 100 kB upload.
run_quicload perf 0 --connections=3 --streams=2 --requests=30 --upload=100000 \
  "perf://127.0.0.1:$PORT/50000"
expect_json perf requests_ok 30
expect_json perf bytes_received 1500000
expect_json perf bytes_sent 3000000
expect_no_errors perf

# Not a TTY: one progress line a second.
run_quicload progress 0 --duration=2.2 --connections=1 "https://127.0.0.1:$PORT/1000"
lines=$(grep -c '^\[ *[0-9.]*s\] requests [0-9]*  goodput [0-9.]* Gbps  handshakes [0-9.]*/s  errors 0  p50 [0-9.]* ms  p99 [0-9.]* ms$' "$WORK/progress.log")
[[ $lines -ge 2 && $lines -le 3 ]] || fail "progress: $lines lines: $(cat "$WORK/progress.log")"

stop_dataplane
echo "quicload requests: ok"
