#include "tools/quicload/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace dpquic::tools {
namespace {

// The nearest-rank percentile of `sorted` samples: the exact answer.
uint64_t exact_percentile(const std::vector<uint64_t>& sorted, double percent) {
  size_t rank = static_cast<size_t>(std::ceil(percent * sorted.size() / 100.0 - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// A reported percentile is the top of the exact sample's bucket: never
// below it, at most 1/128 above.
void expect_close(uint64_t reported, uint64_t exact) {
  EXPECT_GE(reported, exact);
  EXPECT_LE(static_cast<double>(reported),
            static_cast<double>(exact) * (1.0 + 1.0 / LatencyHistogram::kSubBuckets) + 1.0)
      << "exact " << exact;
}

TEST(LatencyHistogramTest, BucketsTileTheRangeWithoutGaps) {
  EXPECT_EQ(LatencyHistogram::bucket_lowest(0), 0u);
  for (size_t i = 0; i + 1 < LatencyHistogram::kBucketCount; ++i) {
    ASSERT_EQ(LatencyHistogram::bucket_highest(i) + 1, LatencyHistogram::bucket_lowest(i + 1)) << i;
    ASSERT_EQ(LatencyHistogram::bucket_index(LatencyHistogram::bucket_lowest(i)), i);
    ASSERT_EQ(LatencyHistogram::bucket_index(LatencyHistogram::bucket_highest(i)), i);
  }
  // Small values are exact; the first split group has width 1 too.
  EXPECT_EQ(LatencyHistogram::bucket_index(127), 127u);
  EXPECT_EQ(LatencyHistogram::bucket_index(128), 128u);
  EXPECT_EQ(LatencyHistogram::bucket_index(255), 255u);
  // Then widths double: 256 and 257 share a bucket.
  EXPECT_EQ(LatencyHistogram::bucket_index(256), LatencyHistogram::bucket_index(257));
  EXPECT_NE(LatencyHistogram::bucket_index(257), LatencyHistogram::bucket_index(258));
  // Everything from 2^42 on lands in the last bucket.
  EXPECT_EQ(LatencyHistogram::bucket_index(uint64_t{1} << 42), LatencyHistogram::kBucketCount - 1);
  EXPECT_EQ(LatencyHistogram::bucket_index(UINT64_MAX), LatencyHistogram::kBucketCount - 1);
  EXPECT_EQ(LatencyHistogram::bucket_highest(LatencyHistogram::kBucketCount - 1),
            (uint64_t{1} << 42) - 1);
}

TEST(LatencyHistogramTest, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_EQ(h.percentile(99), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.percentile(50), 50u);
  EXPECT_EQ(h.percentile(99), 99u);
  EXPECT_EQ(h.percentile(100), 100u);
  EXPECT_EQ(h.percentile(0), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(LatencyHistogramTest, UniformMillisecondsMatchExactPercentiles) {
  // 1 us .. 10 ms in 1 us steps, in nanoseconds.
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (uint64_t us = 1; us <= 10000; ++us) {
    samples.push_back(us * 1000);
    h.record(us * 1000);
  }
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    expect_close(h.percentile(p), exact_percentile(samples, p));
  }
  EXPECT_EQ(h.percentile(100), 10'000'000u);
  EXPECT_EQ(h.max(), 10'000'000u);
  EXPECT_EQ(h.count(), 10000u);
}

TEST(LatencyHistogramTest, LogNormalMatchesExactPercentiles) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(13.0, 1.5);  // median ~0.44 ms in ns
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng));
    samples.push_back(v);
    h.record(v);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {50.0, 90.0, 99.0, 99.99}) {
    expect_close(h.percentile(p), exact_percentile(samples, p));
  }
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_EQ(h.min(), samples.front());
}

TEST(LatencyHistogramTest, PercentileNeverExceedsTheMaximum) {
  LatencyHistogram h;
  h.record(1'000'001);  // the top of its bucket is above this
  EXPECT_EQ(h.percentile(50), 1'000'001u);
  EXPECT_EQ(h.percentile(99), 1'000'001u);
}

TEST(LatencyHistogramTest, HugeValuesKeepAnExactMaximum) {
  LatencyHistogram h;
  h.record(10);
  h.record(uint64_t{1} << 50);
  EXPECT_EQ(h.max(), uint64_t{1} << 50);
  EXPECT_EQ(h.percentile(100), uint64_t{1} << 50);
  EXPECT_EQ(h.percentile(50), 10u);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> dist(0, 50'000'000);
  LatencyHistogram a, b, c, all;
  for (int i = 0; i < 30000; ++i) {
    const uint64_t v = dist(rng);
    (i % 3 == 0 ? a : i % 3 == 1 ? b : c).record(v);
    all.record(v);
  }
  LatencyHistogram merged;
  merged.merge(a);
  merged.merge(b);
  merged.merge(c);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.mean(), all.mean());
  for (double p = 0; p <= 100; p += 0.5) EXPECT_EQ(merged.percentile(p), all.percentile(p)) << p;
  // Merging an empty histogram changes nothing.
  merged.merge(LatencyHistogram());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.percentile(99), all.percentile(99));
}

TEST(LatencyHistogramTest, ClearForgetsEverything) {
  LatencyHistogram h;
  h.record(5);
  h.record(5000);
  h.clear();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  h.record(7);
  EXPECT_EQ(h.min(), 7u);
  EXPECT_EQ(h.max(), 7u);
}

}  // namespace
}  // namespace dpquic::tools
