#pragma once
// SentPackets: one packet number space's sent-packet window as a sparse ring.
//
// Packet numbers only grow, so the window is a contiguous array of optional
// slots indexed by `packet_number - base`: inserting is an append, removing
// (on ACK or loss) is O(1), and vacant slots at the front are reclaimed as
// the low end is acknowledged, so the ring spans only the live window.
// Storage comes from the core's SentPacketPool, grows by doubling, and is
// never freed per packet.
//
// A packet number passed over by insert() was skipped on purpose (the
// optimistic-ACK defence, RFC 9000 §21.4): an ACK naming it, or naming a
// number above the largest sent, is a PROTOCOL_VIOLATION (RFC 9000 §13.1).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "quic/recovery/sent_packet.h"
#include "quic/recovery/sent_packet_pool.h"

namespace dpquic::recovery {

class SentPackets {
 public:
  // Slot storage: a packet, or vacant (never sent, acknowledged or lost).
  struct Slot {
    SentPacket packet;
    bool live = false;
  };

  // One live entry seen while iterating a range.
  struct Entry {
    uint64_t packet_number;
    const SentPacket& packet;
  };

  // Ascending iteration over the live entries of [lo, hi). Removing entries
  // while iterating (the current one, or later ones) is safe: an iterator
  // caches the live bits of the next numbers, but re-checks each before
  // visiting it. Inserting while iterating is not (storage may move), and an
  // Entry's reference is valid until the ring is next changed.
  class Range {
   public:
    class Iterator {
     public:
      Entry operator*() const;
      Iterator& operator++();
      friend bool operator==(const Iterator& a, const Iterator& b) {
        return a.packet_number_ == b.packet_number_;
      }

     private:
      friend class Range;
      Iterator(const SentPackets* packets, uint64_t packet_number, uint64_t end)
          : packets_(packets), packet_number_(packet_number), end_(end) {}
      // Caches the live bits of the 64 numbers after packet_number_.
      void cache_after();
      const SentPackets* packets_;
      uint64_t packet_number_;  // the current live entry, or end_
      uint64_t end_;
      uint64_t cached_bits_ = 0;  // bit i: cached_from_ + i was live when cached
      uint64_t cached_from_ = 0;
    };

    Iterator begin() const;
    Iterator end() const { return Iterator(packets_, end_, end_); }

   private:
    friend class SentPackets;
    Range(const SentPackets* packets, uint64_t lo, uint64_t hi)
        : packets_(packets), lo_(lo), end_(hi) {}
    const SentPackets* packets_;
    uint64_t lo_;
    uint64_t end_;
  };

  explicit SentPackets(SentPacketPool& pool);
  ~SentPackets();
  SentPackets(const SentPackets&) = delete;
  SentPackets& operator=(const SentPackets&) = delete;

  // Appends `packet_number`, which must be above every number inserted so
  // far; numbers passed over become vacant, skipped slots. Returns false
  // (nothing changed) if the number does not grow the window, the pool
  // cannot provide storage, or it is above wire::kMaxPacketNumber (checked
  // everywhere but the fast append of the next number into a live window:
  // the caller stops at kMaxPacketNumber, RFC 9000 §12.3).
  bool insert(uint64_t packet_number, const SentPacket& packet);

  // Removes a live entry in O(1), returning it; nullopt if absent.
  std::optional<SentPacket> remove(uint64_t packet_number);

  // nullptr / false when absent, including outside the window.
  const SentPacket* get(uint64_t packet_number) const {
    const Slot* s = slot(packet_number);
    return s != nullptr && s->live ? &s->packet : nullptr;
  }
  bool contains(uint64_t packet_number) const { return get(packet_number) != nullptr; }

  // Live entries with lo <= packet number < hi, ascending (empty if lo >= hi).
  Range range(uint64_t lo, uint64_t hi) const { return Range(this, lo < hi ? lo : hi, hi); }
  // Live entries with after < packet number < hi ("first entry after x").
  Range range_after(uint64_t after, uint64_t hi) const {
    return after >= hi ? Range(this, hi, hi) : Range(this, after + 1, hi);
  }
  // Every live entry, ascending.
  Range all() const { return Range(this, base_, next_); }

