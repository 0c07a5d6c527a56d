#!/usr/bin/env bash
# gtlsclient (ngtcp2 0.12.1) downloads 10 MB from our server over h3; the
# file must be the 10,000,000 synthetic bytes, and the server must stop
# cleanly on SIGTERM.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

start_dataplane "$DATAPLANE"
gtls_get -- "https://127.0.0.1:$PORT/10000000"
expect_synthetic "$WORK/download/10000000" 10000000
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
echo "gtlsclient download: ok"
