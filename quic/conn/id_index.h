#pragma once
// Stream id -> stream table slot, as an open-addressing hash map.
//
// Linear probing over a power-of-two table, grown by doubling when an insert
// would make it more than 3/4 full. Inserts happen when a stream is created,
// so growth never happens per packet; find() never allocates. Deletion
// shifts later entries of the probe run back (no tombstones), so lookups
// stay short however many streams come and go.
//
// Keys are stream ids (< 2^62); ids above kMaxStreamId are refused, which
// frees all-ones as the empty-bucket marker.
//
// The last id found is remembered: a bulk transfer looks up one stream for
// every STREAM frame it sends, receives and sees acknowledged, and the memo
// answers those without hashing or probing. erase() and clear() forget it;
// slots never move, so inserts and rehashes keep it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "quic/conn/stream_id.h"

namespace dpquic::conn {

class IdIndex {
 public:
  explicit IdIndex(size_t initial_capacity = 16);

  static constexpr uint32_t kNoSlot = ~uint32_t{0};

  // False if `id` is already present (nothing changes), above kMaxStreamId,
  // or `slot` is kNoSlot.
  bool insert(uint64_t id, uint32_t slot);
  // The slot of `id`, or kNoSlot. The hot path's lookup: a std::optional
  // merged from the memo's two paths was built on the stack in two stores
  // and read back in one wider load, which stalls on store forwarding.
  uint32_t slot_of(uint64_t id) const {
    if (id == last_id_ && id != kEmpty) return last_slot_;
    return probe(id);
  }
  std::optional<uint32_t> find(uint64_t id) const {
    const uint32_t slot = slot_of(id);
    return slot == kNoSlot ? std::nullopt : std::optional<uint32_t>(slot);
  }
  bool erase(uint64_t id);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The number of buckets (a power of two).
  size_t capacity() const { return buckets_.size(); }
  // Removes every entry; keeps the buckets.
  void clear();
  // Grows now so that `count` entries fit without a later rehash.
  void reserve(size_t count);

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  struct Bucket {
    uint64_t id = kEmpty;
    uint32_t slot = 0;
  };

  size_t home_of(uint64_t id) const {
    // Fibonacci hashing: the multiply spreads every input bit into the high
    // bits, which the shift keeps (stream ids differ mostly in high bits
    // after their two type bits).
    return static_cast<size_t>((id * 0x9e3779b97f4a7c15ull) >> shift_);
  }
  size_t mask() const { return buckets_.size() - 1; }
  // Whether `count` entries fit in `buckets` buckets at the 3/4 load limit.
  static bool fits(size_t count, size_t buckets) { return count * 4 <= buckets * 3; }
  void rehash(size_t new_capacity);
  // Puts an entry known to be absent in the first empty bucket of its run.
  void place(const Bucket& entry);
  // slot_of() past the memo; remembers what it finds.
  uint32_t probe(uint64_t id) const;

  std::vector<Bucket> buckets_;
  unsigned shift_ = 64;
  size_t size_ = 0;
  // The memo: kEmpty when there is none (no stream has that id).
  mutable uint64_t last_id_ = kEmpty;
  mutable uint32_t last_slot_ = 0;
};

}  // namespace dpquic::conn
