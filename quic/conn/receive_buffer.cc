#include "quic/conn/receive_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "quic/hot_path.h"

namespace dpquic::conn {

ReceiveBuffer::ReceiveBuffer(BlockPool& pool, size_t max_gaps)
    : pool_(pool),
      block_size_(pool.block_size()),
      block_shift_(static_cast<unsigned>(std::countr_zero(pool.block_size()))),
      // Room for a few gaps from the start: a recycled stream keeps it, so a
      // stream's first out-of-order frame never allocates once the slot exists.
      ranges_(max_gaps, kInitialRanges) {}

ReceiveBuffer::~ReceiveBuffer() { clear(); }

void ReceiveBuffer::ensure_ring(uint64_t last_block) {
  const uint64_t first_block = block_index(read_offset_);
  const uint64_t needed = last_block - first_block + 1;
  if (needed <= ring_.size()) return;
  // The caller has bounded `needed` by the pool's size, so this fits size_t.
  const size_t size =
      std::max<size_t>({size_t{4}, std::bit_ceil(static_cast<size_t>(needed)), ring_.size() * 2});
  std::vector<uint8_t*> grown(size, nullptr);
  // Every held block lies in [first_block, first_block + ring_.size()).
  for (uint64_t b = first_block; b < first_block + ring_.size(); ++b)
    grown[b & (size - 1)] = slot(b);
  ring_.swap(grown);
}

void ReceiveBuffer::copy_in(uint64_t offset, std::span<const uint8_t> data) {
  while (!data.empty()) {
    const size_t in_block = static_cast<size_t>(offset & (block_size_ - 1));
    const size_t n = std::min(data.size(), block_size_ - in_block);
    std::memcpy(slot(block_index(offset)) + in_block, data.data(), n);
    data = data.subspan(n);
    offset += n;
  }
}

void ReceiveBuffer::release_block(uint64_t block) {
  uint8_t*& entry = slot(block);
  if (entry == nullptr) return;
  pool_.give(entry);
  entry = nullptr;
  --blocks_held_;
}

ReceiveResult ReceiveBuffer::take_blocks(uint64_t start, uint64_t end) {
  const uint64_t first_block = block_index(read_offset_);
  const uint64_t last_block = block_index(end - 1);
  if (last_block - first_block >= pool_.max_blocks()) return ReceiveResult::kOutOfMemory;
  ensure_ring(last_block);

  // Every missing block in the range receives at least one new byte.
  size_t missing = 0;
  for (uint64_t b = block_index(start); b <= last_block; ++b)
    if (slot(b) == nullptr) ++missing;
  if (missing > pool_.blocks_available()) return ReceiveResult::kOutOfMemory;
  for (uint64_t b = block_index(start); b <= last_block; ++b) {
    uint8_t*& entry = slot(b);
    if (entry != nullptr) continue;
    entry = pool_.take();  // cannot fail: checked above
    ++blocks_held_;
  }
  return ReceiveResult::kOk;
}

uint64_t ReceiveBuffer::merge(uint64_t offset, uint64_t start, std::span<const uint8_t> data,
                              RangeTree::Handle above, bool joins_prefix) {
  const uint64_t end = offset + data.size();
  // Bytes below the cursor are stored or were held already (the first copy
  // wins); fill_to() copies the new bytes up to `held` and skips past it.
  uint64_t cursor = start;
  const auto fill_to = [&](const RangeTree::Range& held) {
    if (held.start > cursor && !discarding_)
      copy_in(cursor, data.subspan(cursor - offset, held.start - cursor));
    cursor = std::max(cursor, held.end);
  };
  RangeTree::Range merged{start, end};
  if (above == RangeTree::kNone || ranges_.at(above).start > end) {
    if (!discarding_) copy_in(start, data.subspan(start - offset));
    // Cannot fail: insert() checked the gap bound.
    if (!joins_prefix) ranges_.insert_before(above, merged);
    return end;
  }
  const RangeTree::Handle first = above;
  const RangeTree::Range lowest = ranges_.at(first);
  fill_to(lowest);
  merged = {std::min(start, lowest.start), std::max(end, lowest.end)};
  // The next range above `lowest` that the data reaches, or kNone. Joining
  // the prefix, `lowest` is the lowest range: it goes first, and each next
  // one is the lowest at its turn.
  const auto next_reached = [&] {
    // The range after the last one taken starts above its end (the
    // cursor): with the cursor at or past `end`, it is out of reach.
    if (cursor >= end) return RangeTree::kNone;
    const RangeTree::Handle next = joins_prefix ? ranges_.front() : ranges_.next(first);
    return next != RangeTree::kNone && ranges_.at(next).start <= end ? next : RangeTree::kNone;
  };
  if (joins_prefix) ranges_.erase(first);
  for (RangeTree::Handle next = next_reached(); next != RangeTree::kNone; next = next_reached()) {
    fill_to(ranges_.at(next));
    merged.end = std::max(merged.end, ranges_.at(next).end);
    ranges_.erase(next);
  }
  if (cursor < end && !discarding_) copy_in(cursor, data.subspan(cursor - offset));
  if (!joins_prefix) ranges_.replace(first, merged);
  return merged.end;
}

DPQUIC_HOT ReceiveResult ReceiveBuffer::insert(uint64_t offset, std::span<const uint8_t> data,
                                               uint64_t limit) {
  const uint64_t length = data.size();
  // Written so it cannot overflow, whatever offset a peer sends.
  if (length > limit || offset > limit - length) return ReceiveResult::kExceedsLimit;
  const uint64_t end = offset + length;
  const uint64_t start = std::max(offset, contiguous_end_);
  if (start >= end) {  // empty, or nothing beyond what is already held
    highest_received_ = std::max(highest_received_, end);
    return ReceiveResult::kOk;
  }

  // The lowest range at or above [start, end); the data overlaps or touches
  // it unless it starts above `end`. Data touching neither a range nor the
  // prefix is the only kind that adds a gap.
  const RangeTree::Handle above = ranges_.first_ending_at_or_after(start);
  const bool touches = above != RangeTree::kNone && ranges_.at(above).start <= end;
  const bool joins_prefix = start == contiguous_end_;
  if (!touches && !joins_prefix && ranges_.size() >= ranges_.max_size())
    return ReceiveResult::kTooFragmented;

  if (!discarding_) {
    if (const ReceiveResult taken = take_blocks(start, end); taken != ReceiveResult::kOk) {
      return taken;
    }
  }
  const uint64_t merged_end = merge(offset, start, data, above, joins_prefix);
  if (joins_prefix) {
    contiguous_end_ = merged_end;
    if (discarding_) read_offset_ = contiguous_end_;
  }
  highest_received_ = std::max(highest_received_, end);
  return ReceiveResult::kOk;
}

std::span<const uint8_t> ReceiveBuffer::readable() const {
  if (contiguous_end_ == read_offset_) return {};
  const size_t in_block = static_cast<size_t>(read_offset_ & (block_size_ - 1));
  const size_t n = static_cast<size_t>(
      std::min<uint64_t>(contiguous_end_ - read_offset_, block_size_ - in_block));
  return {slot(block_index(read_offset_)) + in_block, n};
}

void ReceiveBuffer::consume(size_t n) {
  n = static_cast<size_t>(std::min<uint64_t>(n, contiguous_end_ - read_offset_));
  if (n == 0) return;
  const uint64_t old_block = block_index(read_offset_);
  read_offset_ += n;
  const uint64_t new_block = block_index(read_offset_);
  for (uint64_t b = old_block; b < new_block; ++b) release_block(b);
  // A partly consumed block with nothing else in it is not kept either, so an
  // idle stream holds no memory.
  if (read_offset_ == contiguous_end_ && (read_offset_ & (block_size_ - 1)) != 0 &&
      (ranges_.empty() || block_index(ranges_.at(ranges_.front()).start) != new_block))
    release_block(new_block);
}

size_t ReceiveBuffer::read(std::span<uint8_t> out) {
  size_t total = 0;
  while (total < out.size()) {
    const std::span<const uint8_t> piece = readable();
    if (piece.empty()) break;
    const size_t n = std::min(piece.size(), out.size() - total);
    std::memcpy(out.data() + total, piece.data(), n);
    consume(n);
    total += n;
  }
  return total;
}

void ReceiveBuffer::release_all_blocks() {
  for (uint8_t*& entry : ring_) {
    if (entry == nullptr) continue;
    pool_.give(entry);
    entry = nullptr;
  }
  blocks_held_ = 0;
}

void ReceiveBuffer::clear() {
  release_all_blocks();
  ranges_.clear();
  contiguous_end_ = read_offset_;
}

void ReceiveBuffer::discard() {
  release_all_blocks();
  read_offset_ = contiguous_end_;
  discarding_ = true;
}

void ReceiveBuffer::reinitialize() {
  clear();
  discarding_ = false;
  read_offset_ = 0;
  contiguous_end_ = 0;
  highest_received_ = 0;
  // An empty ring is valid: insert() sizes it before any slot is used.
  if (ring_.size() > kMaxRetainedRingSlots) std::vector<uint8_t*>().swap(ring_);
  ranges_.clear_and_trim(kMaxRetainedRanges, kInitialRanges);
}

void ReceiveBuffer::reinitialize(size_t max_gaps) {
  // The bound first, so the storage kept or reserved follows it.
  ranges_.clear();
  ranges_.set_max_size(max_gaps);
  reinitialize();
}

}  // namespace dpquic::conn
