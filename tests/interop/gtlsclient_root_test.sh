#!/usr/bin/env bash
# Files from --root: gtlsclient downloads a 3 MB random file, which must be
# identical to the one served. Requests that climb out of the root must get
# 404 and no bytes, even for a file that exists just outside it: gtlsclient
# sends the path as given (":path: /../secret"), and also percent-encoded.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1

mkdir -p "$WORK/root/sub"
head -c 3000000 /dev/urandom >"$WORK/root/sub/random.bin"
echo "not to be served" >"$WORK/secret"
start_dataplane "$DATAPLANE" --root="$WORK/root"
gtls_run files --no-quic-dump --no-http-dump -- "https://127.0.0.1:$PORT/sub/random.bin"
cmp "$WORK/root/sub/random.bin" "$WORK/download/random.bin" || fail "random.bin differs"
grep -q "\[content-length: 3000000\]" "$WORK/files.log" || fail "no content-length 3000000"
for path in /../secret /sub/../../secret /%2e%2e/secret /sub/%2E%2E%2F%2E%2E%2Fsecret; do
  rm -f "$WORK/download/secret"
  gtls_run traversal --no-quic-dump --no-http-dump -- "https://127.0.0.1:$PORT$path"
  grep -qF "[:path: $path]" "$WORK/traversal.log" || fail "the client did not send $path as is"
  grep -q "\[:status: 404\]" "$WORK/traversal.log" ||
    fail "$path: $(grep ':status:' "$WORK/traversal.log")"
  [[ ! -s $WORK/download/secret ]] || fail "$path: the body was served"
done
stop_dataplane
echo "gtlsclient --root: ok"
