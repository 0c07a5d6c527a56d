#!/usr/bin/env bash
# A fleet behind docs/fleet.nft (fleet_lib.sh): hosts 1 and 2 on kernel
# UDP, host 3 on the DPDK backend (net_tap in its namespace), server IDs 01,
# 02 and 03, one host key, one ticket key; a real Prometheus in the router's
# namespace scrapes the three hosts' --metrics every second.
#  - Metrics: quicload runs 20 connections, each making 5 requests before
#    it closes and a new one opens (its own source port each time, so the
#    Initial hash spreads them). Two scrape intervals after it ends,
#    Prometheus's sum of the fleet's handshake counters is what quicload
#    reports.
#  - Rolling restart (docs/fleet.md's recipe): quicload runs 20 connections
#    for 30 s while each host in turn leaves the Initial buckets (one nft
#    command), drains on SIGTERM (GOAWAY), starts again with the same ID and
#    keys and comes back. No request fails: GOAWAY moved the connections
#    and their requests to the other hosts.
source "$(dirname "$0")/../../../tools/fleet/fleet_lib.sh"
DPDK_HOST=3
fleet_start fleet_rolling "$1" "$2"
QUICLOAD=$3
host_start 1
host_start 2
dpdk_host_start 3
URL="https://$SERVICE:$SERVICE_PORT/100000"

# Prometheus, its own data directory, a port of the router's namespace.
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dpquic
    static_configs:
      - targets: ['$(metrics_address 1)', '$(metrics_address 2)', '$(metrics_address 3)']
YAML
PROMETHEUS_PORT=9191
spawn "$ROUTER_NS" "$WORK/prometheus.log" prometheus --config.file="$WORK/prometheus.yml" \
  --storage.tsdb.path="$WORK/prometheus" --web.listen-address="127.0.0.1:$PROMETHEUS_PORT"
prometheus_pid=$SPAWNED
# promql QUERY: the query's one value now (an instant vector summed to one).
promql() {
  in_router python3 - "http://127.0.0.1:$PROMETHEUS_PORT" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
base, query = sys.argv[1], sys.argv[2]
url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
reply = json.load(urllib.request.urlopen(url, timeout=5))
assert reply["status"] == "success", reply
result = reply["data"]["result"]
print(int(float(result[0]["value"][1])) if result else "none")
PY
}
for _ in $(seq 100); do
  [[ $(promql 'count(up == 1)' 2>/dev/null) == 3 ]] && break
  kill -0 "$prometheus_pid" 2>/dev/null || fail "prometheus exited at start"
  sleep 0.2
done
[[ $(promql 'count(up == 1)') == 3 ]] || fail "Prometheus does not scrape all three hosts"

# quicload_json LOG: a key of quicload's JSON report $WORK/LOG.json.
report() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/$1.json" "$2"
}

# Metrics: a phase without restarts.
in_client timeout 60 "$QUICLOAD" --connections=20 --per-connection=5 --requests=200 \
  --no-progress --json="$WORK/load.json" "$URL" >"$WORK/load.log" 2>&1 ||
  fail "quicload (metrics phase) exited $?"
handshakes=$(report load handshakes)
[[ $(report load requests_ok) -eq 200 ]] || fail "quicload: $(report load requests_ok) of 200 requests"
sleep 2.5  # two scrape intervals and more
fleet=$(promql 'sum(dpquic_handshakes_total)')
[[ $fleet == "$handshakes" ]] || fail "Prometheus sums $fleet handshakes, quicload made $handshakes"
spread=$(promql 'count(dpquic_handshakes_total > 0)')
[[ $spread == 3 ]] || fail "handshakes reached $spread hosts, not 3"
echo "metrics: Prometheus sums $fleet handshakes over 3 hosts, as quicload reports"

# Rolling restart under load.
spawn "$CLIENT_NS" "$WORK/rolling.log" timeout 60 "$QUICLOAD" --connections=20 --duration=30 \
  --no-progress --json="$WORK/rolling.json" "$URL"
load_pid=$SPAWNED
sleep 3
buckets=("" "2 3 2 3 2 3" "1 3 1 3 1 3" "1 2 1 2 1 2")
for n in 1 2 3; do
  initial_buckets ${buckets[$n]}
  host_stop "$n"
  if [[ $n == "$DPDK_HOST" ]]; then dpdk_host_start "$n"; else host_start "$n"; fi
  initial_buckets 1 2 3 1 2 3
  sleep 2
  kill -0 "$load_pid" 2>/dev/null || fail "quicload ended before host $n was back"
done
wait "$load_pid"
rc=$?
[[ $rc -eq 0 ]] || fail "quicload (rolling restart) exited $rc"
failed=$(report rolling requests_failed)
ok=$(report rolling requests_ok)
goaways=$(report rolling goaways)
[[ $failed -eq 0 ]] || fail "$failed requests failed across the rolling restart"
[[ $goaways -ge 3 ]] || fail "only $goaways connections were retired by GOAWAY"
for n in 1 2 3; do
  grep -q "dataplane: stopped" "$WORK/host$n.log" || fail "host $n did not stop gracefully"
done
echo "rolling restart: $ok requests, none failed; $goaways connections moved by GOAWAY," \
  "$(report rolling requests_retried_after_goaway) requests sent again"
for n in 1 2 3; do host_stop "$n"; done
echo "fleet rolling restart: ok"
