#include "dataplane/shard/handshake_histogram.h"

#include <gtest/gtest.h>

#include "dataplane/shard/shard_counters.h"

namespace dpquic::dataplane {
namespace {

TEST(HandshakeHistogram, BucketEdgesAreInclusiveUpperBounds) {
  EXPECT_EQ(handshake_bucket(0), 0u);
  EXPECT_EQ(handshake_bucket(500 * kMicrosecond), 0u);
  EXPECT_EQ(handshake_bucket(500 * kMicrosecond + 1), 1u);
  EXPECT_EQ(handshake_bucket(1 * kMillisecond), 1u);
  EXPECT_EQ(handshake_bucket(10 * kMillisecond + 1), 5u);
  EXPECT_EQ(handshake_bucket(5 * kSecond), 12u);
  EXPECT_EQ(handshake_bucket(5 * kSecond + 1), 13u);  // +Inf
  EXPECT_EQ(handshake_bucket(UINT64_MAX), kHandshakeBucketCount - 1);
  for (size_t i = 0; i < kHandshakeBucketBounds.size(); ++i) {
    EXPECT_EQ(handshake_bucket(kHandshakeBucketBounds[i]), i);
    EXPECT_EQ(handshake_bucket(kHandshakeBucketBounds[i] + 1), i + 1);
  }
}

TEST(HandshakeHistogram, RecordsCountsAndSum) {
  HandshakeHistogram histogram;
  histogram.record(300 * kMicrosecond);
  histogram.record(3 * kMillisecond);
  histogram.record(3 * kMillisecond);
  histogram.record(6 * kSecond);
  HistogramSnapshot snapshot;
  snapshot.add(histogram);
  EXPECT_EQ(snapshot.count, 4u);
  EXPECT_EQ(snapshot.sum_ns, 300 * kMicrosecond + 6 * kMillisecond + 6 * kSecond);
  EXPECT_EQ(snapshot.buckets[0], 1u);
  EXPECT_EQ(snapshot.buckets[3], 2u);  // le 5 ms
  EXPECT_EQ(snapshot.buckets[kHandshakeBucketCount - 1], 1u);
  uint64_t total = 0;
  for (uint64_t n : snapshot.buckets) total += n;
  EXPECT_EQ(total, snapshot.count);
}

TEST(HandshakeHistogram, SnapshotsSumOverShards) {
  HandshakeHistogram a, b;
  a.record(1 * kMillisecond);
  b.record(1 * kMillisecond);
  b.record(100 * kMillisecond);
  HistogramSnapshot snapshot;
  snapshot.add(a);
  snapshot.add(b);
  EXPECT_EQ(snapshot.count, 3u);
  EXPECT_EQ(snapshot.buckets[1], 2u);
  EXPECT_EQ(snapshot.buckets[7], 1u);
  EXPECT_EQ(snapshot.sum_ns, 102 * kMillisecond);
}

TEST(HandshakeHistogram, OwnCacheLinesInShardCounters) {
  static_assert(alignof(HandshakeHistogram) == 64);
  static_assert(offsetof(ShardCounters, handshake_time) % 64 == 0);
  static_assert(sizeof(ShardCounters) % 64 == 0);
  const ShardCounters counters;
  HistogramSnapshot snapshot;
  snapshot.add(counters.handshake_time);
  EXPECT_EQ(snapshot.count, 0u);
}

}  // namespace
}  // namespace dpquic::dataplane