  // True when `packet_number` was never sent: above the largest sent, or
  // skipped. Such a number in an ACK is a PROTOCOL_VIOLATION.
  //
  // Skipped numbers are remembered as ranges, the most recent
  // kMaxSkipRanges of them (one range per insert() that passed numbers
  // over). Skips are rare (one every few hundred packets at most), so that
  // usually covers the in-flight window; a skipped number older than that
  // bound can no longer be detected (even inside a window spanning more
  // than kMaxSkipRanges skips: its slot is vacant like an acknowledged
  // one's), and an ACK naming it is then treated like one for an
  // acknowledged packet.
  bool never_sent(uint64_t packet_number) const;
  // True when any number in [smallest, largest] was never sent (validating
  // one ACK range in O(recent skips), not per packet).
  bool any_never_sent(uint64_t smallest, uint64_t largest) const;
  static constexpr size_t kMaxSkipRanges = 32;  // a power of two

  // Drops every entry (e.g. when the space's keys are discarded) and keeps
  // the storage for reuse. The largest sent number is remembered.
  void clear();

  size_t size() const { return live_count_; }
  bool empty() const { return live_count_ == 0; }
  // Bytes of live in_flight packets; live ack-eliciting packets (which are
  // always in flight, RFC 9002 §2). Kept on insert and remove: O(1).
  uint64_t bytes_in_flight() const { return bytes_in_flight_; }
  size_t ack_eliciting_in_flight() const { return ack_eliciting_in_flight_; }
  bool has_ack_eliciting_in_flight() const { return ack_eliciting_in_flight_ != 0; }

  // Largest packet number inserted; nullopt before the first insert.
  std::optional<uint64_t> largest_sent() const {
    return next_ == 0 ? std::nullopt : std::optional<uint64_t>(next_ - 1);
  }
  // The ring spans [window_begin(), largest_sent() + 1): window_begin() is
  // the smallest live packet number, or one past the largest sent when
  // nothing is live.
  uint64_t window_begin() const { return base_; }
  uint64_t window_size() const { return next_ - base_; }
  size_t capacity() const { return capacity_; }
  // Direct slot access for ACK processing: nullptr outside the window.
  const Slot* slot(uint64_t packet_number) const {
    if (packet_number < base_ || packet_number >= next_) return nullptr;
    return &slots_[index(packet_number)];
  }
  // The live flags of the 64 packet numbers from window_begin() + offset
  // upwards, bit i for window_begin() + offset + i; bits past the window are
  // 0. A word at a time, for ACK processing and scans.
  uint64_t live_bits(uint64_t offset) const;

 private:
  struct SkipRange {
    uint64_t first;  // first number skipped
    uint64_t end;    // one past the last
  };

  // Slot index of a packet number inside the window.
  size_t index(uint64_t packet_number) const {
    return (head_ + static_cast<size_t>(packet_number - base_)) & (capacity_ - 1);
  }
  // The smallest live packet number in [from, limit), or limit.
  uint64_t next_live(uint64_t from, uint64_t limit) const;
  // insert() beyond the common case (appending next_ to a non-empty window
  // that has room): first storage, a restarted window, growth, skips. Leaves
  // next_ = packet_number + 1 on success; changes nothing on failure.
  bool prepare_insert(uint64_t packet_number);
  // After the front packet was removed: moves base_ to the next live one.
  void reclaim_front();
  // Moves storage to `slots` slots (a power of two >= the window), keeping
  // the window; false if the pool cannot provide it.
  bool grow(size_t slots);
  void remember_skip(uint64_t first, uint64_t end);

