#!/usr/bin/env bash
# Initials from addresses that never answer, against a small pool
# (--max-connections=1000 --cores=2: 500 slots a core): //tools/flood sends
# valid, correctly protected client Initials from 256 distinct 127/8
# addresses at 400/s for 20 s, and reads nothing but counts the replies, as
# a spoofing attacker would. Each Initial the server takes holds a slot until
# its handshake gives up. Meanwhile gtlsclient downloads 1 MB five times:
#  (a) every download is byte-exact. Without Retry scaled to the pool, the
#      200 Initials a second each core gets fill its 500 slots within 3 s
#      (the 1000 half-open threshold is never reached, and a full pool
#      refuses rather than counting accepted handshakes), and honest clients
#      are refused for as long as the flood lasts;
#  (b) the flood is answered with Retry once half-open connections hold a
#      quarter of a core's pool, and the server never holds more connections
#      than that share on each core, plus the honest client's five (one a
#      download; the previous one may still be closing);
#  (c) the server's VmRSS grows by at most RSS_GROWTH_LIMIT_KB in the normal
#      build, ASAN_RSS_GROWTH_LIMIT_KB in a sanitizer build, where the server
#      runs with a 16 MB quarantine (ASan's default, 256 MB, would fill with
#      the flood's freed handshakes and measure the quarantine).
#
# Measured (2-core VM, normal build): VmRSS 29 MB at start, 41 MB at the
# peak: 12 MB for 250 half-open connections at about 45 kB each plus the
# downloads; at most 251 connections at once; the flood got 5500 Retries of
# 8000; the server dropped 2250 unvalidated handshakes early and refused
# none. The normal limit is 2.5x that growth; state per flood packet would
# need far more. Under ASan (16 MB quarantine): 52 MB at start, growth 45 MB.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
FLOOD=$2
CORES=2
MAX_CONNECTIONS=1000
SHARE=$((MAX_CONNECTIONS / CORES / 4))  # per core: a quarter of its pool
RSS_GROWTH_LIMIT_KB=$((32 * 1024))
ASAN_RSS_GROWTH_LIMIT_KB=$((128 * 1024))
FLOOD_RATE=400
FLOOD_SECONDS=20

sanitizer_build && export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16"
start_dataplane "$DATAPLANE" --cores=$CORES --max-connections=$MAX_CONNECTIONS --stats=1
start_rss_sampler
start_flood "$FLOOD" --count=$((FLOOD_RATE * FLOOD_SECONDS)) --duration=$((FLOOD_SECONDS + 5)) \
  --rate=$FLOOD_RATE

# Past the point where the flood alone would have filled both pools.
sleep 4
for i in 1 2 3 4 5; do
  rm -rf "$WORK/download"
  gtls_get -- "https://127.0.0.1:$PORT/1000000"
  expect_synthetic "$WORK/download/1000000" 1000000
  echo "download $i of 1 MB: byte-exact"
done
kill -0 "$FLOOD_PID" 2>/dev/null || fail "the flood ended before the downloads did"

wait_flood
retry_replies=$(flood_field retry)
[[ $retry_replies -ge $((FLOOD_RATE * FLOOD_SECONDS / 2)) ]] ||
  fail "the flood received only $retry_replies Retry packets"

stop_rss_sampler
max_connections=$(max_stats_connections)
echo "connections: at most $max_connections at once (bound: $CORES x $SHARE half-open + 5)"
[[ $max_connections -le $((CORES * SHARE + 5)) ]] ||
  fail "$max_connections connections at once (bound: $CORES x $SHARE + 5)"

growth=$((RSS_PEAK - RSS_START))
echo "server VmRSS: start $RSS_START kB, peak $RSS_PEAK kB (growth $growth kB)"
limit=$RSS_GROWTH_LIMIT_KB
sanitizer_build && limit=$ASAN_RSS_GROWTH_LIMIT_KB
[[ $growth -le $limit ]] || fail "server VmRSS grew by $growth kB (limit $limit kB)"

stop_dataplane
echo "server totals: retries=$(server_total retries) handshakes=$(server_total handshakes)" \
  "half_open_dropped=$(server_total half_open_dropped) refused=$(server_total refused)"
[[ $(server_total refused) -eq 0 ]] || fail "the server refused $(server_total refused) connections"
echo "spoofed flood: ok"
