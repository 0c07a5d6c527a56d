#!/usr/bin/env bash
# A fleet behind docs/fleet.nft (fleet_lib.sh): three kernel-UDP hosts with
# server IDs 01, 02 and 03, one host key, one ticket key.
#  - Migration across the balancer: 10 gtlsclient downloads of 20 MB move
#    to a new local port (--change-local-addr) soon after the handshake.
#    The new 4-tuple is a new flow to the router, whose first packet is a
#    short-header one: routed by the server ID to the host that holds the
#    connection (by the Initial hash it would reach another host two times
#    in three). Every download is byte-exact and validated the new path.
#  - A token across hosts: under --retry=always, dpquic_client's first
#    connection gets a Retry and a NEW_TOKEN; its second, from a new port,
#    is hashed afresh. When it lands on another host, that host takes the
#    token and sends no Retry.
#  - Restart: a host is killed (SIGKILL) while gtlsclient holds a
#    connection to it, and started again with the same keys; the client's
#    next packet draws a stateless reset that it recognises (ERR_DRAINING),
#    not an idle timeout.
source "$(dirname "$0")/../../../tools/fleet/fleet_lib.sh"
fleet_start fleet_migration "$1" "$2"
CLIENT=$3
for n in 1 2 3; do host_start "$n"; done

for i in $(seq 10); do
  : >"$WORK/move.log"
  fetch move 20000000 --change-local-addr=5ms
  new=$(sed -n 's/^Local address is now \(.*\)$/\1/p' "$WORK/move.log")
  [[ -n $new ]] || fail "download $i: the client did not change its local address"
  grep -F "Path validation against path {local:$new, remote:" "$WORK/move.log" |
    grep -q "} succeeded$" || fail "download $i: the path from $new was not validated"
  packets=$(grep -Fc "Received packet: local=$new " "$WORK/move.log")
  [[ $packets -ge 100 ]] || fail "download $i: only $packets packets arrived on $new"
done
echo "migration: 10 of 10 downloads of 20 MB byte-exact after the move"

# A token across hosts: every host asks for Retry unless a token came.
for n in 1 2 3; do host_stop "$n"; done
for n in 1 2 3; do host_start "$n" --retry=always; done
spread=no
for attempt in $(seq 8); do
  before=()
  for n in 1 2 3; do
    before[$n]=$(host_metric "$n" dpquic_handshakes_total),$(host_metric "$n" dpquic_retries_total)
  done
  in_client timeout 30 "$CLIENT" --resume --timeout=10 "https://$SERVICE:$SERVICE_PORT/1000" \
    >"$WORK/token.log" 2>&1 || fail "dpquic_client --resume exited $?"
  served="" retried=""
  for n in 1 2 3; do
    after=$(host_metric "$n" dpquic_handshakes_total),$(host_metric "$n" dpquic_retries_total)
    [[ ${after%,*} -gt ${before[$n]%,*} ]] && served+=$n
    [[ ${after#*,} -gt ${before[$n]#*,} ]] && retried+=$n
  done
  [[ ${#retried} -eq 1 ]] || fail "Retries came from hosts '$retried', expected one (the first)"
  grep -q "connection 1: .*retry yes" "$WORK/token.log" || fail "the first connection had no Retry"
  if [[ ${#served} -eq 2 ]]; then
    spread=yes
    grep -q "connection 2: .*retry no" "$WORK/token.log" ||
      fail "the second connection, at another host, had a Retry: its token was refused"
    echo "token: issued by host $retried, accepted by host ${served/$retried/}"
    break
  fi
done
[[ $spread == yes ]] || fail "8 runs never put the two connections on two hosts"

# Restart: SIGKILL the host of a connection, start it again.
: >"$WORK/restart.log"
in_client timeout 30 gtlsclient --download="$WORK/download" --no-quic-dump --no-http-dump \
  --delay-stream=2s --timeout=4s "$SERVICE" "$SERVICE_PORT" "https://$SERVICE:$SERVICE_PORT/1000" \
  >"$WORK/restart.log" 2>&1 &
client=$!
PIDS+=("$client")
for _ in $(seq 50); do grep -aq "HANDSHAKE_DONE" "$WORK/restart.log" && break; sleep 0.1; done
grep -aq "HANDSHAKE_DONE" "$WORK/restart.log" || fail "restart: no handshake"
n=$(grep -Eo "pkt tx pkn=[0-9]+ dcid=0x0f0[123]" "$WORK/restart.log" | tail -n 1 | sed 's/.*0x0f0//')
[[ -n $n ]] || fail "restart: no packet to a CID with a server ID"
kill -KILL "${HOST_PID[$n]}"
wait "${HOST_PID[$n]}" 2>/dev/null
host_start "$n" --retry=always
wait "$client"
rc=$?
[[ $rc -ne 124 ]] || fail "restart: the client was still running 30 s on"
grep -aq "ngtcp2_conn_read_pkt: ERR_DRAINING" "$WORK/restart.log" ||
  fail "restart: the client did not recognise a stateless reset from the restarted host $n"
grep -aq "ERR_IDLE_CLOSE" "$WORK/restart.log" && fail "restart: the client timed out instead"
resets=$(host_metric "$n" dpquic_stateless_resets_total)
[[ $resets -ge 1 ]] || fail "restart: host $n counted no stateless reset"
echo "restart: host $n's new process reset the connection; the client recognised it"
for n in 1 2 3; do host_stop "$n"; done
echo "fleet migration: ok"
