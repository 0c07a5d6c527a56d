# A fleet in network namespaces, for the fleet tests (tests/dataplane/fleet)
# and tools/bench/fleet_bench.sh: a client, a router running docs/fleet.nft
# and three hosts, each namespace created by the caller's process and
# deleted when it exits (root, no Bazel sandbox):
#
#   client 10.0.0.2 -- 10.0.0.1 router 10.0.1.254 (bridge) -- host N 10.0.1.N
#
# Clients reach the service at $SERVICE:$SERVICE_PORT through the router,
# whose nftables DNAT picks the host (docs/fleet.md); hosts route their
# replies back through it. Every host runs `dataplane --server-id=0N` with
# the same --host-key, --ticket-key and certificate.
#
#   source fleet_lib.sh; fleet_start NAME RULESET DATAPLANE
#   host_start N [flags...]; fetch LOG SIZE [gtlsclient flags...]
set -uo pipefail
[[ $EUID -eq 0 ]] || { echo "FAIL: needs root (ip netns)"; exit 1; }

SERVICE=192.0.2.10
SERVICE_PORT=443
PIDS=()
HOST_PID=(0 0 0 0)  # by host number
NAMESPACES=()

fleet_cleanup() {
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
  [[ -n ${EAL_PREFIX:-} ]] && rm -rf "/var/run/dpdk/$EAL_PREFIX"
  rm -rf "$WORK"
}

