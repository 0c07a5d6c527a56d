#!/usr/bin/env bash
# gtlsserver drops 10% of the packets it sends and 10% of those it receives;
# a 2 MB download must still arrive byte for byte (loss recovery on both
# sides, and our client's retransmitted requests and ACKs).
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 2000000
start_gtlsserver -t 0.1 -r 0.1
dpquic_get "$CLIENT" -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^https://127.0.0.1:$PORT/file: ok, status 200, 2000000 bytes$"
stop_gtlsserver
echo "gtlsserver 10% loss: ok $(grep -o 'packets lost [0-9]*' "$WORK/client.log")"
