#include "quic/recovery/sent_packet_pool.h"

#include <algorithm>
#include <bit>
#include <new>

namespace dpquic::recovery {

namespace {

// Rounds up to a power of two; values above the largest one saturate there.
size_t round_up_pow2(size_t value) {
  constexpr size_t kLargest = size_t{1} << (sizeof(size_t) * 8 - 1);
  return value > kLargest ? kLargest : std::bit_ceil(value);
}

// Bytes of a block, or 0 if `slots * slot_size` does not fit in size_t. A
// freed block holds a FreeBlock link, so it is never smaller than a pointer.
size_t block_bytes(size_t slots, size_t slot_size) {
  if (slot_size != 0 && slots > SIZE_MAX / slot_size) return 0;
  return std::max(slots * slot_size, sizeof(void*));
}

void free_block(void* block) {
  ::operator delete (block, std::align_val_t{SentPacketPool::kAlignment});
}

}  // namespace

SentPacketPool::SentPacketPool(size_t initial_slots, size_t max_slots_per_ring)
    : initial_slots_(round_up_pow2(std::max(initial_slots, kMinRingSlots))),
      max_slots_per_ring_(
          std::max(initial_slots_, round_up_pow2(std::max(max_slots_per_ring, kMinRingSlots)))) {}

SentPacketPool::~SentPacketPool() {
  for (SlotSizeLists& lists : lists_) {
    for (FreeBlock*& head : lists.free) {
      while (head != nullptr) {
        FreeBlock* next = head->next;
        free_block(head);
        head = next;
      }
    }
  }
}

SentPacketPool::SlotSizeLists* SentPacketPool::lists_for(size_t slot_size) {
  for (SlotSizeLists& lists : lists_) {
    if (lists.slot_size == slot_size) return &lists;
    if (lists.slot_size == 0) {
      lists.slot_size = slot_size;
      return &lists;
    }
  }
  return nullptr;
}

void* SentPacketPool::acquire(size_t slots, size_t slot_size) {
  if (slots == 0 || slot_size == 0 || !std::has_single_bit(slots) || slots > max_slots_per_ring_)
    return nullptr;
  const size_t bytes = block_bytes(slots, slot_size);
  if (bytes == 0) return nullptr;
  SlotSizeLists* lists = lists_for(slot_size);
  if (lists != nullptr) {
    FreeBlock*& head = lists->free[std::countr_zero(slots)];
    if (head != nullptr) {
      FreeBlock* block = head;
      head = block->next;
      --cached_blocks_;
      return block;
    }
  }
  void* block = ::operator new (bytes, std::align_val_t{kAlignment}, std::nothrow);
  if (block != nullptr) ++allocations_;
  return block;
}

void SentPacketPool::release(void* storage, size_t slots, size_t slot_size) {
  if (storage == nullptr) return;
  SlotSizeLists* lists = lists_for(slot_size);
  if (lists == nullptr) {
    free_block(storage);
    return;
  }
  FreeBlock* block = new (storage) FreeBlock{lists->free[std::countr_zero(slots)]};
  lists->free[std::countr_zero(slots)] = block;
  ++cached_blocks_;
}

}  // namespace dpquic::recovery
