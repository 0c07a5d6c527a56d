#include "quic/transmit/chunk.h"

#include <cstring>

namespace dpquic::transmit {

Chunk::Chunk(ChunkOwner* owner, const uint8_t* data, size_t length)
    : owner_(owner), data_(data), length_(length) {
  if (owner_ != nullptr) ++owner_->references;
}

Chunk& Chunk::operator=(const Chunk& other) {
  if (this != &other) {
    // Retain first: `other` may be the last other reference to our owner.
    if (other.owner_ != nullptr) ++other.owner_->references;
    reset();
    owner_ = other.owner_;
    data_ = other.data_;
    length_ = other.length_;
  }
  return *this;
}

Chunk& Chunk::operator=(Chunk&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    data_ = other.data_;
    length_ = other.length_;
    other.owner_ = nullptr;
    other.data_ = nullptr;
    other.length_ = 0;
  }
  return *this;
}

void Chunk::reset() {
  ChunkOwner* owner = owner_;
  owner_ = nullptr;
  data_ = nullptr;
  length_ = 0;
  if (owner != nullptr && --owner->references == 0) owner->on_last_release(owner);
}

Chunk Chunk::slice(size_t offset, size_t length) const {
  if (owner_ == nullptr || offset > length_ || length > length_ - offset) return Chunk();
  return Chunk(owner_, data_ + offset, length);
}

ChunkPool::ChunkPool(size_t buffer_size, size_t buffer_count, size_t adopt_count)
    : buffer_size_(buffer_size) {
  grow(buffer_count, adopt_count);
}

ChunkPool::~ChunkPool() = default;

void ChunkPool::grow(size_t buffers, size_t adopt_records) {
  if (buffers != 0) {
    buffer_blocks_.push_back(std::make_unique<uint8_t[]>(buffers * buffer_size_));
    slot_blocks_.push_back(std::make_unique<BufferSlot[]>(buffers));
    uint8_t* storage = buffer_blocks_.back().get();
    BufferSlot* slots = slot_blocks_.back().get();
    for (size_t i = 0; i < buffers; ++i) {
      slots[i].on_last_release = return_buffer;
      slots[i].pool = this;
      slots[i].data = storage + i * buffer_size_;
      slots[i].next_free = free_buffers_;
      free_buffers_ = &slots[i];
    }
    free_buffer_count_ += buffers;
  }
  if (adopt_records != 0) {
    record_blocks_.push_back(std::make_unique<AdoptRecord[]>(adopt_records));
    AdoptRecord* records = record_blocks_.back().get();
    for (size_t i = 0; i < adopt_records; ++i) {
      records[i].on_last_release = return_adopted;
      records[i].pool = this;
      records[i].next_free = free_records_;
      free_records_ = &records[i];
    }
    free_adopt_count_ += adopt_records;
  }
}

Chunk ChunkPool::copy_from(std::span<const uint8_t> bytes) {
  if (bytes.size() > buffer_size_ || free_buffers_ == nullptr) return Chunk();
  BufferSlot* slot = free_buffers_;
  free_buffers_ = slot->next_free;
  --free_buffer_count_;
  if (!bytes.empty()) std::memcpy(slot->data, bytes.data(), bytes.size());
  return Chunk(slot, slot->data, bytes.size());
}

Chunk ChunkPool::adopt(const uint8_t* data, size_t length, Chunk::ReleaseFn release,
                       void* context) {
  if (free_records_ == nullptr) return Chunk();
  AdoptRecord* record = free_records_;
  free_records_ = record->next_free;
  --free_adopt_count_;
  record->release = release;
  record->context = context;
  record->data = data;
  record->length = length;
  return Chunk(record, data, length);
}

void ChunkPool::return_buffer(ChunkOwner* owner) {
  auto* slot = static_cast<BufferSlot*>(owner);
  ChunkPool* pool = slot->pool;
  slot->next_free = pool->free_buffers_;
  pool->free_buffers_ = slot;
  ++pool->free_buffer_count_;
}

void ChunkPool::return_adopted(ChunkOwner* owner) {
  auto* record = static_cast<AdoptRecord*>(owner);
  ChunkPool* pool = record->pool;
  // Return the record first: the callback may submit new chunks.
  const Chunk::ReleaseFn release = record->release;
  void* context = record->context;
  const uint8_t* data = record->data;
  const size_t length = record->length;
  record->next_free = pool->free_records_;
  pool->free_records_ = record;
  ++pool->free_adopt_count_;
  if (release != nullptr) release(context, data, length);
}

}  // namespace dpquic::transmit