fail() {
  echo "FAIL: $*"
  for log in "$WORK"/*.log; do
    [[ -f $log ]] && { echo "--- $log (last 30 lines)"; tail -n 30 "$log"; }
  done
  exit 1
}

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
in_client() { in_ns "$CLIENT_NS" "$@"; }
in_router() { in_ns "$ROUTER_NS" "$@"; }
in_host() { local n=$1; shift; in_ns "${HOST_NS[$n]}" "$@"; }
# spawn NS LOG COMMAND...: COMMAND in the background in NS, output appended
# to LOG; SPAWNED is its PID (ip netns exec execs it), killed on exit.
spawn() {
  local ns=$1 log=$2
  shift 2
  ip netns exec "$ns" "$@" >>"$log" 2>&1 &
  SPAWNED=$!
  PIDS+=("$SPAWNED")
}

# veth_pair NS_A NAME_A NS_B NAME_B: a veth pair between two namespaces.
veth_pair() {
  ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" || fail "veth $2-$4"
  in_ns "$1" ip link set "$2" up && in_ns "$3" ip link set "$4" up || fail "veth up"
}

# fleet_start NAME RULESET DATAPLANE: the namespaces and links, the
# ruleset loaded in the router, the fleet's keys in $WORK; cleanup on exit.
fleet_start() {
  local name=$1
  RULESET=$2
  DATAPLANE=$3
  WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/$name.XXXXXX")
  trap fleet_cleanup EXIT
  CLIENT_NS="${name}_c_$$"
  ROUTER_NS="${name}_r_$$"
  HOST_NS=("" "${name}_1_$$" "${name}_2_$$" "${name}_3_$$")
  for ns in "$CLIENT_NS" "$ROUTER_NS" "${HOST_NS[@]:1}"; do
    ip netns add "$ns" || fail "ip netns add $ns"
    NAMESPACES+=("$ns")
    in_ns "$ns" ip link set lo up || fail "lo up in $ns"
  done
  veth_pair "$CLIENT_NS" eth0 "$ROUTER_NS" client0
  in_client ip addr add 10.0.0.2/24 dev eth0 || fail "client address"
  in_client ip route add default via 10.0.0.1 || fail "client route"
  in_router ip addr add 10.0.0.1/24 dev client0 || fail "router address"
  in_router ip link add br0 type bridge || fail "bridge"
  in_router ip addr add 10.0.1.254/24 dev br0 || fail "bridge address"
  in_router ip link set br0 up || fail "bridge up"
  for n in 1 2 3; do
    veth_pair "${HOST_NS[$n]}" eth0 "$ROUTER_NS" "host$n"
    in_router ip link set "host$n" master br0 || fail "host$n on the bridge"
  done
  in_router sysctl -qw net.ipv4.ip_forward=1 || fail "ip_forward"
  in_router nft -f "$RULESET" || fail "nft -f $RULESET"
  for n in 1 2 3; do
    if [[ $n == "${DPDK_HOST:-0}" ]]; then
      # The engine owns 10.0.1.N on its TAP port, bridged to eth0 here
      # (dpdk_host_start); the namespace's kernel keeps 10.0.1.1N.
      in_host "$n" ip link add hostbr address "02:00:00:00:03:0$n" type bridge ||
        fail "host $n bridge"
      in_host "$n" ip link set eth0 master hostbr || fail "host $n eth0 on the bridge"
      in_host "$n" ip addr add "10.0.1.1$n/24" dev hostbr || fail "host $n address"
      in_host "$n" ip link set hostbr up || fail "host $n bridge up"
    else
      in_host "$n" ip addr add "10.0.1.$n/24" dev eth0 || fail "host $n address"
    fi
    in_host "$n" ip route add default via 10.0.1.254 || fail "host $n route"
  done
  head -c 32 /dev/urandom >"$WORK/host.key"
  head -c 80 /dev/urandom >"$WORK/ticket.key"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout "$WORK/key.pem" \
    -out "$WORK/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a certificate"
}

# await_log FILE TEXT PID WHAT [SKIP]: TEXT in FILE past its first SKIP
# lines (those of an earlier process) within 10 s, PID still alive.
await_log() {
  for _ in $(seq 100); do
    tail -n "+$((${5:-0} + 1))" "$1" 2>/dev/null | grep -q "$2" && return 0
    kill -0 "$3" 2>/dev/null || fail "$4 exited at start"
    sleep 0.1
  done
  fail "$4: no '$2' within 10 s"
}

# host_start N [flags...]: kernel-UDP dataplane on host N, server ID 0N,
# the fleet's keys and certificate, metrics on 10.0.1.N:9100, a 5 s drain;
# output appended to hostN.log, TLS secrets to hostN.keys.
host_start() {
  local n=$1 before
  shift
  before=$(cat "$WORK/host$n.log" 2>/dev/null | wc -l)
  spawn "${HOST_NS[$n]}" "$WORK/host$n.log" env SSLKEYLOGFILE="$WORK/host$n.keys" "$DATAPLANE" \
    --listen="10.0.1.$n:$SERVICE_PORT" --cores=1 --server-id="0$n" --host-key="$WORK/host.key" \
    --ticket-key="$WORK/ticket.key" --cert="$WORK/cert.pem" --key="$WORK/key.pem" \
    --metrics="10.0.1.$n:9100" --drain-timeout=5 "$@"
  HOST_PID[$n]=$SPAWNED
  await_log "$WORK/host$n.log" "server ID 0$n" "${HOST_PID[$n]}" "host $n" "$before"
}

# dpdk_host_start N [flags...]: as host_start, on the DPDK backend: a net_tap
# port (a fixed MAC, as a NIC's, so the router's neighbour entry outlives a
# restart) bridged to eth0, the engine at 10.0.1.N; metrics on the
# namespace's kernel address 10.0.1.1N. One busy-polling lcore.
dpdk_host_start() {
  local n=$1 before
  shift
  before=$(cat "$WORK/host$n.log" 2>/dev/null | wc -l)
  EAL_PREFIX="fleet_$$"
  local eal="--no-huge -m 256 --no-pci --no-shconf --file-prefix=$EAL_PREFIX -l 0-1"
  eal+=" --vdev=net_tap0,iface=dpq0,mac=02:00:00:00:01:0$n"
  spawn "${HOST_NS[$n]}" "$WORK/host$n.log" env SSLKEYLOGFILE="$WORK/host$n.keys" "$DATAPLANE" \
    --backend=dpdk --eal="$eal" \
    --ip="10.0.1.$n/24" --gateway=10.0.1.254 --listen="10.0.1.$n:$SERVICE_PORT" \
    --server-id="0$n" --host-key="$WORK/host.key" --ticket-key="$WORK/ticket.key" \
    --cert="$WORK/cert.pem" --key="$WORK/key.pem" --metrics="10.0.1.1$n:9100" --drain-timeout=5 "$@"
  HOST_PID[$n]=$SPAWNED
  await_log "$WORK/host$n.log" "server ID 0$n" "${HOST_PID[$n]}" "host $n (dpdk)" "$before"
  # The kernel's end of the TAP takes a MAC of its own: frames to the
  # engine's must cross the TAP, not stop at this namespace's bridge.
  in_host "$n" ip link set dpq0 address "02:00:00:00:02:0$n" || fail "host $n: dpq0 MAC"
  in_host "$n" ip link set dpq0 master hostbr || fail "host $n: dpq0 on the bridge"
  in_host "$n" ip link set dpq0 up || fail "host $n: dpq0 up"
}

# host_stop N: SIGTERM; the host must drain and exit 0 within 15 s.
host_stop() {
  local n=$1 pid=${HOST_PID[$1]}
  kill -TERM "$pid"
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "host $n did not stop within 15 s of SIGTERM"
  wait "$pid"
  local rc=$?
  [[ $rc -eq 0 ]] || fail "host $n exited $rc on SIGTERM"
}

# host_total N COUNTER: COUNTER from host N's last totals line.
host_total() {
  sed -n "s/.*totals:.* $2=\([0-9]*\).*/\1/p" "$WORK/host$1.log" | tail -n 1
}

