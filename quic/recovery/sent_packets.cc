#include "quic/recovery/sent_packets.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "quic/wire/packet_number.h"

namespace dpquic::recovery {

SentPackets::SentPackets(SentPacketPool& pool) : pool_(pool) {}

SentPackets::~SentPackets() { free_storage(); }

void SentPackets::free_storage() {
  pool_.release(slots_, capacity_, sizeof(Slot));
  pool_.release(live_, capacity_ / 64, sizeof(uint64_t));
  slots_ = nullptr;
  live_ = nullptr;
  capacity_ = 0;
  slot_mask_ = 0;
}

bool SentPackets::prepare_insert(uint64_t packet_number) {
  // Above 2^62 - 1 QUIC has no packet numbers, and near 2^64 next_ and the
  // iterators' arithmetic would wrap.
  if (packet_number < next_ || packet_number > wire::kMaxPacketNumber) return false;
  if (empty()) {
    // The window is empty, so it restarts at this packet wherever the head
    // is: every slot is vacant.
    if (slots_ == nullptr && !grow(pool_.initial_slots())) return false;
    base_ = packet_number;
  } else {
    const uint64_t needed = packet_number - base_ + 1;
    if (needed > capacity_) {
      if (needed > pool_.max_slots_per_ring()) return false;
      // capacity_ < needed <= the (power-of-two) bound, so doubling fits.
      const size_t slots = std::max(capacity_ * 2, std::bit_ceil(static_cast<size_t>(needed)));
      if (!grow(slots)) return false;
    }
  }
  if (packet_number > next_) remember_skip(next_, packet_number);
  next_ = packet_number + 1;
  return true;
}

void SentPackets::reclaim_front() {
  // The window starts at the next live packet (or is empty). Each slot is
  // passed over once, a word at a time.
  base_ = empty() ? next_ : next_live(base_ + 1, next_);
}

void SentPackets::clear() {
  // Liveness is only in the bitmap: clearing it vacates every slot.
  if (live_ != nullptr) std::memset(live_, 0, capacity_ / 8);
  removed_count_ = inserted_count_;
  removed_bytes_ = inserted_bytes_;
  removed_eliciting_ = inserted_eliciting_;
  base_ = next_;
}

void SentPackets::release_storage() {
  free_storage();
  clear();  // the counters; no bitmap is left to zero
}

bool SentPackets::never_sent(uint64_t packet_number) const {
  return any_never_sent(packet_number, packet_number);
}

bool SentPackets::any_never_sent(uint64_t smallest, uint64_t largest) const {
  if (largest >= next_) return true;
  // Newest first: ACK ranges sit near the top of the window. Skip ranges are
  // disjoint and ascending, so only the newest one starting at or below
  // `largest` can overlap [smallest, largest].
  for (size_t k = skip_count_; k > 0; --k) {
    const SkipRange& skip = skips_[(skip_oldest_ + k - 1) & (kMaxSkipRanges - 1)];
    if (skip.first > largest) continue;
    return skip.end > smallest;
  }
  return false;
}

bool SentPackets::grow(size_t slots) {
  const size_t words = slots / 64;
  auto* new_slots = static_cast<Slot*>(pool_.acquire(slots, sizeof(Slot)));
  auto* new_live = static_cast<uint64_t*>(pool_.acquire(words, sizeof(uint64_t)));
  if (new_slots == nullptr || new_live == nullptr) {
    pool_.release(new_slots, slots, sizeof(Slot));
    pool_.release(new_live, words, sizeof(uint64_t));
    return false;
  }
  // Pool storage is raw (and possibly recycled): start all vacant. Slots
  // need no initializing: only live ones are read, and insert() writes them.
  std::memset(new_live, 0, words * sizeof(uint64_t));

  // Move the live entries, the window starting at slot 0.
  const uint64_t size = window_size();
  for (uint64_t offset = 0; offset < size; offset += 64) {
    const uint64_t bits = live_bits(offset);
    new_live[offset >> 6] = bits;
    for (uint64_t rest = bits; rest != 0; rest &= rest - 1) {
      const uint64_t at = offset + std::countr_zero(rest);
      new_slots[at] = slots_[index(base_ + at)];
    }
  }
  pool_.release(slots_, capacity_, sizeof(Slot));
  pool_.release(live_, capacity_ / 64, sizeof(uint64_t));
  slots_ = new_slots;
  live_ = new_live;
  capacity_ = slots;
  slot_mask_ = slots - 1;
  slot_offset_ = static_cast<size_t>(0 - base_);  // base_ now in slot 0
  return true;
}

void SentPackets::remember_skip(uint64_t first, uint64_t end) {
  if (skip_count_ < kMaxSkipRanges) {
    skips_[(skip_oldest_ + skip_count_) & (kMaxSkipRanges - 1)] = {first, end};
    ++skip_count_;
  } else {
    skips_[skip_oldest_] = {first, end};  // forget the oldest
    skip_oldest_ = (skip_oldest_ + 1) & (kMaxSkipRanges - 1);
  }
}

}  // namespace dpquic::recovery
