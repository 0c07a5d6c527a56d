#!/usr/bin/env bash
# Our client migrates to a new local port once 100 kB arrived (RFC 9000
# §9.2): "migrated yes" means the new path was validated, became the active
# path, and carried body bytes afterwards. The 4 MB download must arrive byte
# for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 4000000
start_gtlsserver
dpquic_get "$CLIENT" --migrate -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: .*, migrated yes$"
expect_client_line "^connection 1: .*, bytes after migration [1-9][0-9]*$"
stop_gtlsserver
echo "gtlsserver client migration: ok"
