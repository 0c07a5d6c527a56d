// ACK ranges (RFC 9000 §19.3.1): a validated, allocation-free view over the
// ranges of a received ACK frame, and the encoder for the range section of an
// outgoing one.
//
// The view is checked in full when it is parsed (every range, so no packet
// number can be negative), then iterated lazily from the frame's own bytes:
// a received ACK is never copied into a container.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

#include "quic/wire/errors.h"
#include "quic/wire/varint.h"

namespace dpquic::wire {

// Packet numbers smallest..largest, both inclusive.
struct AckRange {
  uint64_t smallest = 0;
  uint64_t largest = 0;

  friend bool operator==(const AckRange&, const AckRange&) = default;
};

// The ranges of one received ACK frame, largest first. Refers to the packet
// bytes it was parsed from; it must not outlive them.
class AckRangeView {
 public:
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = AckRange;
    using difference_type = std::ptrdiff_t;
    using pointer = const AckRange*;
    using reference = const AckRange&;

    Iterator() = default;

    const AckRange& operator*() const { return current_; }
    const AckRange* operator->() const { return &current_; }
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    // Iterators of one view compare by how many ranges they have left.
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.left_ == b.left_; }

   private:
    friend class AckRangeView;

    AckRange current_;
    uint64_t left_ = 0;  // ranges not yet passed, counting current_
    std::span<const uint8_t> pairs_;
  };

  AckRangeView() = default;

  // Parses ACK Range Count, First ACK Range and every (Gap, ACK Range Length)
  // pair, which follow the ACK Delay field, for an ACK whose Largest
  // Acknowledged is `largest_acknowledged`. Every range is checked here: a
  // truncated field or a range reaching below packet number 0 is
  // kFrameEncodingError. On success `reader` is past the last pair.
  static WireError parse(ByteReader& reader, uint64_t largest_acknowledged, AckRangeView& out);

  uint64_t largest() const { return largest_; }
  // The smallest packet number the whole ACK acknowledges.
  uint64_t smallest() const { return smallest_; }
  // Number of ranges: the ACK Range Count field plus one (the first range).
  uint64_t size() const { return additional_ranges_ + 1; }
  // The encoded (Gap, ACK Range Length) pairs after the first range.
  std::span<const uint8_t> encoded_pairs() const { return pairs_; }

  Iterator begin() const;
  Iterator end() const { return Iterator(); }

 private:
  uint64_t largest_ = 0;
  uint64_t first_range_ = 0;
  uint64_t smallest_ = 0;
  uint64_t additional_ranges_ = 0;
  std::span<const uint8_t> pairs_;
};

// Writes ACK Range Count, First ACK Range and the (Gap, ACK Range Length)
// pairs for `ranges` (the Largest Acknowledged field is ranges[0].largest and
// is the caller's to write). `ranges` must be non-empty, each with smallest <=
// largest, in descending order, with at least one unacknowledged packet
// between neighbours. Returns false, writing nothing, if they are not or if
// they do not fit.
bool encode_ack_ranges(ByteWriter& writer, std::span<const AckRange> ranges);
// The same for the ranges of a received ACK (round trips, tests).
bool encode_ack_ranges(ByteWriter& writer, const AckRangeView& ranges);

// Same ranges, in the same order.
bool same_ranges(const AckRangeView& a, const AckRangeView& b);

}  // namespace dpquic::wire
