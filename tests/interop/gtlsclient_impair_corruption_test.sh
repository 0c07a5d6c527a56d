#!/usr/bin/env bash
# The impairment proxy flips 1-3 random bits in 2% of the datagrams each way
# while gtlsclient downloads 20 MB from our server: both ends must discard
# the corrupted packets (AEAD or header failure) and recover them as losses,
# so the file is byte-exact over one connection.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
IMPAIR=$2

impaired_download "$DATAPLANE" "$IMPAIR" 20000000 --seed=2 --corrupt=2%
expect_impair_count down corrupted 10
expect_impair_count up corrupted 2
echo "gtlsclient through 2% corruption: ok (corrupted up $(impair_count up corrupted)," \
  "down $(impair_count down corrupted))"
