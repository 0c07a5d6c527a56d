#!/usr/bin/env bash
# gtlsclient downloads 20 MB from our server through the impairment proxy
# dropping 2% of the datagrams each way (seeded): the file must be
# byte-exact over one connection, and the proxy must really have dropped
# datagrams in both directions.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
IMPAIR=$2

impaired_download "$DATAPLANE" "$IMPAIR" 20000000 --seed=1 --loss=2%
expect_impair_count down dropped_loss 10
expect_impair_count up dropped_loss 2
echo "gtlsclient through 2% loss: ok (dropped up $(impair_count up dropped_loss)," \
  "down $(impair_count down dropped_loss))"
