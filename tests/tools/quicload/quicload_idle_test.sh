#!/usr/bin/env bash
# quicload --idle: 200 connections opened at most 20 handshakes at a time,
# all held open at once (the server's --stats line shows them) for the idle
# period, then closed; the report's idle keys. (Keep-alive across a server
# idle timeout is proven in tests/quic/harness:idle_timeout_test.)
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

start_dataplane "$DATAPLANE" --max-connections=1000 --stats=1

run_quicload idle 0 --idle=3 --connections=200 --connections-in-flight=20 --no-progress \
  "https://127.0.0.1:$PORT/"
expect_json idle mode idle
expect_json idle handshakes 200
expect_json idle handshakes_failed 0
expect_json idle idle_connections 200
expect_json idle idle_sec 3.0
expect_json idle requests_ok 0
expect_no_errors idle
expect_json_at_least idle idle_established_sec 0.000001
established=$(json_value idle idle_established_sec)
duration=$(json_value idle duration_sec)
python3 -c "import sys; sys.exit(0 if float('$duration') >= float('$established') + 3 else 1)" ||
  fail "the run ($duration s) ended before the idle period after $established s"

# Perf connections too, and bad combinations.
run_quicload idle_perf 0 --idle=1 --connections=50 --no-progress "perf://127.0.0.1:$PORT/0"
expect_json idle_perf idle_connections 50
expect_no_errors idle_perf
run_quicload idle_bad 2 --idle=1 --handshake-only "https://127.0.0.1:$PORT/"
grep -q -- "--idle sends no requests" "$WORK/idle_bad.log" || fail "no error line for --idle with --handshake-only"

stop_dataplane
total=$(server_total handshakes)
[[ $total -eq 250 ]] || fail "the server counted $total handshakes"
# While held, the server had all 200 connections at once.
peak=$(sed -n 's/.*stats: connections=\([0-9]*\).*/\1/p' "$WORK/server.log" | sort -n | tail -n 1)
[[ ${peak:-0} -eq 200 ]] || fail "the server held at most ${peak:-0} connections at once, expected 200"
echo "quicload idle: ok"
