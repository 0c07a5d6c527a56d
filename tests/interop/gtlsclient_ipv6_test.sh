#!/usr/bin/env bash
# Our server on [::1] only; gtlsclient downloads 3 MB over IPv6, byte-exact.
# Prints SKIP and passes when this machine cannot bind UDP on ::1.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

if ! python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))' \
  2>/dev/null; then
  echo "SKIP: cannot bind UDP on ::1 (no IPv6 loopback here)"
  exit 0
fi
start_dataplane "$DATAPLANE" --listen="[::1]:$PORT"
gtls_run client --no-quic-dump --no-http-dump -- "https://[::1]:$PORT/3000000"
expect_synthetic "$WORK/download/3000000" 3000000
grep -q "^Received packet: local=\[::1\]:[0-9]* remote=\[::1\]:$PORT " "$WORK/client.log" ||
  fail "the client received nothing over ::1"
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
echo "gtlsclient IPv6: ok"
