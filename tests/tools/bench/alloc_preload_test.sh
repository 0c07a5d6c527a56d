#!/bin/bash
# The LD_PRELOAD allocation counter (//tools/bench:alloc_preload): exact
# counts on a target program, mark and dump signals, the pid guard, and
# real programs (C, C++, threads) running unharmed under it.
#
# Args: PRELOAD_SO ALLOC_COUNT_TARGET
set -euo pipefail

preload=$(realpath "$1")
target=$(realpath "$2")
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/alloc_preload.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# field FILE KEY: the value of KEY in the report's one JSON line.
field() {
  sed -n "s/.*\"$2\": \([a-z0-9]*\).*/\1/p" "$1"
}

# run_target N MODE OUT: the target under the preload, mark on USR1, dump on USR2.
run_target() {
  rm -f "$3" "$3.dump"
  timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$3" \
    DPQUIC_ALLOC_MARK_SIGNAL=SIGUSR1 DPQUIC_ALLOC_DUMP_SIGNAL=USR2 \
    "$target" "$1" "$2" >/dev/null || fail "target $1 $2 exited with $?"
  [[ -s "$3" && -s "$3.dump" ]] || fail "no report for target $1 $2"
}

# Without the preload the target runs and writes nothing.
timeout 60 env DPQUIC_ALLOC_REPORT="$work/none.json" "$target" 1000 malloc >/dev/null \
  || fail "target without the preload"
[[ ! -e "$work/none.json" ]] || fail "a report appeared without the preload"

for mode in malloc new; do
  run_target 1000 "$mode" "$work/a.json"
  run_target 2000 "$mode" "$work/b.json"
  cat "$work/a.json.dump" "$work/a.json"
  # Between the mark and the dump the target makes exactly N allocation calls.
  [[ $(field "$work/a.json.dump" allocations_since_mark) == 1000 ]] || fail "$mode: dump since mark"
  [[ $(field "$work/b.json.dump" allocations_since_mark) == 2000 ]] || fail "$mode: dump since mark"
  [[ $(field "$work/a.json.dump" marked) == true ]] || fail "$mode: marked"
  [[ $(field "$work/a.json.dump" at_exit) == false ]] || fail "$mode: dump at_exit"
  [[ $(field "$work/a.json" at_exit) == true ]] || fail "$mode: exit report at_exit"
  # The same program with 3*1000 more allocation calls counts exactly 3000 more.
  a=$(field "$work/a.json" allocations)
  b=$(field "$work/b.json" allocations)
  [[ $((b - a)) == 3000 ]] || fail "$mode: totals $a and $b differ by $((b - a)), not 3000"
  a_mark=$(field "$work/a.json" allocations_since_mark)
  b_mark=$(field "$work/b.json" allocations_since_mark)
  [[ $((b_mark - a_mark)) == 2000 ]] || fail "$mode: since-mark totals differ by $((b_mark - a_mark))"
  (( a_mark >= 2000 && a_mark < a )) || fail "$mode: since mark $a_mark of $a"
done

# No mark signal: since_mark is the total and marked is false.
rm -f "$work/c.json"
timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$work/c.json" \
  "$target" 10 malloc >/dev/null || fail "target without signals"
[[ $(field "$work/c.json" marked) == false ]] || fail "unmarked report"
[[ $(field "$work/c.json" allocations) == $(field "$work/c.json" allocations_since_mark) ]] \
  || fail "unmarked since_mark"

# "%p" names the file after the pid; a fork()ed subshell that exits does not
# overwrite its parent's report.
timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$work/sh.%p.json" \
  /bin/bash -c '( : ); x=$( echo sub ); echo "$$" > '"$work/sh.pid" || fail "bash under the preload"
shell_pid=$(cat "$work/sh.pid")
[[ -s "$work/sh.$shell_pid.json" ]] || fail "no report named after pid $shell_pid"
[[ $(field "$work/sh.$shell_pid.json" pid) == "$shell_pid" ]] || fail "report pid"
[[ $(ls "$work" | grep -c '^sh\..*\.json$') == 1 ]] || fail "a forked child wrote a report"

# Real programs keep working: C (/bin/true), ngtcp2's gtlsserver (C++ and
# GnuTLS), and threaded Python.
timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$work/true.json" /bin/true \
  || fail "/bin/true under the preload"
[[ -s "$work/true.json" ]] || fail "no report from /bin/true"

gtlsserver=$(command -v gtlsserver || echo /usr/sbin/gtlsserver)
[[ -x "$gtlsserver" ]] || fail "gtlsserver not installed"
expected_status=0
timeout 60 "$gtlsserver" --help >"$work/help.plain" 2>&1 || expected_status=$?
status=0
timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$work/gtls.json" \
  "$gtlsserver" --help >"$work/help.preload" 2>&1 || status=$?
[[ $status == "$expected_status" ]] || fail "gtlsserver --help: status $status, $expected_status without"
cmp -s "$work/help.plain" "$work/help.preload" || fail "gtlsserver --help output changed"
(( $(field "$work/gtls.json" allocations) > 0 )) || fail "gtlsserver: no allocations counted"
cat "$work/gtls.json"

timeout 60 env LD_PRELOAD="$preload" DPQUIC_ALLOC_REPORT="$work/py.json" /usr/bin/python3 -c '
import threading
def work():
    for i in range(20000):
        bytearray(100 + i % 1000)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
' || fail "python3 with threads under the preload"
(( $(field "$work/py.json" allocations) > 0 )) || fail "python3: no allocations counted"
cat "$work/py.json"

echo PASS
