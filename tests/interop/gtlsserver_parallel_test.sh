#!/usr/bin/env bash
# Twenty requests in parallel on one connection (twenty bidirectional
# streams open at once), each for a different random file of a different
# size; every copy must equal its file, and only one connection was used.
source "$(dirname "$0")/interop_lib.sh"
CLIENT=$1

urls=()
for i in $(seq 1 20); do
  htdocs_file "part$i" $((i * 37000 + i))
  urls+=("https://127.0.0.1:$PORT/part$i")
done
start_gtlsserver
dpquic_get "$CLIENT" -- "${urls[@]}"
for i in $(seq 1 20); do
  expect_same "part$i"
  expect_client_line "^https://127.0.0.1:$PORT/part$i: ok, status 200, $((i * 37000 + i)) bytes$"
done
[[ $(grep -c "^connection 2" "$WORK/client.log") -eq 0 ]] || fail "more than one connection"
expect_client_line "^all requests succeeded$"
stop_gtlsserver
echo "gtlsserver 20 parallel requests: ok"
