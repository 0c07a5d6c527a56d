#!/usr/bin/env bash
# Our client downloads a 10 MB file of random bytes from gtlsserver over one
# HTTP/3 request; the copy must equal the served file byte for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file big 10000000
start_gtlsserver
dpquic_get "$CLIENT" -- "https://127.0.0.1:$PORT/big"
expect_same big
expect_client_line "^https://127.0.0.1:$PORT/big: ok, status 200, 10000000 bytes$"
stop_gtlsserver
echo "gtlsserver 10 MB download: ok"
