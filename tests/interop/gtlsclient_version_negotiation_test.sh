#!/usr/bin/env bash
# Version negotiation (RFC 9000 §6, RFC 9368). 1: gtlsclient starts with
# QUIC v2 draft (0x709a50c4), which our server does not speak: the server
# must send Version Negotiation, and the client then connects with v1 (its
# next preferred version) and downloads 1 MB byte-exact (ngtcp2 would close
# the connection if the server's version_information contradicted the VN
# packet: RFC 9368 downgrade protection). 2: gtlsclient starts with v1 but lists v2 draft first in
# version_information: our server must stay on v1 (it cannot choose a
# version it does not support), without a Version Negotiation.
# (ngtcp2 0.12.1 knows only v1 and v2 draft, not QUIC v2 (0x6b3343cf): it
# aborts if --other-versions names 0x6b3343cf, so compatible negotiation to
# v2 cannot be tried with it.)
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog"
gtls_run vn --no-http-dump -v v2draft --preferred-versions=v2draft,v1 \
  -- "https://127.0.0.1:$PORT/1000000"
expect_synthetic "$WORK/download/1000000" 1000000
grep -q " pkt rx pkn=0 .* version=0x00000000 type=VN " "$WORK/vn.log" ||
  fail "the client received no Version Negotiation"
grep -q "^Client selected version 0x1$" "$WORK/vn.log" || fail "the client did not select v1"
grep -q "the negotiated version is 0x00000001" "$WORK/vn.log" || fail "v1 was not negotiated"
rm "$WORK/download/1000000"
gtls_run compatible --no-quic-dump --no-http-dump -v v1 --other-versions=v2draft,v1 \
  -- "https://127.0.0.1:$PORT/1000000"
expect_synthetic "$WORK/download/1000000" 1000000
grep -q "the negotiated version is 0x00000001" "$WORK/compatible.log" || fail "v1 was not kept"
stop_dataplane
[[ $(server_total version_negotiations) -eq 1 ]] ||
  fail "expected 1 version negotiation, got $(server_total version_negotiations)"
[[ $(server_total handshakes) -eq 2 ]] || fail "expected 2 handshakes, got $(server_total handshakes)"
chosen=$(qlog_events "$WORK/qlog" | grep -c '"name":"transport:version_information","data":{"chosen_version":"00000001"}')
[[ $chosen -eq 2 ]] || fail "the server's qlog shows v1 chosen $chosen times (expected 2)"
echo "gtlsclient version negotiation: ok"
