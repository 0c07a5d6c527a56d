#!/usr/bin/env bash
# gtlsclient (ngtcp2 0.12.1) completes one QUIC v1 handshake with our server
# (h3, confirmed by HANDSHAKE_DONE) and GETs /1: the file must be the single
# synthetic byte, and the server must count exactly one handshake.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

start_dataplane "$DATAPLANE"
gtls_run client --no-quic-dump --no-http-dump -- "https://127.0.0.1:$PORT/1"
expect_synthetic "$WORK/download/1" 1
grep -q "the negotiated version is 0x00000001" "$WORK/client.log" || fail "version v1 not negotiated"
grep -q "^Negotiated ALPN is h3$" "$WORK/client.log" || fail "ALPN h3 not negotiated"
grep -q "^QUIC handshake has been confirmed$" "$WORK/client.log" || fail "handshake not confirmed"
grep -q "\[:status: 200\]" "$WORK/client.log" || fail "no 200 response"
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
echo "gtlsclient handshake: ok"
