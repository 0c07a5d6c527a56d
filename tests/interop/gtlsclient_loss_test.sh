#!/usr/bin/env bash
# gtlsclient drops 10% of the packets it sends and 10% of those it receives
# (-t 0.1 -r 0.1) while downloading 2 MB from our server: the file must be
# byte-exact, over one connection, and the server's qlog must show it
# detected losses (recovery:packet_lost) and recovered from them.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog"
gtls_get -t 0.1 -r 0.1 -- "https://127.0.0.1:$PORT/2000000"
expect_synthetic "$WORK/download/2000000" 2000000
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"
lost=$(qlog_events "$WORK/qlog" | grep -c '"name":"recovery:packet_lost"')
[[ $lost -ge 10 ]] || fail "the server's qlog records only $lost lost packets"
echo "gtlsclient 10% loss: ok ($lost packets declared lost by the server)"
