#!/usr/bin/env bash
# Fuzzes one target for real with libFuzzer (clang-14, --config=fuzz).
#   tools/fuzz.sh TARGET [SECONDS] [extra libFuzzer flags]
# New inputs go to a scratch directory (printed at the end), so the seed corpus
# in tests/fuzz/corpus/TARGET stays as committed; copy what is worth keeping.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -lt 1 || "$1" == --help || "$1" == -h ]]; then
  echo "usage: tools/fuzz.sh TARGET [SECONDS] [LIBFUZZER FLAGS...]   e.g. tools/fuzz.sh varint_fuzz 600"
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
target=$1; seconds=${2:-60}; shift $(( $# >= 2 ? 2 : 1 ))
seeds="$PWD/tests/fuzz/corpus/${target%_fuzz}"
[[ -d "$seeds" ]] || { echo "fuzz.sh: no seed corpus at $seeds" >&2; exit 2; }
scratch=$(mktemp -d "/tmp/dpquic-fuzz-${target}.XXXXXX")
bazel run --config=fuzz "//tests/fuzz:${target}" -- \
  -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$scratch/" "$@" \
  "$scratch" "$seeds"
echo "fuzz.sh: new inputs and any crash artifacts are in $scratch"
