#!/usr/bin/env bash
# NAT rebinding of our client, as a NAT would cause it: a small UDP relay
# between our client and gtlsserver forwards the client's datagrams from one
# port, then (once 500 kB went down) from a new port, without the client
# knowing. gtlsserver sees the client's address change (RFC 9000 §9.3) and
# validates the new path; our client, whose path did not change, must answer
# the PATH_CHALLENGE on its path and keep going. The 4 MB download must
# arrive byte for byte, and the server must have sent to the new port.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

htdocs_file file 4000000
start_gtlsserver
RELAY_PORT=$(free_port)
timeout 40 python3 - "$RELAY_PORT" "$PORT" "$WORK/relay.stats" >"$WORK/relay.log" 2>&1 <<'PY' &
import selectors, signal, socket, sys, time
relay_port, server_port, stats_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
server = ("127.0.0.1", server_port)
def udp(port=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("127.0.0.1", port))
    s.setblocking(False)
    return s
front, upstream = udp(relay_port), [udp()]
client = None
down_bytes = 0
to_new_port = 0
def finish(*_):
    with open(stats_path, "w") as f:
        f.write(f"rebound {int(len(upstream) > 1)} ports {upstream[0].getsockname()[1]}")
        f.write(f" {upstream[-1].getsockname()[1]} server_datagrams_to_new_port {to_new_port}\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, finish)
selector = selectors.DefaultSelector()
selector.register(front, selectors.EVENT_READ)
selector.register(upstream[0], selectors.EVENT_READ)
while True:
    for key, _ in selector.select(timeout=1):
        sock = key.fileobj
        while True:
            try:
                data, source = sock.recvfrom(65535)
            except BlockingIOError:
                break
            if sock is front:
                client = source
                upstream[-1].sendto(data, server)
            elif source == server and client is not None:
                if sock is upstream[-1] and len(upstream) > 1:
                    to_new_port += 1
                down_bytes += len(data)
                front.sendto(data, client)
        if len(upstream) == 1 and down_bytes >= 500_000:
            # The rebinding: from now on the client's datagrams leave from a
            # new port; late ones for the old port are still delivered.
            upstream.append(udp())
            selector.register(upstream[-1], selectors.EVENT_READ)
PY
RELAY_PID=$!
# timeout passes SIGTERM on to the relay; cleanup then does the rest.
trap 'kill -TERM "$RELAY_PID" 2>/dev/null; cleanup' EXIT
sleep 0.3
kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay did not start"
dpquic_get "$CLIENT" -- "https://127.0.0.1:$RELAY_PORT/file"
kill -TERM "$RELAY_PID"
wait "$RELAY_PID"
expect_same file
# The client saw no migration of its own: its path stayed as it was.
expect_client_line "^connection 1: .*, migrated no$"
read -r _ rebound _ old_port new_port _ to_new <"$WORK/relay.stats" || fail "no relay stats"
[[ $rebound -eq 1 && $old_port -ne $new_port ]] || fail "the relay did not rebind: $(cat "$WORK/relay.stats")"
[[ $to_new -ge 100 ]] || fail "gtlsserver sent only $to_new datagrams to the new port"
stop_gtlsserver
echo "gtlsserver NAT rebinding: ok ($(cat "$WORK/relay.stats"))"
