#include "tools/quicload/request_table.h"

#include <bit>

namespace dpquic::tools {

RequestTable::RequestTable(size_t capacity)
    : records_(capacity), buckets_(std::bit_ceil(capacity * 2 + 2), kEmpty) {
  free_.reserve(capacity);
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
}

size_t RequestTable::home(uint64_t id) const {
  // Fibonacci hashing: consecutive ids spread over the table.
  return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 20) & (buckets_.size() - 1);
}

RequestRecord* RequestTable::insert(uint64_t id) {
  if (id == 0 || free_.empty() || find(id) != nullptr) return nullptr;
  const uint32_t index = free_.back();
  free_.pop_back();
  RequestRecord& record = records_[index];
  record = RequestRecord{};
  record.id = id;
  size_t bucket = home(id);
  while (buckets_[bucket] != kEmpty) bucket = (bucket + 1) & (buckets_.size() - 1);
  buckets_[bucket] = index;
  ++size_;
  return &record;
}

RequestRecord* RequestTable::find(uint64_t id) {
  if (id == 0) return nullptr;
  for (size_t bucket = home(id);; bucket = (bucket + 1) & (buckets_.size() - 1)) {
    const uint32_t index = buckets_[bucket];
    if (index == kEmpty) return nullptr;
    if (records_[index].id == id) return &records_[index];
  }
}

void RequestTable::erase(uint64_t id) {
  if (id == 0) return;
  const size_t mask = buckets_.size() - 1;
  size_t bucket = home(id);
  for (;; bucket = (bucket + 1) & mask) {
    const uint32_t index = buckets_[bucket];
    if (index == kEmpty) return;
    if (records_[index].id == id) break;
  }
  const uint32_t index = buckets_[bucket];
  records_[index].id = 0;
  free_.push_back(index);
  --size_;
  // Backward shift: move later entries of the run into the hole when their
  // home is at or before it (cyclically), so lookups never stop early.
  size_t hole = bucket;
  for (size_t next = (hole + 1) & mask;; next = (next + 1) & mask) {
    const uint32_t moved = buckets_[next];
    if (moved == kEmpty) break;
    const size_t want = home(records_[moved].id);
    // Distance from home to next vs from home to hole (cyclic).
    if (((next - want) & mask) >= ((next - hole) & mask)) {
      buckets_[hole] = moved;
      hole = next;
    }
  }
  buckets_[hole] = kEmpty;
}

}  // namespace dpquic::tools
