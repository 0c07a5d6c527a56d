#!/usr/bin/env bash
# dpquic_client across a server's graceful stop: 100 large downloads fill
# the server's stream limit and 10 small ones wait for stream credit when
# the server gets SIGTERM. Its GOAWAY refuses the 10 waiting ones; the 100
# finish on the first connection, the server exits once drained and a
# second one starts on the same port; the client sends the 10 on a new
# connection (tried again while the first server refuses it) and every body
# is byte-exact.
CLIENT=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

PORT=$(port_below_ephemeral)
[[ -n $PORT ]] || fail "no free port below the ephemeral range"
CLIENT_PID=""
stop_client() {
  [[ -n $CLIENT_PID ]] && kill -KILL "$CLIENT_PID" 2>/dev/null
  cleanup
}
trap stop_client EXIT

mkdir -p "$WORK/qlog"
start_dataplane "$DATAPLANE" --drain-timeout=60 --qlog-dir="$WORK/qlog"
urls=()
for _ in $(seq 100); do urls+=("https://127.0.0.1:$PORT/20000000"); done
for i in $(seq 10); do urls+=("https://127.0.0.1:$PORT/$((1000 + i))"); done
timeout 120 "$CLIENT" --verify-synthetic --timeout=100 "${urls[@]}" >"$WORK/client.log" 2>&1 &
CLIENT_PID=$!

# The connection exists once the server opened its qlog; its requests are
# out a moment later, long before 2 GB of responses are through.
for _ in $(seq 100); do
  compgen -G "$WORK/qlog/*.sqlog" >/dev/null && break
  kill -0 "$CLIENT_PID" 2>/dev/null || fail "dpquic_client exited early"
  sleep 0.05
done
compgen -G "$WORK/qlog/*.sqlog" >/dev/null || fail "no connection reached the server"
sleep 0.2
sigterm_and_wait dataplane "$SERVER_PID" 90 || fail "the first server exited $?"
SERVER_PID=""
mv "$WORK/server.log" "$WORK/first.log"
start_dataplane "$DATAPLANE"

wait "$CLIENT_PID"
rc=$?
CLIENT_PID=""
[[ $rc -eq 0 ]] || fail "dpquic_client exited $rc"
stop_dataplane

grep -q "^connection 1: GOAWAY: 10 requests go on a new connection$" "$WORK/client.log" ||
  fail "no GOAWAY round: $(grep '^connection' "$WORK/client.log")"
grep -q "^all requests succeeded$" "$WORK/client.log" || fail "some requests failed"
[[ $(grep -c ": ok, status 200, 20000000 bytes$" "$WORK/client.log") -eq 100 ]] ||
  fail "the large downloads"
for i in $(seq 10); do
  grep -q "^https://127.0.0.1:$PORT/$((1000 + i)): ok, status 200, $((1000 + i)) bytes$" \
    "$WORK/client.log" || fail "/$((1000 + i))"
done
grep -q "totals: handshakes=1 " "$WORK/first.log" ||
  fail "first server: $(grep totals "$WORK/first.log")"
[[ $(server_total handshakes) -ge 1 ]] || fail "second server: $(grep totals "$WORK/server.log")"
echo "dpquic_client goaway: ok"
