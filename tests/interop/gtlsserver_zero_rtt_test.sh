#!/usr/bin/env bash
# A second connection resumes the session and sends its request in 0-RTT;
# gtlsserver must accept the early data (the client fails otherwise), and
# both downloads must arrive byte for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 300000
start_gtlsserver
dpquic_get "$CLIENT" --resume --0rtt -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: version 0x00000001, resumed no, 0-RTT not offered, "
expect_client_line "^connection 2: version 0x00000001, resumed yes, 0-RTT accepted, "
[[ $(grep -c ": ok, status 200, 300000 bytes$" "$WORK/client.log") -eq 2 ]] || fail "expected two downloads"
stop_gtlsserver
echo "gtlsserver 0-RTT: ok"
