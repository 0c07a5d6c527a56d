#pragma once
// The packet numbers received in one packet number space, as disjoint ranges
// (RFC 9000 §13.2.3), for duplicate detection and for the ranges of outgoing
// ACK frames.
//
// Storage is inline and fixed at construction: receiving a packet never
// allocates. The count of ranges is bounded: when a new range does not fit,
// the oldest (smallest) range is dropped and everything below the oldest range
// still kept becomes "too old".
//
// The floor. RFC 9000 §13.2.3 lets a receiver forget a range only if it will
// never accept a packet in it again. So forgetting raises floor(): a number
// below it is never accepted (insert() returns false, exactly as for a
// duplicate), whether it was received or not. The floor rises when ranges are
// dropped for capacity and when remove_below() prunes what the peer has seen
// acknowledged (§13.2.4); a packet that arrives that late is discarded, and
// the peer, which by then has declared it lost, resends its frames.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/wire/ack_ranges.h"

namespace dpquic::recovery {

class ReceivedRanges {
 public:
  // Enough for heavy reordering and loss; an ACK frame with this many ranges
  // is at most ~550 bytes (32 ranges, two 8-byte varints each).
  static constexpr size_t kMaxRanges = 32;

  // Keeps at most `capacity` ranges, 1 to kMaxRanges; anything else throws
  // std::invalid_argument (configuration time, not the packet path).
  explicit ReceivedRanges(size_t capacity = kMaxRanges);

  // Records `packet_number`. Returns true if it is new; false if it was
  // already received or is below floor(), or if the set is full and it would
  // start a new range below every kept range (it is then too old: the floor
  // rises to the oldest kept range). When a new range above the oldest is
  // needed and the set is full, the oldest range is dropped.
  [[nodiscard]] bool insert(uint64_t packet_number);

  // Whether insert() would return false, without changing anything (lets the
  // caller drop a duplicate before processing its frames).
  bool is_duplicate(uint64_t packet_number) const;

  // Whether `packet_number` lies in a kept range.
  bool contains(uint64_t packet_number) const;

  // The kept range holding `packet_number`, or nullptr.
  const wire::AckRange* find(uint64_t packet_number) const;

  // Forgets every number below `packet_number` (trimming a range that
  // straddles it) and raises the floor to it.
  void remove_below(uint64_t packet_number);

  // Forgets every range; the floor stays.
  void clear() { size_ = 0; }

  // Kept ranges, largest first, disjoint and non-adjacent: the form
  // wire::encode_ack_frame takes.
  std::span<const wire::AckRange> ranges() const { return {ranges_.data(), size_}; }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Smallest packet number insert() may still accept.
  uint64_t floor() const { return floor_; }
  // Largest kept packet number; only meaningful when !empty().
  uint64_t largest() const { return ranges_[0].largest; }

 private:
  // Index of the first range (largest first) whose smallest is <=
  // packet_number, or size_ if none.
  size_t lower_index(uint64_t packet_number) const;
  // Makes room and writes {pn, pn} at `index`, which is < size_ or == size_.
  // Returns false when the set is full and index == size_ (too old).
  bool insert_new_range(size_t index, uint64_t packet_number);
  void erase(size_t index);

  std::array<wire::AckRange, kMaxRanges> ranges_{};
  size_t size_ = 0;
  size_t capacity_;
  uint64_t floor_ = 0;
};

}  // namespace dpquic::recovery
