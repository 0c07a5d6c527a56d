# Shared by the tests that run a DPDK net_tap port inside a network
# namespace they create (root, no Bazel sandbox): the namespace, a work
# directory, the processes to kill, and cleanup that deletes the namespace
# whatever happens.
#
#   source netns_lib.sh; netns_start NAME
#   ip netns exec "$NS" PROGRAM ... &   # $! is the program itself
#   PIDS+=($!)
set -uo pipefail
[[ $EUID -eq 0 ]] || { echo "FAIL: needs root (ip netns, /dev/net/tun)"; exit 1; }

PIDS=()
netns_cleanup() {
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  ip netns del "$NS" 2>/dev/null
  rm -rf "$WORK" "/var/run/dpdk/$PREFIX"
}

fail() {
  echo "FAIL: $*"
  for log in "$WORK"/*.log; do
    [[ -f $log ]] && { echo "--- $log (last 40 lines)"; tail -n 40 "$log"; }
  done
  exit 1
}

in_ns() { ip netns exec "$NS" "$@"; }

# netns_start NAME: namespace NS and EAL file prefix PREFIX unique to this
# process, loopback up, WORK created, cleanup on exit.
netns_start() {
  NS="$1_$$"
  PREFIX="$1_$$"
  WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/$1.XXXXXX")
  trap netns_cleanup EXIT
  ip netns add "$NS" || fail "ip netns add"
  in_ns ip link set lo up || fail "lo up"
}

# await_log FILE TEXT PID WHAT: TEXT in FILE within 10 s, PID still alive.
await_log() {
  for _ in $(seq 100); do
    grep -q "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || fail "$4 exited at start"
    sleep 0.1
  done
  fail "$4: no '$2' within 10 s"
}

# stop_by_signal SIGNAL PID WHAT: the process must exit 0 within 10 s.
stop_by_signal() {
  kill "-$1" "$2"
  for _ in $(seq 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$2" 2>/dev/null && fail "$3 did not stop on SIG$1"
  wait "$2"
  local rc=$?
  [[ $rc -eq 0 ]] || fail "$3 exited $rc after SIG$1"
}
