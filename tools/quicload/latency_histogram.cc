#include "tools/quicload/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace dpquic::tools {

LatencyHistogram::LatencyHistogram() : counts_(kBucketCount, 0) {}

size_t LatencyHistogram::bucket_index(uint64_t value) {
  if (value < kSubBuckets) return static_cast<size_t>(value);
  const unsigned msb = 63 - static_cast<unsigned>(std::countl_zero(value));
  if (msb >= kMaxValueBits) return kBucketCount - 1;
  const unsigned shift = msb - kSubBucketBits;  // group = shift + 1
  return static_cast<size_t>((shift + 1) * kSubBuckets + ((value >> shift) - kSubBuckets));
}

uint64_t LatencyHistogram::bucket_lowest(size_t index) {
  const uint64_t group = index / kSubBuckets;
  const uint64_t sub = index % kSubBuckets;
  if (group == 0) return sub;
  return (kSubBuckets + sub) << (group - 1);
}

uint64_t LatencyHistogram::bucket_highest(size_t index) {
  const uint64_t group = index / kSubBuckets;
  if (group == 0) return index;
  return bucket_lowest(index) + (uint64_t{1} << (group - 1)) - 1;
}

void LatencyHistogram::record(uint64_t value) {
  ++counts_[bucket_index(value)];
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = sum_ = max_ = 0;
  min_ = UINT64_MAX;
}

uint64_t LatencyHistogram::percentile(double percent) const {
  if (count_ == 0) return 0;
  const double clamped = std::clamp(percent, 0.0, 100.0);
  // Product first, then a hair below: 99% of 100 samples is rank 99, not 100.
  uint64_t rank =
      static_cast<uint64_t>(std::ceil(clamped * static_cast<double>(count_) / 100.0 - 1e-9));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen < rank) continue;
    // The overflow bucket has no useful top: its samples are near max.
    return i == kBucketCount - 1 ? max_ : std::clamp(bucket_highest(i), min(), max_);
  }
  return max_;
}

}  // namespace dpquic::tools
