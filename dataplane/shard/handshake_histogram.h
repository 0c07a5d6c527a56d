#pragma once
// Handshake durations of one shard (from a connection's start, a server's
// first Initial accepted, to handshake completion) in fixed buckets: relaxed
// atomics the shard adds to as handshakes complete and other threads read
// (the metrics endpoint). Fixed size, no allocation, no lock; its own cache
// lines.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "quic/time.h"

namespace dpquic::dataplane {

// Upper bounds (inclusive, Prometheus `le`) of the finite buckets: 0.5 ms to
// 5 s. One more bucket takes what is above the last.
inline constexpr std::array<Duration, 13> kHandshakeBucketBounds = {
    500 * kMicrosecond, 1 * kMillisecond,   2 * kMillisecond,    5 * kMillisecond,
    10 * kMillisecond,  20 * kMillisecond,  50 * kMillisecond,   100 * kMillisecond,
    200 * kMillisecond, 500 * kMillisecond, 1000 * kMillisecond, 2000 * kMillisecond,
    5000 * kMillisecond};
inline constexpr size_t kHandshakeBucketCount = kHandshakeBucketBounds.size() + 1;

// The bucket `duration` falls in: the first whose bound is >= it, or the
// last (+Inf).
constexpr size_t handshake_bucket(Duration duration) {
  size_t i = 0;
  while (i < kHandshakeBucketBounds.size() && duration > kHandshakeBucketBounds[i]) ++i;
  return i;
}

struct alignas(64) HandshakeHistogram {
  // Observations per bucket (not cumulative).
  std::array<std::atomic<uint64_t>, kHandshakeBucketCount> buckets{};
  std::atomic<uint64_t> sum_ns{0};

  void record(Duration duration) {
    buckets[handshake_bucket(duration)].fetch_add(1, std::memory_order_relaxed);
    sum_ns.fetch_add(duration, std::memory_order_relaxed);
  }
};

// A plain copy, summed over whatever was added. `count` is the buckets'
// sum; a read racing the writer may see `sum_ns` one observation apart.
struct HistogramSnapshot {
  std::array<uint64_t, kHandshakeBucketCount> buckets{};
  uint64_t count = 0;
  uint64_t sum_ns = 0;

  void add(const HandshakeHistogram& h) {
    for (size_t i = 0; i < kHandshakeBucketCount; ++i) {
      const uint64_t n = h.buckets[i].load(std::memory_order_relaxed);
      buckets[i] += n;
      count += n;
    }
    sum_ns += h.sum_ns.load(std::memory_order_relaxed);
  }
};

}  // namespace dpquic::dataplane
