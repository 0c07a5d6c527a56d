#!/usr/bin/env bash
# The server's graceful stop, end to end on loopback: an idle server exits
# at once on SIGTERM; a busy one refuses new connections while draining,
# keeps serving the download it took, and closes it when --drain-timeout
# runs out; a client that falls silent (stopped, as if it vanished without
# its CONNECTION_CLOSE arriving) does not hold the drain for its idle
# timeout; a second SIGTERM, or --drain-timeout=0, closes at once. Every
# exit is 0 and every wait bounded.
set -uo pipefail
DATAPLANE=$1
QUICLOAD=$2
source tests/tools/quicload/quicload_lib.sh

now_ms() { date +%s%3N; }

# signal_server: SIGTERM, noting when in SIGNALLED.
signal_server() {
  SIGNALLED=$(now_ms)
  kill -TERM "$SERVER_PID"
}

# await_exit SECONDS: the server exits within SECONDS; sets TOOK to the
# milliseconds since the last signal_server, fails unless it exited 0.
await_exit() {
  local rc
  for _ in $(seq 1 $(($1 * 20))); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$SERVER_PID" 2>/dev/null && fail "dataplane still running $1 s after the signal"
  wait "$SERVER_PID"
  rc=$?
  SERVER_PID=""
  [[ $rc -eq 0 ]] || fail "dataplane exited $rc"
  TOOK=$(($(now_ms) - SIGNALLED))
}

# A download that lasts far longer than any drain here (1e11 bytes), in the
# background; its PID in LOAD_PID.
start_long_download() {
  timeout 60 "$QUICLOAD" --no-progress --json="$WORK/$1.json" \
    "https://127.0.0.1:$PORT/100000000000" >"$WORK/$1.log" 2>&1 &
  LOAD_PID=$!
  sleep 1  # connected and downloading (a loopback handshake takes milliseconds)
}

# 1. Idle: nothing to drain.
start_dataplane "$DATAPLANE"
signal_server
await_exit 5
[[ $TOOK -lt 1500 ]] || fail "idle server took $TOOK ms to exit"
grep -q "dataplane: stopped" "$WORK/server.log" || fail "no 'stopped' line"

# 2. Busy, --drain-timeout=2: new connections refused while draining, the
# download goes on until the bound, then the server closes it and exits.
start_dataplane "$DATAPLANE" --drain-timeout=2
start_long_download busy
signal_server
sleep 0.3
run_quicload refused 1 --handshake-only --requests=1 --timeout=3 "https://127.0.0.1:$PORT/"
expect_json refused errors.refused 1
await_exit 6
[[ $TOOK -ge 1900 && $TOOK -lt 4000 ]] || fail "a drain of 2 s took $TOOK ms"
grep -q "dataplane: draining" "$WORK/server.log" || fail "no 'draining' line"
wait "$LOAD_PID"
expect_json busy errors.closed 1

# 3. A second SIGTERM stops at once.
start_dataplane "$DATAPLANE" --drain-timeout=30
start_long_download twice
signal_server
sleep 0.5
signal_server
await_exit 5
[[ $TOOK -lt 1500 ]] || fail "second SIGTERM: exit took $TOOK ms"
grep -q "dataplane: stopping" "$WORK/server.log" || fail "no 'stopping' line"
wait "$LOAD_PID"

# 4. --drain-timeout=0: close at once.
start_dataplane "$DATAPLANE" --drain-timeout=0
start_long_download zero
signal_server
await_exit 5
[[ $TOOK -lt 1500 ]] || fail "--drain-timeout=0: exit took $TOOK ms"
wait "$LOAD_PID"

# 5. A client that falls silent mid-download: the server's packets go
# unanswered, and after 3 probe timeouts and at least 1 s
# (Connection::peer_unresponsive) it closes the connection and, with no
# connection left open, exits: long before the 30 s idle timeout and the
# 30 s drain bound.
start_dataplane "$DATAPLANE" --drain-timeout=30
# quicload runs without a timeout wrapper here, so that $! is the process
# to stop; it is killed below in any case.
"$QUICLOAD" --no-progress "https://127.0.0.1:$PORT/100000000000" >"$WORK/silent.log" 2>&1 &
client=$!
trap 'kill -KILL "$client" 2>/dev/null; cleanup' EXIT
sleep 1
kill -STOP "$client"
sleep 0.2
signal_server
await_exit 15
kill -KILL "$client"
wait "$client"
[[ $TOOK -lt 4000 ]] || fail "a silent client held the drain for $TOOK ms"
silent_took=$TOOK

echo "drain signals: ok (a silent client ended the drain after $silent_took ms)"
