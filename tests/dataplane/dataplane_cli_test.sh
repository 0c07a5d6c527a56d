#!/usr/bin/env bash
# The server binary must not pretend to serve before it can: --help exits 0,
# anything else prints what is missing and exits 2.
set -uo pipefail
bin="$1"
out=$("$bin" --help) || { echo "FAIL: --help exited $?"; exit 1; }
grep -q "usage: dataplane" <<<"$out" || { echo "FAIL: --help lacks usage"; exit 1; }
err=$("$bin" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: running without the server must exit 2, got $rc"; exit 1; }
grep -q "not implemented yet" <<<"$err" || { echo "FAIL: missing explanation"; exit 1; }
echo "dataplane CLI: ok"
