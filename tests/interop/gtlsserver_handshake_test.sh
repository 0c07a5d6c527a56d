#!/usr/bin/env bash
# Our client (dataplane shard + h3 client) completes a QUIC v1 handshake with
# gtlsserver (ngtcp2 0.12.1) and fetches one small file over HTTP/3; the
# file must match byte for byte, and the connection must have used v1 with
# the default TLS_AES_128_GCM_SHA256 suite, no Retry and a fresh session.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file small 1000
start_gtlsserver
dpquic_get "$CLIENT" -- "https://127.0.0.1:$PORT/small"
expect_same small
expect_client_line "^https://127.0.0.1:$PORT/small: ok, status 200, 1000 bytes$"
expect_client_line "^connection 1: version 0x00000001, resumed no, 0-RTT not offered,"
expect_client_line "^connection 1: cipher TLS_AES_128_GCM_SHA256, retry no,"
expect_client_line "^all requests succeeded$"
stop_gtlsserver
echo "gtlsserver handshake: ok"
