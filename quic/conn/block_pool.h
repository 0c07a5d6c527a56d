#pragma once
// A per-core pool of fixed-size byte blocks: the storage behind every receive
// buffer (STREAM and CRYPTO reassembly).
//
// Blocks come from a few large slabs. The pool starts with `initial_blocks`,
// and when it runs dry it adds a slab as large as everything allocated so far
// (doubling), never past `max_blocks`: a warm-up cost, not a per-packet one.
// Free blocks form an intrusive list (the link lives in the free block
// itself), so take() and give() never allocate. Memory is not returned to
// the system until the pool is destroyed.
//
// Not thread-safe: one pool per core, like everything else on that core.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dpquic::conn {

class BlockPool {
 public:
  // Throws std::invalid_argument unless block_size is a power of two >= 256,
  // max_blocks >= 1 and initial_blocks <= max_blocks.
  BlockPool(size_t block_size, size_t initial_blocks, size_t max_blocks);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of block_size() bytes (contents unspecified), or nullptr once
  // max_blocks() are in use.
  uint8_t* take();
  // Returns a block obtained from take().
  void give(uint8_t* block);

  size_t block_size() const { return block_size_; }
  size_t blocks_in_use() const { return in_use_; }
  size_t blocks_allocated() const { return allocated_; }
  size_t max_blocks() const { return max_blocks_; }
  // How many more take() calls are guaranteed to succeed (barring the system
  // running out of memory while the pool grows).
  size_t blocks_available() const { return max_blocks_ - in_use_; }

 private:
  // Adds a slab of `count` blocks to the free list (16 when growing from
  // nothing, else doubling).
  void add_slab(size_t count);

  size_t block_size_;
  size_t max_blocks_;
  size_t allocated_ = 0;
  size_t in_use_ = 0;
  uint8_t* free_head_ = nullptr;
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;
};

}  // namespace dpquic::conn
