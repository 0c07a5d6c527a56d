#!/usr/bin/env bash
# The impairment proxy holds 5% of the datagrams each way back behind the
# next 3 (and delays all by 1 ms) while gtlsclient downloads 20 MB from our
# server: the file must be byte-exact over one connection, and the proxy
# must have delivered datagrams out of order in both directions.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
IMPAIR=$2

impaired_download "$DATAPLANE" "$IMPAIR" 20000000 --seed=3 --reorder=5%,3 --delay=1ms
expect_impair_count down reordered 10
expect_impair_count up reordered 2
echo "gtlsclient through reordering: ok (reordered up $(impair_count up reordered)," \
  "down $(impair_count down reordered))"
