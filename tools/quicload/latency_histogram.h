#pragma once
// An HDR-style latency histogram: log-linear buckets over nanoseconds, fixed
// size, no per-sample storage. Values below 2^kSubBucketBits are exact; above,
// each power of two is split into 2^kSubBucketBits equal buckets, so a
// reported percentile is at most 1/128 (0.8 %) above the true sample (it is
// the highest value of its bucket, capped at the exact maximum). Values from
// 2^kMaxValueBits ns (73 minutes) on share the last bucket (a percentile
// landing there reports the maximum); min and max stay exact. Histograms
// of several threads merge by adding counts.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpquic::tools {

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
  static constexpr unsigned kMaxValueBits = 42;
  // Group 0 holds [0, 2^S) exactly; group g >= 1 holds [2^(S+g-1), 2^(S+g)).
  static constexpr size_t kBucketCount = (kMaxValueBits - kSubBucketBits + 1) * kSubBuckets;

  LatencyHistogram();

  void record(uint64_t value);
  // Adds `other`'s samples.
  void merge(const LatencyHistogram& other);
  void clear();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  // The smallest bucket value v such that at least `percent`% of the samples
  // are <= v (nearest rank, at least one sample), capped at max(); 0 when
  // empty. percentile(100) is max().
  uint64_t percentile(double percent) const;

  static size_t bucket_index(uint64_t value);
  // The range of values bucket `index` stands for.
  static uint64_t bucket_lowest(size_t index);
  static uint64_t bucket_highest(size_t index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace dpquic::tools
