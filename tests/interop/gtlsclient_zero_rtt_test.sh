#!/usr/bin/env bash
# 0-RTT: gtlsclient connects once, keeping the session ticket and the
# server's transport parameters (--session-file, --tp-file), then connects
# again sending its request in 0-RTT. Both downloads must be byte-exact.
# The server must have accepted the early data: its TLS stack derived the
# early traffic secret exactly once (SSLKEYLOGFILE: CLIENT_EARLY_TRAFFIC_SECRET),
# and its qlog shows the request (stream 0, with FIN) received in a 0RTT packet
# and no 0RTT packet dropped.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
SSLKEYLOGFILE="$WORK/keys.txt" start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog"
gtls_run first --no-quic-dump --no-http-dump --session-file="$WORK/session" \
  --tp-file="$WORK/tp" -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
[[ -s $WORK/session && -s $WORK/tp ]] || fail "no session ticket or transport parameters stored"
rm "$WORK/download/100000"
gtls_run early --session-file="$WORK/session" --tp-file="$WORK/tp" --no-http-dump \
  -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
grep -q " frm tx [0-9]* 0RTT STREAM(0x0b) id=0x0 fin=1 " "$WORK/early.log" ||
  fail "the client did not send its request in 0-RTT"
stop_dataplane
[[ $(server_total handshakes) -eq 2 ]] || fail "expected 2 handshakes, got $(server_total handshakes)"
early_secrets=$(grep -c "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/keys.txt")
[[ $early_secrets -eq 1 ]] || fail "$early_secrets CLIENT_EARLY_TRAFFIC_SECRET lines (expected 1)"
qlog_events "$WORK/qlog" | grep '"name":"transport:packet_received"' | grep '"packet_type":"0RTT"' |
  grep -q '"stream_id":0,"offset":0,"length":[0-9]*,"fin":true' ||
  fail "the server's qlog shows no request received in 0-RTT"
qlog_events "$WORK/qlog" | grep '"name":"transport:packet_dropped"' | grep -q '0RTT' &&
  fail "the server dropped 0-RTT packets"
echo "gtlsclient 0-RTT: ok"
