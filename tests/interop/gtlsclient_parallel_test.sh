#!/usr/bin/env bash
# gtlsclient sends 20 requests at once on one connection (/101000 .. /120000,
# so every file name differs); each file must be its synthetic bytes, the
# server must count one handshake, and its qlog must show all 20 requests
# arriving before it finished any response (they were in parallel).
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/qlog"
start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog"
urls=()
for i in $(seq 1 20); do urls+=("https://127.0.0.1:$PORT/$((100000 + i * 1000))"); done
gtls_get -- "${urls[@]}"
for i in $(seq 1 20); do
  expect_synthetic "$WORK/download/$((100000 + i * 1000))" $((100000 + i * 1000))
done
stop_dataplane
[[ $(server_total handshakes) -eq 1 ]] || fail "expected 1 handshake, got $(server_total handshakes)"

qlog_events "$WORK/qlog" | python3 -c '
import json, sys
requests, first_response_end = set(), None
for line in sys.stdin:
    event = json.loads(line)
    frames = event.get("data", {}).get("frames", [])
    for f in frames:
        if f.get("frame_type") != "stream" or f["stream_id"] % 4 != 0:
            continue
        if event.get("name") == "transport:packet_received" and f.get("fin"):
            if first_response_end is None:
                requests.add(f["stream_id"])
        if event.get("name") == "transport:packet_sent" and f.get("fin") and first_response_end is None:
            first_response_end = event["time"]
print(f"requests received before the first response ended: {len(requests)}")
sys.exit(0 if len(requests) == 20 else 1)
' >"$WORK/qlog_check.log" 2>&1 || fail "requests were not in parallel: $(cat "$WORK/qlog_check.log")"
echo "gtlsclient parallel: ok"
