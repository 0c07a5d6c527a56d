#!/usr/bin/env bash
# gtlsclient offers only CHACHA20-POLY1305 (TLS 1.3); our server must negotiate
# it (the client reports the suite) and deliver 3 MB byte-exact.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

gtls_cipher_download "$DATAPLANE" CHACHA20-POLY1305
echo "gtlsclient CHACHA20-POLY1305: ok"
