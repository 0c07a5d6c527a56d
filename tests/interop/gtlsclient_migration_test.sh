#!/usr/bin/env bash
# gtlsclient migrates to a new local address (--change-local-addr, with path
# validation) 100 ms after the handshake, during a 100 MB download. The file
# must be byte-exact; the client must have validated the new path, and must
# have received a good part of the download on each address (the move
# happened mid-transfer and the server followed it). The move comes late
# enough for slow start to be well under way even when a loaded machine
# stretches the first round trips, and the file is large enough that most
# of it is still to come.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

start_dataplane "$DATAPLANE"
gtls_run client --no-quic-dump --no-http-dump --change-local-addr=100ms \
  -- "https://127.0.0.1:$PORT/100000000"
expect_synthetic "$WORK/download/100000000" 100000000
expect_client_moved "$WORK/client.log"
grep -F "Path validation against path {local:$NEW_ADDRESS, remote:" "$WORK/client.log" |
  grep -q "} succeeded$" ||
  fail "the client did not validate the path from $NEW_ADDRESS"
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
echo "gtlsclient migration: ok ($OLD_PACKETS packets before, $NEW_PACKETS after the move)"
