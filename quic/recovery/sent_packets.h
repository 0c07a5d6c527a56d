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
  // Slot storage: the packet of a live slot. Whether a slot is live is kept
  // only in the live bitmap (see live_bits()), so a slot is exactly a
  // SentPacket and four of them share a cache line.
  struct Slot {
    SentPacket packet;
  };

  // One live entry seen while iterating a range.
  struct Entry {
    uint64_t packet_number;
    const SentPacket& packet;
  };

  // Ascending iteration over the live entries of [lo, hi). Removing entries
  // while iterating (the current one, or any other) is safe: an iterator
  // reads the live bitmap afresh at each step. Inserting while iterating is
  // not (storage may move), and an Entry's reference is valid until the ring
  // is next changed.
  class Range {
   public:
    class Iterator {
     public:
      Entry operator*() const { return Entry{packet_number_, word_slots_[bit_].packet}; }
      Iterator& operator++() {
        advance();
        return *this;
      }
      friend bool operator==(const Iterator& a, const Iterator& b) {
        return a.packet_number_ == b.packet_number_;
      }

     private:
      friend class Range;
      explicit Iterator(uint64_t end) : packet_number_(end), end_(end) {}
      // Moves to the next live slot: the lowest of pending_ still live, else
      // the first live slot of the words after word_, stopping at stop_.
      void advance();
      // `bits` of word_ without those of numbers at or above stop_.
      uint64_t below_stop(uint64_t bits) const;

      const uint64_t* live_ = nullptr;
      const Slot* slots_ = nullptr;
      size_t word_mask_ = 0;    // bitmap words - 1
      uint64_t packet_number_;  // the current live entry, or end_
      uint64_t end_;
      // min(end_, largest sent + 1) when iteration began: where scanning
      // stops (removal leaves the largest sent unchanged).
      uint64_t stop_ = 0;
      size_t word_ = 0;                   // the bitmap word being walked
      const Slot* word_slots_ = nullptr;  // its 64 slots
      size_t bit_ = 0;                    // packet_number_'s bit in word_
      // The bits of word_ not yet visited (and below stop_). Each step ANDs
      // in the live word afresh, so entries removed since are skipped, and
      // the chain from one step to the next never waits on that load.
      uint64_t pending_ = 0;
      // The packet number of bit 0 of word_, modulo 2^64 (below the window
      // start in its first word, where the bits under it are masked).
      uint64_t word_number_ = 0;
    };

    Iterator begin() const;
    Iterator end() const { return Iterator(end_); }

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
    const uint64_t offset = packet_number - base_;  // wraps when below the window
    if (offset >= window_size()) return nullptr;
    const size_t i = index(packet_number);
    return (live_[i >> 6] >> (i & 63)) & 1 ? &slots_[i].packet : nullptr;
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
  // As clear(), and gives the storage back to the pool: for a space whose
  // keys are gone for good (Initial, Handshake), so an established
  // connection does not hold their rings. A later insert acquires again.
  void release_storage();

  size_t size() const { return inserted_count_ - removed_count_; }
  bool empty() const { return inserted_count_ == removed_count_; }
  // Bytes of live in_flight packets; live ack-eliciting packets (which are
  // always in flight, RFC 9002 §2). Kept on insert and remove: O(1).
  uint64_t bytes_in_flight() const { return inserted_bytes_ - removed_bytes_; }
  size_t ack_eliciting_in_flight() const { return inserted_eliciting_ - removed_eliciting_; }
  bool has_ack_eliciting_in_flight() const { return inserted_eliciting_ != removed_eliciting_; }

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
  // Direct slot access for ACK processing: nullptr outside the window. The
  // slot's packet is meaningful only if it is live (get() != nullptr).
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
    return (static_cast<size_t>(packet_number) + slot_offset_) & slot_mask_;
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
  // Gives the slots and the bitmap back to the pool; the ring has no storage.
  void free_storage();
  void remember_skip(uint64_t first, uint64_t end);

  // Member order matters for speed: no two members that insert() or
  // remove() update sit side by side (members those paths only read sit in
  // between), so the compiler cannot merge two updates into one 16-byte
  // vector store that a later 8-byte access of one of them would have to
  // wait on (a store-forwarding stall that made insert+remove twice as slow).
  //
  // The counters behind size(), bytes_in_flight() and
  // ack_eliciting_in_flight() are kept as running totals of what insert()
  // added and remove() took away, so that each path updates only its own
  // (alternating send and ACK then makes two short dependency chains rather
  // than one long one). They wrap like any uint64_t; the differences are
  // exact.
  //
  // The window [base_, next_): base_ is the smallest live packet number, or
  // next_ when nothing is live.
  uint64_t base_ = 0;
  // Ring storage from pool_: capacity_ slots and a live bitmap of
  // capacity_ / 64 words, bit i of word w for slot 64 * w + i. Slots outside
  // the window are always vacant (their bits are 0).
  Slot* slots_ = nullptr;
  size_t removed_count_ = 0;
  uint64_t* live_ = nullptr;
  uint64_t removed_bytes_ = 0;  // of in_flight packets
  // Packet number n lives in slot (n + slot_offset_) & slot_mask_. The
  // offset changes only when storage moves, so moving the window's front
  // needs no slot bookkeeping.
  size_t slot_offset_ = 0;
  size_t removed_eliciting_ = 0;
  size_t slot_mask_ = 0;  // capacity_ - 1 once there is storage
  uint64_t next_ = 0;     // one past the largest sent; 0 before the first insert
  size_t capacity_ = 0;   // a power of two, >= SentPacketPool::kMinRingSlots
  size_t inserted_count_ = 0;
  SentPacketPool& pool_;
  uint64_t inserted_bytes_ = 0;
  // Recent skipped ranges, a ring of kMaxSkipRanges in ascending order from
  // skip_oldest_ (touched only when numbers are skipped or ACKs validated).
  size_t skip_count_ = 0;
  size_t inserted_eliciting_ = 0;
  size_t skip_oldest_ = 0;
  SkipRange skips_[kMaxSkipRanges] = {};
};

