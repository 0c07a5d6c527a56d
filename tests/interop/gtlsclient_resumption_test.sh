#!/usr/bin/env bash
# Session resumption: gtlsclient connects once and stores the server's TLS
# session ticket (--session-file), then connects again with it. Both
# downloads must be byte-exact. The second handshake must be a resumed one
# (PSK): the server then sends no Certificate / CertificateVerify, so its
# Handshake-level CRYPTO data shrinks from ~650 bytes (full handshake, with
# the certificate) to ~180 (EncryptedExtensions + Finished).
# The second connection passes --disable-early-data: gtlsclient 0.12.1
# resuming with --session-file but no --tp-file crashes (SIGSEGV, also
# against its own gtlsserver); 0-RTT is gtlsclient_zero_rtt_test.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

# Bytes of Handshake-level CRYPTO data the client received.
handshake_crypto_bytes() {
  sed -n 's/.* frm rx [0-9]* Handshake CRYPTO(0x06) offset=[0-9]* len=\([0-9]*\)$/\1/p' "$1" |
    awk '{ total += $1 } END { print total + 0 }'
}

start_dataplane "$DATAPLANE"
gtls_run full --no-http-dump --session-file="$WORK/session" -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
[[ -s $WORK/session ]] || fail "the server sent no session ticket"
rm "$WORK/download/100000"
gtls_run resumed --no-http-dump --session-file="$WORK/session" --disable-early-data -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
grep -q " 0RTT " "$WORK/resumed.log" && fail "the resumed connection sent 0-RTT"
stop_dataplane
[[ $(server_total handshakes) -eq 2 ]] || fail "expected 2 handshakes, got $(server_total handshakes)"
full=$(handshake_crypto_bytes "$WORK/full.log")
resumed=$(handshake_crypto_bytes "$WORK/resumed.log")
[[ $full -ge 500 ]] || fail "full handshake: only $full bytes of Handshake CRYPTO (no certificate?)"
[[ $resumed -gt 0 && $resumed -lt 400 ]] ||
  fail "second handshake: $resumed bytes of Handshake CRYPTO (not resumed)"
echo "gtlsclient resumption: ok (server Handshake CRYPTO: $full bytes full, $resumed resumed)"
