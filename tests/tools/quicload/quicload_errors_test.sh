#!/usr/bin/env bash
# quicload's failures: nothing listening (every handshake times out, exit 1,
# a clear line), and bad usage (exit 2, one line).
QUICLOAD=$1
source tests/tools/quicload/quicload_lib.sh

# $PORT is free: nobody answers.
run_quicload unreachable 1 --connections=2 --requests=6 --timeout=1 "https://127.0.0.1:$PORT/1000"
expect_json unreachable handshakes 0
expect_json unreachable handshakes_failed 2
expect_json unreachable errors.handshake_timeout 2
expect_json unreachable requests_ok 0
expect_json unreachable requests_failed 6
expect_json unreachable requests_not_sent 6
grep -q "^quicload: 2 handshakes timed out after 1 s: is a server listening on 127.0.0.1:$PORT?$" \
  "$WORK/unreachable.log" || fail "unreachable: $(cat "$WORK/unreachable.log")"

run_quicload unreachable_handshakes 1 --handshake-only --connections=3 --requests=3 \
  --timeout=0.5 "https://[::1]:$PORT/"
expect_json unreachable_handshakes errors.handshake_timeout 3

# A timed run that never connects fails too.
run_quicload silent 1 --duration=1 --timeout=5 "https://127.0.0.1:$PORT/1"
expect_json silent handshakes 0

# Bad usage: exit 2 with one line, and no report.
usage() {  # usage EXPECTED_LINE ARGS...
  local expected=$1
  shift
  local out rc
  out=$(timeout 10 "$QUICLOAD" "$@" 2>&1)
  rc=$?
  [[ $rc -eq 2 ]] || fail "quicload $* exited $rc, expected 2: $out"
  [[ $out == "$expected" ]] || fail "quicload $*: '$out', expected '$expected'"
}
usage "quicload: ftp://127.0.0.1:1/x: expected https:// or perf://" ftp://127.0.0.1:1/x
usage "quicload: https://127.0.0.1/x: missing ':PORT'" https://127.0.0.1/x
usage "quicload: unknown flag --frobnicate (see --help)" --frobnicate https://127.0.0.1:1/x
usage "quicload: --streams=0: expected 1..10000" --streams=0 https://127.0.0.1:1/x
usage "quicload: no URL given (see --help)" --connections=2
usage "quicload: all URLs must name the same server and scheme" \
  https://127.0.0.1:1/x perf://127.0.0.1:1/5
"$QUICLOAD" --help | grep -q "^usage: quicload" || fail "--help"
echo "quicload errors: ok"
