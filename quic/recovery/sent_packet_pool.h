#pragma once
// SentPacketPool: the per-core store of sent-packet ring storage.
//
// Rings of every connection on a core take their slot arrays from here in
// power-of-two sizes, and give them back when they grow or close. Freed
// arrays are kept on per-size free lists, so after warm-up a connection's
// ring storage is recycled rather than allocated: nothing is allocated per
// packet, and connection churn reuses memory. The pool is single-threaded,
// like everything a core shard owns.
//
// Free lists are kept per (slot size, power-of-two slot count). A ring uses
// two slot sizes (its slots and its live bitmap words); the pool recycles up
// to kMaxSlotSizes distinct slot sizes, and storage of any further size is
// allocated and freed directly. Every block a ring holds must be released
// before the pool is destroyed (the shard destroys connections first).

#include <cstddef>
#include <cstdint>

namespace dpquic::recovery {

class SentPacketPool {
 public:
  // Rings never use fewer slots than this (their live bitmap is whole 64-bit
  // words).
  static constexpr size_t kMinRingSlots = 64;
  static constexpr size_t kMaxSlotSizes = 4;
  // Every block is aligned to a cache line.
  static constexpr size_t kAlignment = 64;

  // `max_slots_per_ring` bounds one ring (a peer that never acknowledges
  // cannot make us grow without limit); `initial_slots` is what a new ring
  // starts with. Both are rounded up to powers of two, and to at least
  // kMinRingSlots; max_slots_per_ring is at least initial_slots.
  explicit SentPacketPool(size_t initial_slots = 64, size_t max_slots_per_ring = 1 << 20);
  ~SentPacketPool();
  SentPacketPool(const SentPacketPool&) = delete;
  SentPacketPool& operator=(const SentPacketPool&) = delete;

  // Raw storage for `slots` slots of `slot_size` bytes (slots is a power of
  // two, <= max_slots_per_ring()). nullptr if over the bound or out of memory.
  void* acquire(size_t slots, size_t slot_size);
  // Gives back storage from acquire() with the same `slots` and `slot_size`.
  // nullptr is ignored.
  void release(void* storage, size_t slots, size_t slot_size);

  size_t initial_slots() const { return initial_slots_; }
  size_t max_slots_per_ring() const { return max_slots_per_ring_; }
  // Heap allocations made so far (for tests proving reuse).
  size_t allocations() const { return allocations_; }
  // Blocks waiting on free lists.
  size_t cached_blocks() const { return cached_blocks_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  // log2 of the slot count; slot counts are powers of two below 2^64.
  static constexpr size_t kSizeClasses = 64;
  struct SlotSizeLists {
    size_t slot_size = 0;  // 0: unused entry
    FreeBlock* free[kSizeClasses] = {};
  };

  // The free lists for `slot_size`, registering it if there is room;
  // nullptr when kMaxSlotSizes other sizes are registered.
  SlotSizeLists* lists_for(size_t slot_size);

  size_t initial_slots_;
  size_t max_slots_per_ring_;
  size_t allocations_ = 0;
  size_t cached_blocks_ = 0;
  SlotSizeLists lists_[kMaxSlotSizes];
};

}  // namespace dpquic::recovery
