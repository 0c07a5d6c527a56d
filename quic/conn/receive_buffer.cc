#include "quic/conn/receive_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace dpquic::conn {

ReceiveBuffer::ReceiveBuffer(BlockPool& pool, size_t max_gaps)
    : pool_(pool),
      max_gaps_(max_gaps),
      block_size_(pool.block_size()),
      block_shift_(static_cast<unsigned>(std::countr_zero(pool.block_size()))) {
  reserve_initial_ranges();
}

void ReceiveBuffer::reserve_initial_ranges() {
  // Room for a few gaps from the start: a recycled stream keeps it, so a
  // stream's first out-of-order frame never allocates once the slot exists.
  ranges_.reserve(std::min<size_t>(kInitialRanges, max_gaps_));
}

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

ReceiveResult ReceiveBuffer::insert(uint64_t offset, std::span<const uint8_t> data,
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

  // Ranges that overlap or touch [start, end) merge with it: [first, last).
  const auto first = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                                      [](const Range& r, uint64_t value) { return r.end < value; });
  const auto last = std::upper_bound(
      first, ranges_.end(), end, [](uint64_t value, const Range& r) { return value < r.start; });
  const size_t merged_count = static_cast<size_t>(last - first);
  const bool joins_prefix = start == contiguous_end_;
  const size_t gaps_after = ranges_.size() - merged_count + (joins_prefix ? 0 : 1);
  if (gaps_after > max_gaps_) return ReceiveResult::kTooFragmented;

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

  // Copy only into the holes; bytes already held stay as they are.
  uint64_t cursor = start;
  for (auto it = first; it != last; ++it) {
    if (it->start > cursor)
      copy_in(cursor, data.subspan(cursor - offset, std::min(it->start, end) - cursor));
    cursor = std::max(cursor, it->end);
  }
  if (cursor < end) copy_in(cursor, data.subspan(cursor - offset, end - cursor));

  Range merged{start, end};
  if (merged_count > 0) {
    merged.start = std::min(start, first->start);
    merged.end = std::max(end, (last - 1)->end);
  }
  if (joins_prefix) {
    // Only ranges at the front can touch the prefix: first == begin().
    contiguous_end_ = merged.end;
    ranges_.erase(first, last);
  } else if (merged_count == 0) {
    const size_t index = static_cast<size_t>(first - ranges_.begin());
    if (ranges_.size() == ranges_.capacity())
      ranges_.reserve(
          std::min(max_gaps_, std::max<size_t>(kInitialRanges, ranges_.capacity() * 2)));
    ranges_.insert(ranges_.begin() + static_cast<ptrdiff_t>(index), merged);
  } else {
    *first = merged;
    ranges_.erase(first + 1, last);
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
      (ranges_.empty() || block_index(ranges_.front().start) != new_block))
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

void ReceiveBuffer::clear() {
  for (uint8_t*& entry : ring_) {
    if (entry == nullptr) continue;
    pool_.give(entry);
    entry = nullptr;
  }
  blocks_held_ = 0;
  ranges_.clear();
  contiguous_end_ = read_offset_;
}

void ReceiveBuffer::reinitialize() {
  clear();
  read_offset_ = 0;
  contiguous_end_ = 0;
  highest_received_ = 0;
  // An empty ring is valid: insert() sizes it before any slot is used.
  if (ring_.size() > kMaxRetainedRingSlots) std::vector<uint8_t*>().swap(ring_);
  if (ranges_.capacity() > kMaxRetainedRanges) {
    std::vector<Range>().swap(ranges_);
    reserve_initial_ranges();
  }
}

void ReceiveBuffer::reinitialize(size_t max_gaps) {
  max_gaps_ = max_gaps;
  reinitialize();
}

}  // namespace dpquic::conn
