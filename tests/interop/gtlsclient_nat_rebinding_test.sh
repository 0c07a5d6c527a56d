#!/usr/bin/env bash
# gtlsclient simulates a NAT rebinding (--change-local-addr --nat-rebinding:
# it sends from a new port without validating the path) 100 ms after the
# handshake, in the middle of a 60 MB download (late enough for slow start to
# be well under way on a loaded machine). The request also uploads a
# 20 MB body (the server ignores it): ngtcp2 0.12.1 drops the packets that
# still reach its old port, so a client that only receives would fall
# silent after the rebinding and never show the server its new address;
# the upload keeps it sending. The download must be byte-exact, most of it
# received on the new port, the client must not have validated the path,
# and the server must have validated the new address itself (its qlog: a
# PATH_RESPONSE echoing one of its PATH_CHALLENGEs), sending at most 6
# challenges in all.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
head -c 20000000 /dev/zero >"$WORK/body"
start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog"
gtls_run client --no-quic-dump --no-http-dump -d "$WORK/body" --change-local-addr=100ms \
  --nat-rebinding -- "https://127.0.0.1:$PORT/60000000"
expect_synthetic "$WORK/download/60000000" 60000000
expect_client_moved "$WORK/client.log"
grep -q "^Path validation" "$WORK/client.log" && fail "the client validated a path (not a rebinding)"
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"

qlog_events "$WORK/qlog" | python3 -c '
import json, sys
challenges, echoed = set(), 0
for line in sys.stdin:
    event = json.loads(line)
    for f in event.get("data", {}).get("frames", []):
        if event.get("name") == "transport:packet_sent" and f.get("frame_type") == "path_challenge":
            challenges.add(f["data"])
        if event.get("name") == "transport:packet_received" and f.get("frame_type") == "path_response":
            echoed += f["data"] in challenges
print(f"server PATH_CHALLENGEs: {len(challenges)}, answered: {echoed}")
# Two validations at most (the new address, and the old one re-checked,
# RFC 9000 section 9.3.3), each of at most 3 challenges: a dead old address
# is not flooded with a challenge per declared loss.
sys.exit(0 if echoed >= 1 and len(challenges) <= 6 else 1)
' >"$WORK/qlog_check.log" 2>&1 || fail "server qlog: $(cat "$WORK/qlog_check.log")"
echo "gtlsclient NAT rebinding: ok ($OLD_PACKETS packets before, $NEW_PACKETS after; $(cat "$WORK/qlog_check.log"))"
