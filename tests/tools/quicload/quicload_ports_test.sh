#!/usr/bin/env bash
# quicload's source ports: by default every connection sends from a UDP port
# of its own, so the server (its qlog) sees as many client ports as
# connections; --shared-port gives one. Sockets are closed as connections
# end: 400 connections one after the other run under an open-file limit of
# 128. A limit too low for --connections is a one-line error and exit 2.
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

# client_ports NAME: the distinct client ports in the qlog of the server
# just stopped (its connection_started events: dst is the client).
client_ports() {
  qlog_events "$WORK/qlog-$1" | grep -o '"name":"connectivity:connection_started".*' |
    grep -o '"dst_port":[0-9]*' | sort -u | wc -l
}

# serve_and_load NAME [quicload flags...]: a server with a qlog directory of
# its own, quicload against it (it must exit 0), then the server stops.
serve_and_load() {
  local name=$1
  shift
  mkdir -p "$WORK/qlog-$name"
  start_dataplane "$DATAPLANE" --qlog-dir="$WORK/qlog-$name"
  run_quicload "$name" 0 --no-progress "$@" "https://127.0.0.1:$PORT/5000"
  stop_dataplane
}

# 12 connections (more than the shard reads by trying each socket: it
# polls them with epoll), 4 requests each.
serve_and_load own --connections=12 --streams=2 --requests=48
expect_json own requests_ok 48
expect_json own handshakes 12
expect_json own source_ports 12
expect_no_errors own
[[ $(client_ports own) -eq 12 ]] || fail "the server saw $(client_ports own) client ports, not 12"
grep -q "^  source ports   12$" "$WORK/own.log" || fail "own: no human report line"

serve_and_load shared --shared-port --connections=12 --streams=2 --requests=48
expect_json shared requests_ok 48
expect_json shared source_ports 1
[[ $(client_ports shared) -eq 1 ]] || fail "the server saw $(client_ports shared) client ports, not 1"

# 400 connections of one request each, 4 at a time, under 128 open files:
# a socket kept after its connection would run out of descriptors within
# a hundred connections and stall the run.
cat >"$WORK/limited" <<WRAPPER
#!/usr/bin/env bash
ulimit -n 128 && exec "$QUICLOAD" "\$@"
WRAPPER
chmod +x "$WORK/limited"
start_dataplane "$DATAPLANE"
QUICLOAD="$WORK/limited" run_quicload churn 0 --no-progress --connections=4 --per-connection=1 \
  --requests=400 "https://127.0.0.1:$PORT/1000"
expect_json churn requests_ok 400
expect_json churn handshakes 400
expect_no_errors churn
expect_json_at_least churn source_ports 8

# More connections than the limit allows: refused at start, unless they
# share a port.
QUICLOAD="$WORK/limited" run_quicload toomany 2 --connections=200 "https://127.0.0.1:$PORT/1000"
[[ $(wc -l <"$WORK/toomany.log") -eq 1 ]] || fail "toomany: $(cat "$WORK/toomany.log")"
grep -q "^quicload: --connections=200 needs 264 open files (a UDP socket per connection) but RLIMIT_NOFILE allows 128: raise the limit (ulimit -n) or use --shared-port$" \
  "$WORK/toomany.log" || fail "toomany: $(cat "$WORK/toomany.log")"
QUICLOAD="$WORK/limited" run_quicload sharedmany 0 --no-progress --shared-port --connections=200 \
  "https://127.0.0.1:$PORT/1000"
expect_json sharedmany requests_ok 200
stop_dataplane
echo "quicload ports: ok"
