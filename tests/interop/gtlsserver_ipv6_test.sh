#!/usr/bin/env bash
# gtlsserver on ::1 and our client over IPv6: a 1 MB download byte for byte.
# Skipped (exit 0, SKIP line) when this host has no IPv6 loopback.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

if ! python3 -c 'import socket; s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::1", 0))' 2>/dev/null; then
  echo "SKIP: ::1 is not available on this host"
  exit 0
fi
htdocs_file file 1000000
start_gtlsserver --ipv6
dpquic_get "$CLIENT" -- "https://[::1]:$PORT/file"
expect_same file
expect_client_line "^https://\[::1\]:$PORT/file: ok, status 200, 1000000 bytes$"
stop_gtlsserver
echo "gtlsserver IPv6: ok"
