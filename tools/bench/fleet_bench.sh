#!/usr/bin/env bash
# The fleet of docs/fleet.md against one host, side by side on this machine
# (`bazel run //tools/bench:fleet_bench -- [SECONDS] [ROUNDS]`, as root):
# namespaces built by tools/fleet/fleet_lib.sh, quicload in the client's
# namespace through the nftables router to one kernel-UDP host (every
# Initial bucket on host 1, the others stopped) or to three. Rounds
# alternate one host and three, each measuring
#  - handshakes per second: --handshake-only, 32 connections in flight;
#  - goodput: 12 connections downloading 10 MB bodies back to back;
# for SECONDS each (default 10), ROUNDS rounds (default 3). Prints the
# medians, the ratio three hosts : one, and a Markdown table for
# BENCHMARKS.md. Every process it starts is bounded by --duration and
# killed at exit; the namespaces are deleted.
set -uo pipefail
RUNFILES=${RUNFILES_DIR:-$0.runfiles}/dpquic
SECONDS_EACH=${1:-10}
ROUNDS=${2:-3}
[[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -ge 2 && $SECONDS_EACH -le 120 ]] ||
  { echo "fleet_bench: SECONDS must be 2..120, not '$SECONDS_EACH'" >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 && $ROUNDS -le 10 ]] ||
  { echo "fleet_bench: ROUNDS must be 1..10, not '$ROUNDS'" >&2; exit 2; }
source "$RUNFILES/tools/fleet/fleet_lib.sh"
fleet_start fleet_bench "$RUNFILES/docs/fleet.nft" "$RUNFILES/dataplane/dataplane"
QUICLOAD=$RUNFILES/tools/quicload/quicload
URL="https://$SERVICE:$SERVICE_PORT"

# load NAME [quicload flags...]: one quicload run; prints KEY of its report.
load() {
  local name=$1 key=$2
  shift 2
  in_client timeout $((SECONDS_EACH + 30)) "$QUICLOAD" --duration="$SECONDS_EACH" --no-progress \
    --json="$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1 || fail "quicload ($name) exited $?"
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$WORK/$name.json" "$key"
}

# measure HOSTS ROUND: both loads against HOSTS (1 or 3) hosts.
measure() {
  local hosts=$1 round=$2 n
  for n in $(seq "$hosts"); do host_start "$n"; done
  if [[ $hosts == 1 ]]; then initial_buckets 1 1 1 1 1 1; else initial_buckets 1 2 3 1 2 3; fi
  local hs gbps
  hs=$(load "hs_${hosts}_$round" handshakes --handshake-only --connections=32)
  gbps=$(load "gp_${hosts}_$round" goodput_gbps --connections=12 "$URL/10000000")
  echo "$hosts $(python3 -c "print($hs / $SECONDS_EACH)") $gbps" >>"$WORK/results"
  echo "round $round, $hosts host(s): $((hs / SECONDS_EACH)) handshakes/s, $gbps Gbps" >&2
  for n in $(seq "$hosts"); do host_stop "$n"; done
}

for round in $(seq "$ROUNDS"); do
  measure 1 "$round"
  measure 3 "$round"
done
python3 - "$WORK/results" "$SECONDS_EACH" "$ROUNDS" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(hosts, column):
    return statistics.median(float(r[column]) for r in rows if r[0] == hosts)
one_hs, three_hs = median("1", 1), median("3", 1)
one_gp, three_gp = median("1", 2), median("3", 2)
print(f"| through the nftables router, {sys.argv[2]} s each, medians of {sys.argv[3]} | one host | three hosts | three : one |")
print("| --- | ---: | ---: | ---: |")
print(f"| full handshakes per second (32 in flight) | {one_hs:,.0f} | {three_hs:,.0f} | {three_hs / one_hs:.2f} |")
print(f"| goodput, 12 connections of 10 MB bodies (Gbps) | {one_gp:.2f} | {three_gp:.2f} | {three_gp / one_gp:.2f} |")
PY
