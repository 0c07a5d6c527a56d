#!/usr/bin/env bash
# gtlsclient offers only AES-256-GCM (TLS 1.3); our server must negotiate
# it (the client reports the suite) and deliver 3 MB byte-exact.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

gtls_cipher_download "$DATAPLANE" AES-256-GCM
echo "gtlsclient AES-256-GCM: ok"
