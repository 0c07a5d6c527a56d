#!/usr/bin/env bash
# Our client starts in QUIC v2 (RFC 9369, 0x6b3343cf); gtlsserver (ngtcp2
# 0.12.1) speaks only v1 and v2 draft, so it answers with Version
# Negotiation. The client must start again in v1, the version the packet
# lists (RFC 9368 §2.1). ngtcp2 0.12.1 sends its version information under
# the draft codepoint 0xff73db, not RFC 9368's 0x11, so after acting on the
# Version Negotiation our client cannot rule out a downgrade and must close
# with VERSION_NEGOTIATION_ERROR (0x11, RFC 9368 §4). That is what this test
# expects: the exchange cannot complete with this server version; a v1 start
# works (gtlsserver_handshake_test).
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 1000
start_gtlsserver
timeout 50 "$CLIENT" --timeout=20 --version=2 "https://127.0.0.1:$PORT/file" >"$WORK/client.log" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "dpquic_client exited $rc, expected 1 (downgrade not ruled out)"
expect_client_line "^connection 1: version negotiation from 0x6b3343cf to 0x00000001$"
[[ $(grep -c "version negotiation from" "$WORK/client.log") -eq 1 ]] || fail "more than one negotiation"
expect_client_line "^connection 1: closed with code 0x11$"
expect_client_line "^https://127.0.0.1:$PORT/file: FAILED: request failed \(.*, code 17\)$"
stop_gtlsserver
echo "gtlsserver version negotiation: VN, v1 attempt, VERSION_NEGOTIATION_ERROR as expected"
