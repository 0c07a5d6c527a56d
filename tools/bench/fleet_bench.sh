#!/usr/bin/env bash
# The fleet of docs/fleet.md against one host, side by side on this machine
# (`bazel run //tools/bench:fleet_bench -- [SECONDS] [ROUNDS]`, as root):
# namespaces built by tools/fleet/fleet_lib.sh, quicload in the client's
# namespace through the nftables router to one kernel-UDP host (every
# Initial bucket on host 1, the others not started) or to three. Rounds
# alternate one host and three, each in a fleet of its own (so no
# conntrack entry of one phase pins a flow of the next to a stopped host),
# each measuring
#  - handshakes per second: --handshake-only, 32 connections in flight;
#  - goodput: 12 connections downloading 10 MB bodies back to back;
# for SECONDS each (default 10), ROUNDS rounds (default 3), with the cores
# busy on average: the whole machine (router and kernel included), the
# hosts and quicload. Prints the medians, the ratio three hosts : one, and a
# Markdown table for BENCHMARKS.md. Every process it starts is bounded by
# --duration and killed at exit; the namespaces are deleted.
set -uo pipefail
RUNFILES=${RUNFILES_DIR:-$0.runfiles}/dpquic
SECONDS_EACH=${1:-10}
ROUNDS=${2:-3}
[[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -ge 2 && $SECONDS_EACH -le 120 ]] ||
  { echo "fleet_bench: SECONDS must be 2..120, not '$SECONDS_EACH'" >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 && $ROUNDS -le 10 ]] ||
  { echo "fleet_bench: ROUNDS must be 1..10, not '$ROUNDS'" >&2; exit 2; }
[[ $EUID -eq 0 ]] || { echo "fleet_bench: needs root (ip netns)" >&2; exit 2; }
QUICLOAD=$RUNFILES/tools/quicload/quicload

# cpu_jiffies: the machine's busy jiffies (all but idle and iowait), then
# the hosts' (user + system of the running dataplanes).
cpu_jiffies() {
  local busy hosts=0 n
  busy=$(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)
  for n in 1 2 3; do
    [[ ${HOST_PID[$n]} != 0 && -r /proc/${HOST_PID[$n]}/stat ]] || continue
    hosts=$((hosts + $(awk '{print $14 + $15}' "/proc/${HOST_PID[$n]}/stat")))
  done
  echo "$busy $hosts"
}

# load NAME KEY [quicload flags...]: one quicload run; RESULT is KEY of its
# report, then the CPU seconds per second of load (--duration; quicload's
# start and its wait for the last connections count too) of the machine,
# the hosts and quicload. (No command substitution: fail must end the script.)
load() {
  local name=$1 key=$2 before after
  shift 2
  before=$(cpu_jiffies)
  in_client timeout $((SECONDS_EACH + 30)) /usr/bin/time -f "%U %S %e" -o "$WORK/$name.time" \
    "$QUICLOAD" --duration="$SECONDS_EACH" --no-progress --json="$WORK/$name.json" "$@" \
    >"$WORK/$name.log" 2>&1 || fail "quicload ($name) exited $?"
  after=$(cpu_jiffies)
  RESULT=$(python3 - "$WORK/$name.json" "$key" "$WORK/$name.time" "$before" "$after" \
    "$SECONDS_EACH" <<'PY'
import json, os, sys
report, key, timing, before, after, seconds = sys.argv[1:]
user, system, _ = map(float, open(timing).read().split()[-3:])
load = float(seconds) * os.sysconf("SC_CLK_TCK")
(busy0, hosts0), (busy1, hosts1) = map(int, before.split()), map(int, after.split())
print(json.load(open(report))[key], (busy1 - busy0) / load, (hosts1 - hosts0) / load,
      (user + system) * os.sysconf("SC_CLK_TCK") / load)
PY
  ) || fail "no $key in $WORK/$name.json"
}

# measure HOSTS ROUND: a fleet of its own, both loads against HOSTS (1 or
# 3) hosts, a line appended to $FLEET_BENCH_RESULTS.
measure() {
  local hosts=$1 round=$2 n hs gp
  source "$RUNFILES/tools/fleet/fleet_lib.sh"
  fleet_start fleet_bench "$RUNFILES/docs/fleet.nft" "$RUNFILES/dataplane/dataplane"
  URL="https://$SERVICE:$SERVICE_PORT"
  for n in $(seq "$hosts"); do host_start "$n"; done
  if [[ $hosts == 1 ]]; then initial_buckets 1 1 1 1 1 1; else initial_buckets 1 2 3 1 2 3; fi
  load "hs_${hosts}_$round" handshakes --handshake-only --connections=32 "$URL"
  hs=$RESULT
  load "gp_${hosts}_$round" goodput_gbps --connections=12 "$URL/10000000"
  gp=$RESULT
  echo "$hosts $hs $gp" >>"$FLEET_BENCH_RESULTS"
  echo "round $round, $hosts host(s): handshakes, cores busy (all, hosts, quicload): $hs;" \
    "goodput Gbps, cores busy: $gp" >&2
  for n in $(seq "$hosts"); do host_stop "$n"; done
}

# One phase: this script again, with the phase in the environment.
if [[ -n ${FLEET_BENCH_PHASE:-} ]]; then
  measure ${FLEET_BENCH_PHASE}
  exit 0
fi
export FLEET_BENCH_RESULTS
FLEET_BENCH_RESULTS=$(mktemp /tmp/fleet_bench_results.XXXXXX)
trap 'rm -f "$FLEET_BENCH_RESULTS"' EXIT
for round in $(seq "$ROUNDS"); do
  for hosts in 1 3; do
    FLEET_BENCH_PHASE="$hosts $round" "$0" "$SECONDS_EACH" "$ROUNDS" || exit 1
  done
done
python3 - "$FLEET_BENCH_RESULTS" "$SECONDS_EACH" "$ROUNDS" <<'PY'
import statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[1])]
seconds = float(sys.argv[2])
def median(hosts, column):
    return statistics.median(r[column] for r in rows if r[0] == hosts)
def busy(first):
    for column, what in ((first, "machine"), (first + 1, "hosts"), (first + 2, "quicload")):
        print(f"| … cores busy: {what} | {median(1, column):.2f} | {median(3, column):.2f} | |")
hs = [median(h, 1) / seconds for h in (1, 3)]
gp = [median(h, 5) for h in (1, 3)]
print(f"| through the nftables router, {sys.argv[2]} s each, medians of {sys.argv[3]} "
      "| one host | three hosts | three : one |")
print("| --- | ---: | ---: | ---: |")
print(f"| full handshakes per second (32 in flight) | {hs[0]:,.0f} | {hs[1]:,.0f} | {hs[1] / hs[0]:.2f} |")
busy(2)
print(f"| … hosts' CPU µs per handshake | {median(1, 3) * 1e6 / hs[0]:.0f} | {median(3, 3) * 1e6 / hs[1]:.0f} | |")
print(f"| goodput, 12 connections of 10 MB bodies (Gbps) | {gp[0]:.2f} | {gp[1]:.2f} | {gp[1] / gp[0]:.2f} |")
busy(6)
print(f"| … hosts' CPU ms per GB | {median(1, 7) * 8e3 / gp[0]:.1f} | {median(3, 7) * 8e3 / gp[1]:.1f} | |")
PY
