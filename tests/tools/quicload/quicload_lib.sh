# Shared by quicload's sh_tests: our server on a free loopback port (from
# tests/interop/interop_lib.sh: free_port, start_dataplane, stop_dataplane,
# server_total, fail, cleanup by PID), quicload bounded by a timeout, and
# reading its JSON report.
source tests/interop/interop_lib.sh

# A free loopback UDP port below the ephemeral range: a client opening
# sockets (one per connection) while no server holds the port never takes it.
port_below_ephemeral() {
  python3 - <<'PY'
import random, socket
for _ in range(200):
    port = random.randrange(20000, 32000)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
PY
}

# run_quicload NAME EXPECTED_RC [flags...] URL...: quicload with --json into
# $WORK/NAME.json, its output in $WORK/NAME.log; fails unless it exits with
# EXPECTED_RC within 60 s.
run_quicload() {
  local name=$1 expected=$2
  shift 2
  timeout 60 "$QUICLOAD" --json="$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  [[ $rc -eq $expected ]] || fail "quicload ($name) exited $rc, expected $expected"
}

# json_value NAME KEY: a value of $WORK/NAME.json; KEY may be errors.mismatch.
json_value() {
  python3 - "$WORK/$1.json" "$2" <<'PY' || fail "$1.json: no $2"
import json, sys
value = json.load(open(sys.argv[1]))
for part in sys.argv[2].split("."):
    value = value[part]
print(value)
PY
}

# expect_json NAME KEY VALUE: the report of NAME says KEY = VALUE.
expect_json() {
  local value
  value=$(json_value "$1" "$2")
  [[ $value == "$3" ]] || fail "$1: $2 = $value, expected $3 (log: $(tail -n 12 "$WORK/$1.log"))"
}

# expect_json_at_least NAME KEY MIN (numbers, integer or not)
expect_json_at_least() {
  local value
  value=$(json_value "$1" "$2")
  python3 -c "import sys; sys.exit(0 if float('$value') >= float('$3') else 1)" ||
    fail "$1: $2 = $value, expected at least $3"
}

# expect_no_errors NAME: every error kind is 0.
expect_no_errors() {
  for kind in handshake_timeout refused reset mismatch closed protocol status; do
    expect_json "$1" "errors.$kind" 0
  done
}
