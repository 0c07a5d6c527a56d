#!/usr/bin/env bash
# The sans-IO rule for //quic, checked on the sources: no sockets, no DPDK, no
# clocks, no threads or files. Bazel visibility keeps the libraries out; this
# keeps libc's I/O out too.
set -euo pipefail
root="${TEST_SRCDIR}/${TEST_WORKSPACE}"
forbidden='#include *<(sys/socket\.h|netinet/|arpa/inet\.h|sys/epoll\.h|unistd\.h|fcntl\.h|rte_[a-z_]*\.h|chrono|ctime|time\.h|sys/time\.h|thread|fstream|iostream|cstdio)>|clock_gettime|std::chrono|gettimeofday|rdtsc|\brte_[a-z_]+\('
files=$(find -L "$root/quic" -name '*.h' -o -name '*.cc' | sort)
[[ -n "$files" ]] || { echo "no sources found under $root/quic"; exit 1; }
if grep -nE "$forbidden" $files; then
  echo "FAIL: //quic must stay sans-IO; the lines above do I/O or read a clock"
  exit 1
fi
echo "sans-IO: $(echo "$files" | wc -l) files clean"
