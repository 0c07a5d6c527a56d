#!/usr/bin/env bash
# Two connections to gtlsserver: the second resumes the TLS session from the
# first's ticket (the client fails unless it was resumed). Both downloads
# must arrive byte for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 300000
start_gtlsserver
dpquic_get "$CLIENT" --resume -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: version 0x00000001, resumed no, "
expect_client_line "^connection 2: version 0x00000001, resumed yes, 0-RTT not offered, "
[[ $(grep -c ": ok, status 200, 300000 bytes$" "$WORK/client.log") -eq 2 ]] || fail "expected two downloads"
stop_gtlsserver
echo "gtlsserver resumption: ok"
