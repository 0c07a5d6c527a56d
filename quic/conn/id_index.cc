#include "quic/conn/id_index.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace dpquic::conn {

IdIndex::IdIndex(size_t initial_capacity) {
  rehash(std::bit_ceil(std::max<size_t>(initial_capacity, 4)));
}

void IdIndex::rehash(size_t new_capacity) {
  std::vector<Bucket> old = std::exchange(buckets_, std::vector<Bucket>(new_capacity));
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(new_capacity));
  for (const Bucket& bucket : old) {
    if (bucket.id != kEmpty) place(bucket);
  }
}

void IdIndex::place(const Bucket& entry) {
  size_t i = home_of(entry.id);
  while (buckets_[i].id != kEmpty) i = (i + 1) & mask();
  buckets_[i] = entry;
}

void IdIndex::reserve(size_t count) {
  size_t capacity = buckets_.size();
  while (!fits(count, capacity)) capacity *= 2;
  if (capacity != buckets_.size()) rehash(capacity);
}

void IdIndex::clear() {
  for (Bucket& bucket : buckets_) bucket = Bucket{};
  size_ = 0;
  last_id_ = kEmpty;
}

bool IdIndex::insert(uint64_t id, uint32_t slot) {
  if (id > kMaxStreamId || slot == kNoSlot) return false;
  if (slot_of(id) != kNoSlot) return false;
  if (!fits(size_ + 1, buckets_.size())) rehash(buckets_.size() * 2);
  place(Bucket{id, slot});
  ++size_;
  return true;
}

uint32_t IdIndex::probe(uint64_t id) const {
  if (id > kMaxStreamId) return kNoSlot;
  // The load limit guarantees an empty bucket, so the probe ends.
  for (size_t i = home_of(id);; i = (i + 1) & mask()) {
    const Bucket& bucket = buckets_[i];
    if (bucket.id == id) {
      last_id_ = id;
      last_slot_ = bucket.slot;
      return bucket.slot;
    }
    if (bucket.id == kEmpty) return kNoSlot;
  }
}

bool IdIndex::erase(uint64_t id) {
  if (id > kMaxStreamId) return false;
  if (id == last_id_) last_id_ = kEmpty;
  size_t hole = home_of(id);
  while (buckets_[hole].id != id) {
    if (buckets_[hole].id == kEmpty) return false;
    hole = (hole + 1) & mask();
  }
  // Backward-shift deletion: walk the rest of the probe run and move back
  // every entry whose home is not cyclically within (hole, i], since the hole
  // would otherwise cut it off from its home.
  for (size_t i = (hole + 1) & mask(); buckets_[i].id != kEmpty; i = (i + 1) & mask()) {
    const size_t home = home_of(buckets_[i].id);
    const size_t distance_home_to_i = (i - home) & mask();
    const size_t distance_hole_to_i = (i - hole) & mask();
    if (distance_home_to_i >= distance_hole_to_i) {
      buckets_[hole] = buckets_[i];
      hole = i;
    }
  }
  buckets_[hole] = Bucket{};
  --size_;
  return true;
}

}  // namespace dpquic::conn
