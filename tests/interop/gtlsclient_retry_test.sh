#!/usr/bin/env bash
# Address validation with Retry: our server (--retry=always) answers the
# first Initial with a Retry; gtlsclient must accept it (integrity tag,
# retry_source_connection_id) and complete the handshake with the token.
# The 1 MB download must be byte-exact; the client must have received one
# Retry, and the server must count >= 1 retry and exactly 1 handshake.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

start_dataplane "$DATAPLANE" --retry=always
gtls_run client --no-http-dump -- "https://127.0.0.1:$PORT/1000000"
expect_synthetic "$WORK/download/1000000" 1000000
retries_seen=$(grep -c " pkt rx pkn=0 .* type=Retry " "$WORK/client.log")
[[ $retries_seen -eq 1 ]] || fail "the client received $retries_seen Retry packets"
grep -q "remote transport_parameters retry_source_connection_id=" "$WORK/client.log" ||
  fail "the server's transport parameters lack retry_source_connection_id"
stop_dataplane
[[ $(server_total retries) -ge 1 ]] || fail "expected >= 1 retry, got $(server_total retries)"
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
echo "gtlsclient Retry: ok"
