#!/usr/bin/env bash
# SIGHUP re-reads the certificate, key, host key and ticket keys without
# dropping a connection; a bad file keeps the running configuration.
#  - A 200 MB download that runs across both reloads completes byte-exact.
#  - Before: clients trusting certificate A connect, B-trusting ones fail.
#    After the reload onto B: the reverse.
#  - Ticket keys rotate (the new key first, the old one second): a ticket
#    issued before the reload still carries 0-RTT after it.
#  - A junk certificate file: one stderr line, and B is still served.
source "$(dirname "$0")/../interop/interop_lib.sh"
DATAPLANE=$1
CLIENT=$2

make_certificate() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    -keyout "$WORK/$1.key" -out "$WORK/$1.pem" >/dev/null 2>&1 || fail "openssl ($1)"
}
make_certificate a
make_certificate b
cp "$WORK/a.pem" "$WORK/server.pem"
cp "$WORK/a.key" "$WORK/server.key"
head -c 32 /dev/urandom >"$WORK/host.key"
head -c 48 /dev/urandom >"$WORK/ticket_new.key"
head -c 48 /dev/urandom >"$WORK/ticket_old.key"
head -c 48 /dev/urandom >"$WORK/t2.key"

SSLKEYLOGFILE="$WORK/keys.txt" start_dataplane "$DATAPLANE" --cert="$WORK/server.pem" \
  --key="$WORK/server.key" --host-key="$WORK/host.key" --ticket-key="$WORK/ticket_new.key" \
  --ticket-key="$WORK/ticket_old.key"

# trusted_get NAME CA: our client, verifying the server against CA.
trusted_get() {
  timeout 30 "$CLIENT" --timeout=20 --ca="$WORK/$2.pem" --verify-synthetic \
    "https://127.0.0.1:$PORT/1000" >"$WORK/$1.log" 2>&1
}

mkdir -p "$WORK/long"
timeout 120 gtlsclient --quiet --exit-on-all-streams-close --download="$WORK/long" \
  127.0.0.1 "$PORT" "https://127.0.0.1:$PORT/200000000" >"$WORK/long.log" 2>&1 &
long=$!

trusted_get before_a a || fail "a client trusting A could not connect before the reload"
trusted_get before_b b && fail "a client trusting B connected before the reload"
gtls_run ticket --no-quic-dump --no-http-dump --session-file="$WORK/session" \
  --tp-file="$WORK/tp" -- "https://127.0.0.1:$PORT/1000"

# Reload onto B, the ticket key rotated: the new key first, the old second.
cp "$WORK/b.pem" "$WORK/server.pem"
cp "$WORK/b.key" "$WORK/server.key"
cp "$WORK/ticket_new.key" "$WORK/ticket_old.key"
cp "$WORK/t2.key" "$WORK/ticket_new.key"
kill -HUP "$SERVER_PID"
await_line dataplane "$SERVER_PID" "$WORK/server.log" "reloaded on SIGHUP" 10
sleep 0.3  # every shard applies it within one loop iteration (at most 100 ms)
trusted_get after_b b || fail "a client trusting B could not connect after the reload"
trusted_get after_a a && fail "a client trusting A connected after the reload"

early_before=$(grep -c "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/keys.txt")
rm -rf "$WORK/download"
gtls_run early --no-http-dump --session-file="$WORK/session" --tp-file="$WORK/tp" \
  -- "https://127.0.0.1:$PORT/100000"
expect_synthetic "$WORK/download/100000" 100000
early_after=$(grep -c "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/keys.txt")
[[ $early_after -eq $((early_before + 1)) ]] ||
  fail "a ticket from before the rotation did not carry 0-RTT ($early_before -> $early_after)"

# A junk certificate: the running configuration stays.
echo "not a certificate" >"$WORK/server.pem"
kill -HUP "$SERVER_PID"
await_line dataplane "$SERVER_PID" "$WORK/server.log" "SIGHUP: the running configuration stays" 10
[[ $(grep -c "SIGHUP: the running configuration stays" "$WORK/server.log") -eq 1 ]] ||
  fail "expected one line about the bad reload"
grep "SIGHUP: the running configuration stays" "$WORK/server.log" | grep -q "server.pem" ||
  fail "the bad-reload line does not name the file"
trusted_get still_b b || fail "B is no longer served after a bad reload"

wait "$long" || fail "the long download failed across the reloads (rc $?)"
expect_synthetic "$WORK/long/200000000" 200000000
stop_dataplane
echo "reload on SIGHUP: ok"