  // Member order matters for speed: each counter updated on insert/remove
  // sits between members those paths only read, so the compiler cannot
  // merge two counters' updates into one 16-byte store that a later 8-byte
  // update of one of them would have to wait on (a store-forwarding stall
  // that made insert+remove twice as slow).
  //
  // The window [base_, next_): base_ is the smallest live packet number, or
  // next_ when nothing is live.
  uint64_t base_ = 0;
  size_t head_ = 0;  // slot index of base_
  // Ring storage from pool_: capacity_ slots and a live bitmap of
  // capacity_ / 64 words, bit i of word w for slot 64 * w + i. Slots outside
  // the window are always vacant.
  Slot* slots_ = nullptr;
  size_t live_count_ = 0;
  uint64_t* live_ = nullptr;
  uint64_t bytes_in_flight_ = 0;
  size_t capacity_ = 0;  // a power of two, >= SentPacketPool::kMinRingSlots
  size_t ack_eliciting_in_flight_ = 0;
  SentPacketPool& pool_;
  uint64_t next_ = 0;  // one past the largest sent; 0 before the first insert
  // Recent skipped ranges, a ring of kMaxSkipRanges in ascending order from
  // skip_oldest_.
  SkipRange skips_[kMaxSkipRanges] = {};
  size_t skip_oldest_ = 0;
  size_t skip_count_ = 0;
};

inline bool SentPackets::insert(uint64_t packet_number, const SentPacket& packet) {
  if (packet_number == next_ && live_count_ != 0 && packet_number - base_ < capacity_) {
    next_ = packet_number + 1;  // the common case: append the next number
  } else if (!prepare_insert(packet_number)) {
    return false;
  }
  const size_t i = index(packet_number);
  slots_[i].packet = packet;
  slots_[i].live = true;
  live_[i >> 6] |= uint64_t{1} << (i & 63);
  ++live_count_;
  bytes_in_flight_ += packet.in_flight ? packet.size : 0;
  ack_eliciting_in_flight_ += packet.ack_eliciting ? 1 : 0;
  return true;
}

inline std::optional<SentPacket> SentPackets::remove(uint64_t packet_number) {
  if (packet_number < base_ || packet_number >= next_) return std::nullopt;
  const size_t i = index(packet_number);
  Slot& slot = slots_[i];
  if (!slot.live) return std::nullopt;
  slot.live = false;
  live_[i >> 6] &= ~(uint64_t{1} << (i & 63));
  --live_count_;
  bytes_in_flight_ -= slot.packet.in_flight ? slot.packet.size : 0;
  ack_eliciting_in_flight_ -= slot.packet.ack_eliciting ? 1 : 0;
  if (packet_number == base_) {
    // Reclaim the vacant front: usually the next live packet is within a
    // word; reclaim_front() handles the rest.
    const uint64_t bits = live_bits(1);
    if (bits != 0) {
      base_ += 1 + static_cast<uint64_t>(std::countr_zero(bits));
      head_ = (head_ + 1 + static_cast<size_t>(std::countr_zero(bits))) & (capacity_ - 1);
    } else {
      reclaim_front();
    }
  }
  return slot.packet;
}

inline uint64_t SentPackets::live_bits(uint64_t offset) const {
  const uint64_t size = window_size();
  if (offset >= size) return 0;
  // offset < size <= capacity_, so the cast keeps every bit.
  const size_t position = (head_ + static_cast<size_t>(offset)) & (capacity_ - 1);
  const size_t word = position >> 6;
  const size_t shift = position & 63;
  uint64_t bits = live_[word] >> shift;
  if (shift != 0) bits |= live_[(word + 1) & ((capacity_ >> 6) - 1)] << (64 - shift);
  // A full ring wraps onto its own front: cut at the window's end.
  const uint64_t left = size - offset;
  if (left < 64) bits &= (uint64_t{1} << left) - 1;
  return bits;
}

inline uint64_t SentPackets::next_live(uint64_t from, uint64_t limit) const {
  from = from > base_ ? from : base_;
  const uint64_t stop = limit < next_ ? limit : next_;
  if (from >= stop) return limit;
  const uint64_t stop_offset = stop - base_;
  for (uint64_t offset = from - base_; offset < stop_offset; offset += 64) {
    const uint64_t bits = live_bits(offset);
    if (bits != 0) {
      const uint64_t found = offset + static_cast<uint64_t>(std::countr_zero(bits));
      return found < stop_offset ? base_ + found : limit;
    }
  }
  return limit;
}

inline SentPackets::Entry SentPackets::Range::Iterator::operator*() const {
  return Entry{packet_number_, packets_->slots_[packets_->index(packet_number_)].packet};
}

inline void SentPackets::Range::Iterator::cache_after() {
  cached_from_ = packet_number_ + 1;
  cached_bits_ = packets_->live_bits(cached_from_ - packets_->base_);
}

inline SentPackets::Range::Iterator& SentPackets::Range::Iterator::operator++() {
  if (packet_number_ >= end_) return *this;
  const SentPackets& ring = *packets_;
  while (cached_bits_ != 0) {
    const uint64_t candidate = cached_from_ + static_cast<uint64_t>(std::countr_zero(cached_bits_));
    cached_bits_ &= cached_bits_ - 1;
    if (candidate >= end_) break;
    // Still live? (It may have been removed since it was cached; a number
    // below the window has a vacant slot, as every slot outside it has.)
    if (ring.slots_[ring.index(candidate)].live) {
      packet_number_ = candidate;
      return *this;
    }
  }
  const uint64_t from = cached_from_ + 64;
  packet_number_ = from >= end_ ? end_ : ring.next_live(from, end_);
  if (packet_number_ < end_) cache_after();
  return *this;
}

inline SentPackets::Range::Iterator SentPackets::Range::begin() const {
  Iterator it(packets_, packets_->next_live(lo_, end_), end_);
  if (it.packet_number_ < end_) it.cache_after();
  return it;
}

}  // namespace dpquic::recovery
