#include "tools/testbed/impairment.h"

#include <algorithm>

#include "tools/testbed/link.h"

namespace dpquic::harness {
namespace {

// Distinct streams per impairment kind (arbitrary odd constants).
constexpr uint64_t kBurstStream = 0x42a1f3c5d7e9b0b1ull;
constexpr uint64_t kLossStream = 0x1c3e5a7b9d0f2e4dull;
constexpr uint64_t kCorruptStream = 0x7f6e5d4c3b2a1909ull;
constexpr uint64_t kReorderStream = 0x0123456789abcdefull;
constexpr uint64_t kDuplicateStream = 0xfedcba9876543211ull;
constexpr uint64_t kCeStream = 0x5555aaaa3333cccdull;

}  // namespace

Impairment::Impairment(const LinkConfig& config, uint64_t first_index)
    : loss_(config.loss),
      burst_enter_(config.burst_loss_enter),
      reorder_(config.reorder),
      duplicate_(config.duplicate),
      corrupt_(config.corrupt),
      ce_mark_(config.ce_mark),
      drop_indices_(config.drop_indices),
      index_(first_index),
      burst_(config.burst_loss_enter, config.burst_loss_exit),
      burst_rng_(config.seed ^ kBurstStream),
      loss_rng_(config.seed ^ kLossStream),
      corrupt_rng_(config.seed ^ kCorruptStream),
      reorder_rng_(config.seed ^ kReorderStream),
      duplicate_rng_(config.seed ^ kDuplicateStream),
      ce_rng_(config.seed ^ kCeStream) {
  std::sort(drop_indices_.begin(), drop_indices_.end());
  drop_indices_.erase(std::unique(drop_indices_.begin(), drop_indices_.end()), drop_indices_.end());
  next_drop_ = static_cast<size_t>(
      std::lower_bound(drop_indices_.begin(), drop_indices_.end(), first_index) -
      drop_indices_.begin());
}

ImpairmentVerdict Impairment::next(size_t size) {
  ImpairmentVerdict verdict;
  const uint64_t index = index_++;

  // Every stream advances for every datagram whatever the others decide, so
  // each stream's pattern is a function of the seed and the index alone.
  bool index_drop = false;
  if (next_drop_ < drop_indices_.size() && drop_indices_[next_drop_] == index) {
    index_drop = true;
    ++next_drop_;
  }
  // Gilbert-Elliott: the state moves first, then a datagram sent in the bad
  // state is lost, so a burst lasts 1/exit datagrams on average.
  const bool burst_loss = burst_enter_ > 0 && burst_.lose(burst_rng_);
  const bool random_loss = loss_rng_.chance(loss_);
  const bool corrupt = size > 0 && corrupt_rng_.chance(corrupt_);
  if (corrupt) verdict.corrupt_bit = corrupt_rng_.below(static_cast<uint64_t>(size) * 8);
  const bool reorder = reorder_rng_.chance(reorder_);
  const bool duplicate = duplicate_rng_.chance(duplicate_);
  const bool ce_mark = ce_rng_.chance(ce_mark_);

  if (index_drop) {
    verdict.drop = DropReason::kIndex;
  } else if (burst_loss) {
    verdict.drop = DropReason::kBurst;
  } else if (random_loss) {
    verdict.drop = DropReason::kRandom;
  }
  if (verdict.drop != DropReason::kNone) return verdict;
  verdict.corrupt = corrupt;
  verdict.reorder = reorder;
  verdict.duplicate = duplicate;
  verdict.ce_mark = ce_mark;
  return verdict;
}

}  // namespace dpquic::harness
