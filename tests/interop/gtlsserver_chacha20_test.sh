#!/usr/bin/env bash
# gtlsserver offers only TLS_CHACHA20_POLY1305_SHA256 (our BoringSSL client cannot
# restrict its TLS 1.3 suites): the handshake must settle on it, and a
# 1 MB download under its packet protection must arrive byte for byte.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 1000000
start_gtlsserver --ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305
dpquic_get "$CLIENT" -- "https://127.0.0.1:$PORT/file"
expect_same file
expect_client_line "^connection 1: cipher TLS_CHACHA20_POLY1305_SHA256, "
stop_gtlsserver
echo "gtlsserver TLS_CHACHA20_POLY1305_SHA256: ok"
