#!/usr/bin/env bash
# quicload --handshake-only (exactly N handshakes, each closed with NO_ERROR
# once confirmed) and session resumption with and without 0-RTT.
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

start_dataplane "$DATAPLANE"

run_quicload handshakes 0 --handshake-only --connections=4 --requests=200 "https://127.0.0.1:$PORT/"
expect_json handshakes handshakes 200
expect_json handshakes handshakes_failed 0
expect_json handshakes mode handshakes
expect_no_errors handshakes
expect_json_at_least handshakes handshakes_per_sec 1

# Resumption: the first connection fetches a ticket, the 9 after it resume.
run_quicload resume 0 --resume --connections=1 --per-connection=1 --requests=10 \
  "https://127.0.0.1:$PORT/1000"
expect_json resume requests_ok 10
expect_json resume handshakes 10
expect_json resume resumed 9
expect_json resume zero_rtt_accepted 0

# 0-RTT: the requests of the resumed connections go in early data.
run_quicload zero_rtt 0 --0rtt --connections=2 --per-connection=1 --requests=12 \
  "https://127.0.0.1:$PORT/2000"
expect_json zero_rtt requests_ok 12
expect_json zero_rtt bytes_received 24000
expect_json_at_least zero_rtt resumed 5
expect_json_at_least zero_rtt zero_rtt_accepted 5

# Handshakes with resumption.
run_quicload resumed_handshakes 0 --handshake-only --resume --connections=2 --requests=50 \
  "https://127.0.0.1:$PORT/"
expect_json resumed_handshakes handshakes 50
expect_json_at_least resumed_handshakes resumed 40

stop_dataplane
total=$(server_total handshakes)
[[ $total -eq $((200 + 10 + 12 + 50)) ]] || fail "the server counted $total handshakes"
echo "quicload handshakes: ok"
