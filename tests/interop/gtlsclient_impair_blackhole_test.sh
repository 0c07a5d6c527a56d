#!/usr/bin/env bash
# The impairment proxy limits the server's sending to 20 Mbit/s and drops
# everything, both ways, for 2 s after every 5 s: a 20 MB download takes
# more than 7 s and so crosses at least one blackhole. Our server must back
# off (PTO) and resume after it: the file is byte-exact over one connection.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
IMPAIR=$2

impaired_download "$DATAPLANE" "$IMPAIR" 20000000 --seed=4 --rate-down=20M --blackhole=5s/2s
elapsed_ms=$DOWNLOAD_MS
[[ $elapsed_ms -ge 7000 ]] || fail "the download took $elapsed_ms ms: it cannot have crossed a blackhole"
expect_impair_count down dropped_blackhole 5
expect_impair_count down rate_queued 1000
echo "gtlsclient through 5 s on / 2 s off blackholes: ok ($elapsed_ms ms;" \
  "blackholed up $(impair_count up dropped_blackhole), down $(impair_count down dropped_blackhole))"
