#!/usr/bin/env bash
# A fleet behind docs/fleet.nft (fleet_lib.sh): three kernel-UDP hosts with
# server IDs 01, 02 and 03, one host key, one ticket key.
#  - Spread: 30 gtlsclient downloads, each from a port of its own, are
#    hashed over the hosts; every host's handshake counter (its /metrics)
#    moves, every download is byte-exact, and the packets after the
#    handshake carry the serving host's ID after the CID's first octet.
#  - 0-RTT across hosts: 10 connections in a row, each resuming with the
#    ticket the previous one received, land where the hash puts them (more
#    than one host); early data is accepted every time.
source "$(dirname "$0")/../../../tools/fleet/fleet_lib.sh"
fleet_start fleet_spread "$1" "$2"
for n in 1 2 3; do host_start "$n"; done

for i in $(seq 30); do
  fetch spread 100000
done
ids=$(grep -Eo "pkt tx pkn=[0-9]+ dcid=0x0f0[0-9]" "$WORK/spread.log" | sed 's/.*0x0f//' | sort -u |
  tr '\n' ' ')
[[ $ids == "01 02 03 " ]] || fail "the short-header packets went to server IDs '$ids'"
grep -E "pkt tx pkn=[0-9]+ dcid=0x[0-9a-f]+ .*type=1RTT" "$WORK/spread.log" |
  grep -Evq "dcid=0x0f0[123][0-9a-f]{28} " && fail "a 1-RTT packet went to a CID without a server ID"
total=0
for n in 1 2 3; do
  handshakes=$(host_metric "$n" dpquic_handshakes_total) || fail "host $n: /metrics"
  [[ $handshakes -ge 1 ]] || fail "host $n took none of the 30 connections"
  echo "host $n: $handshakes handshakes"
  total=$((total + handshakes))
done
[[ $total -eq 30 ]] || fail "the hosts count $total handshakes, not 30"

# 0-RTT across hosts: a chain of tickets, each connection hashed afresh.
fetch chain 1000 --session-file="$WORK/session" --tp-file="$WORK/tp"
declare -A served
for i in $(seq 10); do
  before=()
  for n in 1 2 3; do before[$n]=$(early_data_accepted "$n"); done
  : >"$WORK/early.log"
  fetch early 100000 --session-file="$WORK/session" --tp-file="$WORK/tp"
  cat "$WORK/early.log" >>"$WORK/chain.log"
  grep -q " frm tx [0-9]* 0RTT STREAM" "$WORK/early.log" ||
    fail "resumption $i: the client sent no request in 0-RTT"
  host=""
  for n in 1 2 3; do
    [[ $(early_data_accepted "$n") -gt ${before[$n]} ]] && host+=$n
  done
  [[ ${#host} -eq 1 ]] || fail "resumption $i: early data accepted by hosts '$host', expected one"
  served[$host]=1
done
[[ ${#served[@]} -ge 2 ]] || fail "all 10 resumptions went to host ${!served[*]}: no spread"
echo "0-RTT accepted 10 times of 10, by hosts ${!served[*]}"
for n in 1 2 3; do host_stop "$n"; done
echo "fleet spread: ok"