# metrics_address N: where host N serves /metrics.
metrics_address() {
  if [[ $1 == "${DPDK_HOST:-0}" ]]; then echo "10.0.1.1$1:9100"; else echo "10.0.1.$1:9100"; fi
}

# host_metric N NAME: the sum of NAME's samples in host N's /metrics now.
host_metric() {
  in_host "$1" python3 - "http://$(metrics_address "$1")/metrics" "$2" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
total = 0
for line in text.splitlines():
    name = line.split("{")[0].split(" ")[0]
    if name == sys.argv[2]:
        total += float(line.rsplit(" ", 1)[1])
print(int(total))
PY
}

# fetch LOG SIZE [gtlsclient flags...]: gtlsclient in the client namespace
# downloads /SIZE from the service into $WORK/download (byte-exact checked),
# its output appended to $WORK/LOG.log; fails unless it exits 0 within 60 s.
fetch() {
  local log=$1 size=$2
  shift 2
  rm -rf "$WORK/download"
  mkdir -p "$WORK/download"
  in_client timeout 60 gtlsclient --exit-on-all-streams-close --download="$WORK/download" \
    --no-quic-dump --no-http-dump "$@" "$SERVICE" "$SERVICE_PORT" \
    "https://$SERVICE:$SERVICE_PORT/$size" >>"$WORK/$log.log" 2>&1 ||
    fail "gtlsclient ($log) exited $?"
  expect_synthetic "$WORK/download/$size" "$size"
}

# early_data_accepted N: how often host N's TLS stack accepted early data.
early_data_accepted() {
  grep -c "^CLIENT_EARLY_TRAFFIC_SECRET " "$WORK/host$1.keys" 2>/dev/null
}

# initial_buckets H1 H2 H3 H4 H5 H6: the hosts (numbers) of the six Initial
# buckets; "1 2 3 1 2 3" is the template's spread.
initial_buckets() {
  local elements="" i=0 n
  for n in "$@"; do
    elements+="${elements:+, }$i : 10.0.1.$n"
    i=$((i + 1))
  done
  in_router nft "delete element ip dpquic_lb initial_hosts { 0, 1, 2, 3, 4, 5 };
    add element ip dpquic_lb initial_hosts { $elements }" || fail "nft: Initial buckets $*"
}

# expect_synthetic FILE N: FILE holds exactly the N generated bytes of
# dataplane/app/synthetic_body.h.
expect_synthetic() {
  python3 - "$1" "$2" <<'PY' || fail "$1 is not the $2 synthetic bytes"
import sys
alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
path, n = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
expected = (alphabet * (n // 64 + 1))[:n]
if data != expected:
    print(f"{path}: {len(data)} bytes, expected the {n} synthetic bytes")
    sys.exit(1)
PY
}
