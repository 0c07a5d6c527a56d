#!/usr/bin/env bash
# Our client initiates a 1-RTT key update once 100 kB arrived (RFC 9001 §6);
# gtlsserver must follow (its packets then use the next read generation) and
# the 4 MB download must still arrive byte for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 4000000
start_gtlsserver
dpquic_get "$CLIENT" --key-update -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: .*, key updates [1-9][0-9]*, "
expect_client_line "^connection 1: .*, key updates initiated 1, peer key generation [1-9][0-9]*, "
stop_gtlsserver
echo "gtlsserver key update: ok"
