#!/usr/bin/env bash
# quicload across a server's graceful stop: 10 connections load our server;
# mid-run the server gets SIGTERM (GOAWAY on every connection, new ones
# refused, exit once drained) and a second server starts on the same port
# as soon as the first has exited. Each connection finishes what the first
# server took and quicload moves the rest to new connections, which reach
# the second server: no request fails, the refused ones are counted as
# retried, every body is checked byte for byte. More streams per connection
# than the server allows at once (100) keep requests waiting for stream
# credit, so the GOAWAY always refuses some.
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

# The server's port below the ephemeral range: quicload's sockets (one per
# connection, some opened while no server is up) never take it.
PORT=$(port_below_ephemeral)
[[ -n $PORT ]] || fail "no free port below the ephemeral range"

CLIENT_PID=""
stop_client() {
  [[ -n $CLIENT_PID ]] && kill -KILL "$CLIENT_PID" 2>/dev/null
  cleanup
}
trap stop_client EXIT

start_dataplane "$DATAPLANE" --drain-timeout=5 --stats=1
timeout 60 "$QUICLOAD" --json="$WORK/goaway.json" --no-progress --duration=6 --connections=10 \
  --streams=110 "https://127.0.0.1:$PORT/2000" >"$WORK/goaway.log" 2>&1 &
CLIENT_PID=$!

# Once all 10 connections are up and busy, the first server stops.
for _ in $(seq 100); do
  [[ $(max_stats_connections) -ge 10 ]] 2>/dev/null && break
  kill -0 "$CLIENT_PID" 2>/dev/null || fail "quicload exited early"
  sleep 0.1
done
[[ $(max_stats_connections) -ge 10 ]] || fail "quicload did not open 10 connections"
sleep 0.3
sigterm_and_wait dataplane "$SERVER_PID" 10 || fail "the first server exited $?"
SERVER_PID=""
mv "$WORK/server.log" "$WORK/first.log"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "quicload ended before the second server started"
start_dataplane "$DATAPLANE"

wait "$CLIENT_PID"
rc=$?
CLIENT_PID=""
[[ $rc -eq 0 ]] || fail "quicload exited $rc"
stop_dataplane

expect_json goaway requests_failed 0
expect_json goaway requests_abandoned 0
expect_json goaway handshakes_failed 0
expect_no_errors goaway
expect_json goaway goaways 10
expect_json_at_least goaway requests_retried_after_goaway 1
expect_json_at_least goaway requests_ok 1000
python3 - "$WORK/goaway.json" <<'PY' || fail "goaway: bytes"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bytes_received"] == 2000 * r["requests_ok"], r
PY
grep -q "^  goaway         10 connections retired, [1-9][0-9]* requests sent again" \
  "$WORK/goaway.log" || fail "goaway: no human report line"
# The first server took the first 10 connections and drained them; the new
# connections went to the second.
grep -q "totals: handshakes=10 " "$WORK/first.log" ||
  fail "first server: $(grep totals "$WORK/first.log")"
[[ $(server_total handshakes) -ge 10 ]] || fail "second server: $(grep totals "$WORK/server.log")"
echo "quicload goaway: ok"
