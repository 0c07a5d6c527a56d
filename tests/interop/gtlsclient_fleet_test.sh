#!/usr/bin/env bash
# Hosts of one fleet on loopback: servers with their own server IDs, one
# host key and one ticket key (docs/fleet.md), driven by gtlsclient.
#  - Server ID: every short-header packet the client sends carries the
#    server's ID after the CID's first octet (QUIC-LB plaintext layout).
#  - 0-RTT across hosts: a ticket from server A resumes at server B, whose
#    TLS stack accepts the early data; a server under another ticket key
#    falls back to a full handshake. A POST in 0-RTT gets 425 Too Early.
#  - Restart: server A is killed (SIGKILL) while a client holds a
#    connection to it and restarted with the same keys; the client's next
#    packet draws a stateless reset that it recognises (ERR_DRAINING), not
#    an idle timeout. Under another host key it is not recognised.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

FLEET_PIDS=()
fleet_cleanup() {
  for pid in "${FLEET_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  cleanup
}
trap fleet_cleanup EXIT

head -c 32 /dev/urandom >"$WORK/host.key"
head -c 48 /dev/urandom >"$WORK/ticket.key"
head -c 80 /dev/urandom >"$WORK/other_ticket.key"
PORT_B=$(free_port)
PORT_C=$(free_port)

# start_host NAME PORT SERVER_ID [flags...]: a server under the host key
# $HOST_KEY (default host.key) logging to NAME.out, its TLS secrets to
# NAME.keys; sets HOST_PID.
start_host() {
  local name=$1 port=$2 id=$3
  shift 3
  SSLKEYLOGFILE="$WORK/$name.keys" "$DATAPLANE" --listen=127.0.0.1:$port --cores=1 \
    --server-id="$id" --host-key="${HOST_KEY:-$WORK/host.key}" "$@" >>"$WORK/$name.out" 2>&1 &
  HOST_PID=$!
  FLEET_PIDS+=("$HOST_PID")
  await_line "$name" "$HOST_PID" "$WORK/$name.out" "server ID $id" 10
}

start_host a "$PORT" 01 --ticket-key="$WORK/ticket.key"
pid_a=$HOST_PID
start_host b "$PORT_B" 02 --ticket-key="$WORK/ticket.key"
pid_b=$HOST_PID
start_host c "$PORT_C" 03 --ticket-key="$WORK/other_ticket.key"

# Server ID in the CIDs the client sends to (first octet 0x0f: config
# rotation 0, 15 bytes follow).
gtls_run first --no-quic-dump --no-http-dump --session-file="$WORK/session" --tp-file="$WORK/tp" \
  -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
grep -Eq "pkt tx pkn=[0-9]+ dcid=0x0f01[0-9a-f]{28} .*type=1RTT" "$WORK/first.log" ||
  fail "no 1-RTT packet to a CID carrying server ID 01"
grep -E "pkt tx pkn=[0-9]+ dcid=0x[0-9a-f]+ .*type=1RTT" "$WORK/first.log" |
  grep -Evq "dcid=0x0f01" && fail "a 1-RTT packet went to a CID without server ID 01"
[[ -s $WORK/session && -s $WORK/tp ]] || fail "no session ticket or transport parameters stored"

# 0-RTT at B with A's ticket.
rm -f "$WORK/download/100000"
cp "$WORK/session" "$WORK/session_a"
PORT=$PORT_B gtls_run early --no-quic-dump --no-http-dump --session-file="$WORK/session" --tp-file="$WORK/tp" \
  -- "https://127.0.0.1:$PORT_B/100000"
expect_synthetic "$WORK/download/100000" 100000
grep -q " frm tx [0-9]* 0RTT STREAM(0x0b) id=0x0 fin=1 " "$WORK/early.log" ||
  fail "the client did not send its request in 0-RTT"
early=$(grep -c "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/b.keys")
[[ $early -eq 1 ]] || fail "server B accepted early data $early times (expected 1)"
grep -Eq "pkt tx pkn=[0-9]+ dcid=0x0f02[0-9a-f]{28} .*type=1RTT" "$WORK/early.log" ||
  fail "no 1-RTT packet to a CID carrying server ID 02"