static_assert(sizeof(SentPackets::Slot) == sizeof(SentPacket));

inline bool SentPackets::insert(uint64_t packet_number, const SentPacket& packet) {
  if (packet_number == next_ && !empty() && packet_number - base_ < capacity_) [[likely]] {
    next_ = packet_number + 1;  // the common case: append the next number
  } else if (!prepare_insert(packet_number)) {
    return false;
  }
  const size_t i = index(packet_number);
  slots_[i].packet = packet;
  live_[i >> 6] |= uint64_t{1} << (i & 63);
  ++inserted_count_;
  inserted_bytes_ += packet.size & (uint64_t{0} - packet.in_flight);
  inserted_eliciting_ += packet.ack_eliciting;
  return true;
}

inline std::optional<SentPacket> SentPackets::remove(uint64_t packet_number) {
  // One comparison for both ends: below base_ the offset wraps to a huge one.
  const uint64_t offset = packet_number - base_;
  if (offset >= window_size()) return std::nullopt;
  const size_t i = index(packet_number);
  uint64_t& word = live_[i >> 6];
  const uint64_t bit = uint64_t{1} << (i & 63);
  if ((word & bit) == 0) return std::nullopt;
  const uint64_t rest = word & ~bit;
  word = rest;
  const SentPacket packet = slots_[i].packet;
  ++removed_count_;
  removed_bytes_ += packet.size & (uint64_t{0} - packet.in_flight);
  removed_eliciting_ += packet.ack_eliciting;
  if (offset == 0) {
    // Reclaim the vacant front. Usually the next live packet is later in the
    // same bitmap word (slots past the window are vacant, so any bit found is
    // inside it, and within a word slot indices do not wrap); reclaim_front()
    // handles the rest.
    const uint64_t ahead = rest >> (i & 63);
    if (ahead != 0) {
      base_ += static_cast<uint64_t>(std::countr_zero(ahead));
    } else {
      reclaim_front();
    }
  }
  return packet;
}

inline uint64_t SentPackets::live_bits(uint64_t offset) const {
  const uint64_t size = window_size();
  if (offset >= size) return 0;
  // offset < size <= capacity_, so the cast keeps every bit.
  const size_t position = index(base_ + offset);
  const size_t word = position >> 6;
  const size_t shift = position & 63;
  uint64_t bits = live_[word] >> shift;
  if (shift != 0) bits |= live_[(word + 1) & (slot_mask_ >> 6)] << (64 - shift);
  // A full ring wraps onto its own front: cut at the window's end.
  const uint64_t left = size - offset;
  if (left < 64) bits &= (uint64_t{1} << left) - 1;
  return bits;
}

inline uint64_t SentPackets::next_live(uint64_t from, uint64_t limit) const {
  from = from > base_ ? from : base_;
  const uint64_t stop = limit < next_ ? limit : next_;
  if (from >= stop) return limit;
  // base_ is live whenever the window is non-empty (it is here: from < next_),
  // so loss detection's walk from the front finds its first entry at once.
  if (from == base_) return base_;
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

inline uint64_t SentPackets::Range::Iterator::below_stop(uint64_t bits) const {
  // word_number_ <= a number in the range < stop_: the difference is the
  // true one even where word_number_ wrapped.
  const uint64_t left = stop_ - word_number_;
  return left < 64 ? bits & ((uint64_t{1} << left) - 1) : bits;
}

inline void SentPackets::Range::Iterator::advance() {
  // Slots outside the window are vacant, and the mapping from a slot to its
  // packet number (word_number_ + bit) holds for every slot reached going
  // up from the start (a full ring's wrap onto its own front gives numbers
  // at or above the largest sent + 1 >= stop_, which are masked off).
  uint64_t bits = pending_ & live_[word_];
  while (bits == 0) {
    word_number_ += 64;
    if (word_number_ >= stop_) {
      packet_number_ = end_;
      return;
    }
    word_ = (word_ + 1) & word_mask_;
    word_slots_ = slots_ + (word_ << 6);
    bits = below_stop(live_[word_]);
  }
  pending_ = bits & (bits - 1);
  bit_ = static_cast<unsigned>(std::countr_zero(bits));
  packet_number_ = word_number_ + bit_;
}

inline SentPackets::Range::Iterator SentPackets::Range::begin() const {
  const SentPackets& ring = *packets_;
  Iterator it(end_);
  const uint64_t from = lo_ > ring.base_ ? lo_ : ring.base_;
  it.stop_ = end_ < ring.next_ ? end_ : ring.next_;
  if (from >= it.stop_) return it;  // nothing live in range (or no storage)
  it.live_ = ring.live_;
  it.slots_ = ring.slots_;
  it.word_mask_ = ring.slot_mask_ >> 6;
  const size_t slot = ring.index(from);
  it.word_ = slot >> 6;
  it.word_slots_ = ring.slots_ + (slot & ~size_t{63});
  it.word_number_ = from - (slot & 63);
  if (from == ring.base_) {
    // The window's start is live whenever the window is non-empty (it is:
    // from < next_), so loss detection's walk from the front starts at once.
    it.bit_ = slot & 63;
    it.packet_number_ = from;
    it.pending_ = it.below_stop(~uint64_t{1} << (slot & 63));
    return it;
  }
  it.pending_ = it.below_stop(~uint64_t{0} << (slot & 63));
  it.advance();
  return it;
}

}  // namespace dpquic::recovery
