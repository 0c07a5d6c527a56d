#!/usr/bin/env bash
# gtlsclient initiates a 1-RTT key update 100 ms after the handshake, during a
# 20 MB download. The file must be byte-exact; the client must see the update
# confirmed (a packet from the server under the new keys), and the server's
# qlog must record it (security:key_updated, remote_update, generation 1)
# and show the server sending data after it (the update came mid-transfer).
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
# 1452-byte datagrams (no PMTU discovery): with 16 KB ones on loopback the
# download can end before the client's 100 ms timer.
start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog" --max-udp-payload=1452
gtls_run client --no-quic-dump --no-http-dump --key-update=100ms -- "https://127.0.0.1:$PORT/20000000"
expect_synthetic "$WORK/download/20000000" 20000000
grep -q "^Initiate key update$" "$WORK/client.log" || fail "the client did not start a key update"
grep -q "key update confirmed" "$WORK/client.log" || fail "the client saw no key update confirmed"
stop_dataplane

qlog_events "$WORK/qlog" | python3 -c '
import json, sys
updated_at, sent_after = None, 0
for line in sys.stdin:
    event = json.loads(line)
    data = event.get("data", {})
    if event.get("name") == "security:key_updated" and updated_at is None:
        if data.get("trigger") != "remote_update" or data.get("generation") != 1:
            sys.exit(f"unexpected key update: {data}")
        updated_at = event["time"]
    elif event.get("name") == "transport:packet_sent" and updated_at is not None:
        if any(f.get("frame_type") == "stream" for f in data.get("frames", [])):
            sent_after += 1
print(f"key update at {updated_at} ms; stream packets sent after it: {sent_after}")
sys.exit(0 if updated_at is not None and sent_after >= 100 else 1)
' >"$WORK/qlog_check.log" 2>&1 || fail "server qlog: $(cat "$WORK/qlog_check.log")"
echo "gtlsclient key update: ok ($(cat "$WORK/qlog_check.log"))"
