#include "quic/conn/block_pool.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace dpquic::conn {
namespace {

// The free-list link is stored in the first bytes of a free block.
uint8_t* next_of(const uint8_t* block) {
  uint8_t* next;
  std::memcpy(&next, block, sizeof(next));
  return next;
}

void set_next(uint8_t* block, uint8_t* next) { std::memcpy(block, &next, sizeof(next)); }

}  // namespace

BlockPool::BlockPool(size_t block_size, size_t initial_blocks, size_t max_blocks)
    : block_size_(block_size), max_blocks_(max_blocks) {
  if (block_size < 256 || (block_size & (block_size - 1)) != 0)
    throw std::invalid_argument("BlockPool: block_size must be a power of two >= 256");
  if (max_blocks == 0) throw std::invalid_argument("BlockPool: max_blocks must be at least 1");
  if (initial_blocks > max_blocks)
    throw std::invalid_argument("BlockPool: initial_blocks exceeds max_blocks");
  if (max_blocks > SIZE_MAX / block_size)
    throw std::invalid_argument("BlockPool: max_blocks * block_size overflows");
  // At most ~log2(max_blocks) slabs: reserve so growth never reallocates this.
  slabs_.reserve(2 + static_cast<size_t>(std::bit_width(max_blocks)));
  if (initial_blocks > 0) add_slab(initial_blocks);
}

BlockPool::~BlockPool() = default;

void BlockPool::add_slab(size_t count) {
  slabs_.push_back(std::make_unique_for_overwrite<uint8_t[]>(count * block_size_));
  uint8_t* base = slabs_.back().get();
  // Link back to front so blocks are handed out in address order.
  for (size_t i = count; i-- > 0;) {
    uint8_t* block = base + i * block_size_;
    set_next(block, free_head_);
    free_head_ = block;
  }
  allocated_ += count;
}

uint8_t* BlockPool::take() {
  if (free_head_ == nullptr) {
    if (allocated_ >= max_blocks_) return nullptr;
    add_slab(std::min(allocated_ == 0 ? size_t{16} : allocated_, max_blocks_ - allocated_));
  }
  uint8_t* block = free_head_;
  free_head_ = next_of(block);
  ++in_use_;
  return block;
}

void BlockPool::give(uint8_t* block) {
  if (block == nullptr) return;
  set_next(block, free_head_);
  free_head_ = block;
  --in_use_;
}

}  // namespace dpquic::conn