# A POST in 0-RTT at B may be a replay B cannot catch (its replay filter is
# its own): 425 Too Early. The same POST after the handshake: 405.
cp "$WORK/session" "$WORK/session_post"  # the ticket B issued in the 0-RTT run
PORT=$PORT_B gtls_run post_early --no-quic-dump --no-http-dump -m POST \
  --session-file="$WORK/session_post" --tp-file="$WORK/tp" -- "https://127.0.0.1:$PORT_B/1000"
grep -aq " frm tx [0-9]* 0RTT STREAM" "$WORK/post_early.log" ||
  fail "the client did not send its POST in 0-RTT"
grep -aq "\[:status: 425\]" "$WORK/post_early.log" || fail "a POST in 0-RTT did not get 425"
PORT=$PORT_B gtls_run post_late --no-quic-dump --no-http-dump -m POST \
  -- "https://127.0.0.1:$PORT_B/1000"
grep -aq "\[:status: 405\]" "$WORK/post_late.log" || fail "a POST after the handshake did not get 405"

# C holds another ticket key: a full handshake, no early data accepted.
rm -f "$WORK/download/100000"
PORT=$PORT_C gtls_run other --no-quic-dump --no-http-dump --session-file="$WORK/session_a" --tp-file="$WORK/tp" \
  -- "https://127.0.0.1:$PORT_C/100000"
expect_synthetic "$WORK/download/100000" 100000
grep -q "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/c.keys" &&
  fail "server C, under another ticket key, accepted early data"

# restart_run NAME [flags for the restarted A...]: a client finishes its
# handshake with A and holds its request back for 2 s (--delay-stream); A is
# killed (SIGKILL) and started again on the same port; the request is then
# the client's first packet to the new process. Sets RESTART_RC.
restart_run() {
  local name=$1
  shift
  rm -rf "$WORK/download"
  mkdir -p "$WORK/download"
  timeout 30 gtlsclient --download="$WORK/download" --no-quic-dump --no-http-dump \
    --delay-stream=2s --timeout=4s 127.0.0.1 "$PORT" "https://127.0.0.1:$PORT/1000" \
    >"$WORK/$name.log" 2>&1 &
  local client=$!
  FLEET_PIDS+=("$client")
  for _ in $(seq 1 50); do grep -aq "HANDSHAKE_DONE" "$WORK/$name.log" && break; sleep 0.1; done
  grep -aq "HANDSHAKE_DONE" "$WORK/$name.log" || fail "$name: no handshake with A"
  kill -KILL "$pid_a"
  wait "$pid_a" 2>/dev/null
  start_host "$name" "$PORT" 01 "$@"
  pid_a=$HOST_PID
  wait "$client"
  RESTART_RC=$?
  [[ $RESTART_RC -ne 124 ]] || fail "$name: the client was still running 30 s on"
}

# The same host key: the client recognises the new process's stateless reset.
restart_run restarted --ticket-key="$WORK/ticket.key"
grep -aq "ngtcp2_conn_read_pkt: ERR_DRAINING" "$WORK/restarted.log" ||
  fail "the client did not recognise a stateless reset after the restart"
grep -aq "ERR_IDLE_CLOSE" "$WORK/restarted.log" && fail "the client timed out instead"
sigterm_and_wait restarted "$pid_a" 10 || fail "the restarted server exited $?"
resets=$(sed -n 's/.*totals:.* stateless_resets=\([0-9]*\).*/\1/p' "$WORK/restarted.out")
[[ ${resets:-0} -ge 1 ]] || fail "the restarted server counted no stateless reset"

# Control: restarted under another host key, its reset is not recognised and
# the client can only wait for its idle timeout.
start_host again "$PORT" 01 --ticket-key="$WORK/ticket.key"
pid_a=$HOST_PID
head -c 32 /dev/urandom >"$WORK/other_host.key"
HOST_KEY="$WORK/other_host.key" restart_run other_key --ticket-key="$WORK/ticket.key"
grep -aq "ERR_IDLE_CLOSE" "$WORK/other_key.log" ||
  fail "a reset under another host key ended the connection otherwise"
grep -aq "ERR_DRAINING" "$WORK/other_key.log" && fail "a reset under another key was recognised"
echo "gtlsclient fleet: ok"
