#!/usr/bin/env bash
# --verify=FILE: bodies served from --root equal the file byte for byte
# (exit 0); against a different file every response is a mismatch (exit 1).
# A missing file is an HTTP status error, never a success.
QUICLOAD=$1
DATAPLANE=$2
source tests/tools/quicload/quicload_lib.sh

mkdir -p "$WORK/root"
head -c 3000000 /dev/urandom >"$WORK/root/random.bin"
printf '\xff' | dd of="$WORK/root/random.bin" bs=1 seek=2999999 conv=notrunc 2>/dev/null
cp "$WORK/root/random.bin" "$WORK/same.bin"
cp "$WORK/root/random.bin" "$WORK/flipped.bin"
printf '\x00' | dd of="$WORK/flipped.bin" bs=1 seek=2999999 conv=notrunc 2>/dev/null
head -c 2999999 "$WORK/root/random.bin" >"$WORK/short.bin"
start_dataplane "$DATAPLANE" --root="$WORK/root"

run_quicload same 0 --connections=2 --streams=2 --requests=8 --verify="$WORK/same.bin" \
  "https://127.0.0.1:$PORT/random.bin"
expect_json same requests_ok 8
expect_json same bytes_received 24000000
expect_no_errors same

# One byte differs (the last one).
run_quicload flipped 1 --connections=2 --streams=2 --requests=8 --verify="$WORK/flipped.bin" \
  "https://127.0.0.1:$PORT/random.bin"
expect_json flipped requests_ok 0
expect_json flipped requests_failed 8
expect_json flipped errors.mismatch 8

# One byte shorter: a wrong size.
run_quicload short 1 --requests=2 --connections=2 --verify="$WORK/short.bin" \
  "https://127.0.0.1:$PORT/random.bin"
expect_json short errors.mismatch 2

# 404.
run_quicload missing 1 --requests=3 --connections=1 --streams=3 "https://127.0.0.1:$PORT/nothing.bin"
expect_json missing requests_ok 0
expect_json missing errors.status 3

# --verify names a file that does not exist: bad usage, one line.
run_quicload nofile 2 --verify="$WORK/absent.bin" "https://127.0.0.1:$PORT/random.bin"
[[ $(wc -l <"$WORK/nofile.log") -eq 1 ]] || fail "nofile: $(cat "$WORK/nofile.log")"
grep -q "^quicload: .*absent.bin: No such file or directory$" "$WORK/nofile.log" ||
  fail "nofile: $(cat "$WORK/nofile.log")"

stop_dataplane
echo "quicload --verify: ok"
