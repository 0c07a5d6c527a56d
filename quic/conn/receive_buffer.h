#pragma once
// Out-of-order reassembly of one received byte stream (a STREAM or CRYPTO
// stream), RFC 9000 §2.2 and §19.6.
//
// Bytes live in fixed-size blocks from a BlockPool, indexed by absolute block
// number (offset / block_size) through a ring of block pointers that covers
// [read_offset, highest offset stored). A block is taken only when a byte in
// it arrives and given back as soon as every byte in it has been consumed, so
// memory is held only inside [read_offset, limit): the caller's flow-control
// window (or the CRYPTO buffer bound) is the memory bound.
//
// Received data beyond the contiguous prefix is tracked as disjoint,
// non-adjacent byte ranges in a balanced tree (RangeTree); each one has a
// hole in front of it, so their number is the gap count, bounded by max_gaps
// (RFC 9000 §21.9: a peer sending many tiny out-of-order frames must not make
// us keep an unbounded number of holes). Wherever a frame lands, its range
// work is O(log gaps) node visits and no stored range moves: a peer cannot
// make each frame shift every range (range_entries_moved() counts moves).
//
// Allocation: the ring and the range tree grow (by doubling) only when a new
// maximum span or gap count is reached and never shrink, so once warmed up
// insert/consume/read never allocate. reinitialize() (a recycled stream)
// keeps them too, unless they grew beyond kMaxRetainedRingSlots /
// kMaxRetainedRanges: then they are given back, so a stream slot that once
// carried a large transfer does not hold its ring for good.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "quic/conn/block_pool.h"
#include "quic/conn/range_tree.h"

namespace dpquic::conn {

enum class ReceiveResult : uint8_t {
  kOk,
  kExceedsLimit,   // offset + length > limit: nothing stored
  kOutOfMemory,    // the block pool is exhausted: nothing stored
  kTooFragmented,  // storing would leave more than max_gaps holes: nothing stored
};

class ReceiveBuffer {
 public:
  // What reinitialize() keeps at most: a short stream's ring has 4 slots and
  // its range list a few entries, so those are always kept.
  static constexpr size_t kMaxRetainedRingSlots = 64;
  static constexpr size_t kMaxRetainedRanges = 64;
  // Gap entries reserved from the start (at most max_gaps).
  static constexpr size_t kInitialRanges = 4;

  // `max_gaps` is clamped to RangeTree::kMaxSize.
  explicit ReceiveBuffer(BlockPool& pool, size_t max_gaps = 1024);
  ~ReceiveBuffer();  // returns blocks to the pool
  ReceiveBuffer(const ReceiveBuffer&) = delete;
  ReceiveBuffer& operator=(const ReceiveBuffer&) = delete;

  // Stores `data` at [offset, offset + data.size()). Bytes below
  // read_offset() or already held are ignored (a peer must resend the same
  // bytes; the first copy wins). `limit` is the absolute offset bound.
  // kOutOfMemory is also returned when [read_offset, end) spans more blocks
  // than the whole pool has (a window configured wider than the pool), so the
  // block ring stays bounded whatever `limit` says.
  ReceiveResult insert(uint64_t offset, std::span<const uint8_t> data, uint64_t limit);

  // The first contiguous piece of readable bytes at read_offset() (it may end
  // at a block boundary: consume() and call again). Empty when none.
  std::span<const uint8_t> readable() const;
  // Marks n readable bytes consumed (clamped to contiguous_end() -
  // read_offset()) and frees the blocks left behind.
  void consume(size_t n);
  // Copies and consumes up to out.size() contiguous bytes; returns the count.
  size_t read(std::span<uint8_t> out);

  uint64_t read_offset() const { return read_offset_; }
  uint64_t contiguous_end() const { return contiguous_end_; }
  uint64_t highest_received() const { return highest_received_; }
  size_t gap_count() const { return ranges_.size(); }
  size_t max_gaps() const { return ranges_.max_size(); }
  // Blocks this buffer holds from the pool.
  size_t blocks_held() const { return blocks_held_; }

  // Frees all blocks and forgets data not yet read; read_offset() and
  // highest_received() stay (used after RESET_STREAM).
  void clear();
  // The reader is gone (STOP_SENDING): frees all blocks and stores no byte
  // from now on. insert() still checks and records which ranges arrived, so
  // contiguous_end() still tells when the peer has sent everything, and the
  // contiguous prefix counts as consumed at once (read_offset() follows it).
  // A discarding buffer holds no memory beyond its range list.
  void discard();
  bool discarding() const { return discarding_; }
  // Back to a fresh buffer at offset 0, keeping the grown ring and range
  // capacity up to the caps above (for stream objects that are recycled).
  void reinitialize();
  // The same with a new gap bound.
  void reinitialize(size_t max_gaps);
  // Ring slots and range entries the buffer holds storage for.
  size_t ring_capacity() const { return ring_.size(); }
  size_t range_capacity() const { return ranges_.capacity(); }
  // The received ranges beyond contiguous_end().
  const RangeTree& ranges() const { return ranges_; }
  // Range entries moved in memory so far (only when the tree's storage
  // grows): the reassembly work a peer's frames cause beyond O(log gaps).
  uint64_t range_entries_moved() const { return ranges_.entries_moved(); }

 private:
  uint64_t block_index(uint64_t offset) const { return offset >> block_shift_; }
  uint8_t*& slot(uint64_t block) { return ring_[block & (ring_.size() - 1)]; }
  uint8_t* slot(uint64_t block) const { return ring_[block & (ring_.size() - 1)]; }
  // Makes the ring cover blocks [block_index(read_offset_), last_block].
  void ensure_ring(uint64_t last_block);
  // Copies [offset, offset + data.size()) into blocks that are already there.
  void copy_in(uint64_t offset, std::span<const uint8_t> data);
  void release_block(uint64_t block);
  void release_all_blocks();
  // insert()'s storing part: takes the blocks [start, end) needs.
  ReceiveResult take_blocks(uint64_t start, uint64_t end);
  // insert()'s range part for new data [start, offset + data.size()):
  // copies its bytes into the holes (unless discarding) and folds every
  // range it overlaps or touches into one, stored (just below `above`, the
  // lowest range ending at or after `start`, when it touches none), or
  // removed when it joins the prefix. Returns the end of the merged range.
  uint64_t merge(uint64_t offset, uint64_t start, std::span<const uint8_t> data,
                 RangeTree::Handle above, bool joins_prefix);

  BlockPool& pool_;
  size_t block_size_;
  unsigned block_shift_;
  uint64_t read_offset_ = 0;
  uint64_t contiguous_end_ = 0;
  uint64_t highest_received_ = 0;
  size_t blocks_held_ = 0;
  bool discarding_ = false;
  // Power-of-two sized; entry (b mod size) is block b's storage or nullptr.
  std::vector<uint8_t*> ring_;
  // Received ranges beyond contiguous_end_; max_size() is the gap bound.
  RangeTree ranges_;
};

}  // namespace dpquic::conn
