#pragma once
// Seeded, deterministic impairment decisions for one direction of a simulated
// link: which datagrams are lost (by index, in a Gilbert-Elliott burst, or at
// random), corrupted, reordered, duplicated or ECN-remarked.
//
// Each kind of impairment draws from its own random stream derived from the
// seed, so one datagram's fate under, say, loss depends only on the seed and
// its index, not on which other impairments are enabled: "2% loss" drops the
// same datagrams with or without corruption switched on.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/impair/rng.h"

namespace dpquic::harness {

struct LinkConfig;

enum class DropReason : uint8_t { kNone, kIndex, kBurst, kRandom };

// What happens to one datagram entering the link.
struct ImpairmentVerdict {
  DropReason drop = DropReason::kNone;
  bool corrupt = false;
  uint64_t corrupt_bit = 0;  // bit index into the payload, when corrupt
  bool reorder = false;
  bool duplicate = false;
  bool ce_mark = false;  // an ECN-capable datagram gets CE
};

class Impairment {
 public:
  // `first_index` is the index of the next datagram entering the link (not 0
  // when a link is reconfigured mid-run: drop_indices count from the link's
  // first datagram).
  explicit Impairment(const LinkConfig& config, uint64_t first_index = 0);

  // Decides the fate of the next datagram (of `size` bytes) entering the link.
  // Must be called once per datagram, in order: the index-based drops and the
  // burst state advance with every call.
  ImpairmentVerdict next(size_t size);

  // Datagrams decided so far (the index the next datagram will get).
  uint64_t index() const { return index_; }
  bool in_burst() const { return burst_.bad(); }

 private:
  double loss_;
  double burst_enter_;  // 0: no Gilbert-Elliott loss
  double reorder_;
  double duplicate_;
  double corrupt_;
  double ce_mark_;
  std::vector<uint64_t> drop_indices_;  // sorted, unique
  size_t next_drop_ = 0;                // cursor into drop_indices_
  uint64_t index_ = 0;
  impair::GilbertElliott burst_;
  impair::Rng burst_rng_;
  impair::Rng loss_rng_;
  impair::Rng corrupt_rng_;
  impair::Rng reorder_rng_;
  impair::Rng duplicate_rng_;
  impair::Rng ce_rng_;
};

}  // namespace dpquic::harness
