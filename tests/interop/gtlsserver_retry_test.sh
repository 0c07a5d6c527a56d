#!/usr/bin/env bash
# gtlsserver validates addresses (-V): it answers our first Initial with a
# Retry. Our client must retry with the token, and the server's transport
# parameters must then carry retry_source_connection_id (which our client
# checks against the Retry's SCID, RFC 9000 §7.3): printed as "retry yes".
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 1000000
start_gtlsserver -V
dpquic_get "$CLIENT" -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: cipher [A-Z0-9_]*, retry yes, "
stop_gtlsserver
echo "gtlsserver Retry: ok"
