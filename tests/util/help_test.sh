#!/usr/bin/env bash
# Every binary named on the command line answers --help: exit status 0 and a
# usage text, within 30 s. `bazel test` builds only what tests need
# (.bazelrc: --build_tests_only), so binaries no other test runs are built,
# linked and started here.
set -uo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: help_test.sh BINARY..." >&2
  exit 2
fi
failed=0
for bin in "$@"; do
  out=$(timeout 30 "$bin" --help 2>&1)
  status=$?
  if [[ $status -ne 0 ]]; then
    echo "FAIL: $bin --help exited with status $status"
    failed=1
  elif [[ -z "$out" ]]; then
    echo "FAIL: $bin --help printed nothing"
    failed=1
  else
    echo "ok: $bin"
  fi
done
exit $failed
