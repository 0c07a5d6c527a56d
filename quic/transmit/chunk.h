#pragma once
// Owned, refcounted bytes for the send path (a `Bytes`-like type).
//
// Application data is submitted as chunks so stream bytes are never copied
// before the AEAD reads them: the stream's send buffer, a packet plan and the
// burst being sealed all hold references to the same bytes, and the owner
// gets them back once the last reference is gone (e.g. when the data is
// acknowledged).
//
// Chunks belong to one core: the reference count is not atomic, and a chunk
// must be retained and released on the core that created it.
//
// Owners:
// - ChunkPool::copy_from: the convenience path for a span. Copies once into a
//   pooled buffer; returns an empty chunk when the pool is exhausted.
// - ChunkPool::adopt: application memory with a release callback, without an
//   allocation (the reference count lives in a pooled record).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace dpquic::transmit {

// Shared by every chunk that refers to the same bytes: the reference count
// and what to do when it drops to zero.
struct ChunkOwner {
  uint32_t references = 0;
  void (*on_last_release)(ChunkOwner* owner) = nullptr;
};

class Chunk {
 public:
  // Called once the last reference to application-owned bytes is dropped.
  using ReleaseFn = void (*)(void* context, const uint8_t* data, size_t length);

  Chunk() = default;
  // A new reference to `owner`'s bytes [data, data + length).
  Chunk(ChunkOwner* owner, const uint8_t* data, size_t length);
  Chunk(const Chunk& other) : Chunk(other.owner_, other.data_, other.length_) {}
  Chunk(Chunk&& other) noexcept : owner_(other.owner_), data_(other.data_), length_(other.length_) {
    other.owner_ = nullptr;
    other.data_ = nullptr;
    other.length_ = 0;
  }
  Chunk& operator=(const Chunk& other);
  Chunk& operator=(Chunk&& other) noexcept;
  ~Chunk() { reset(); }

  // A view of [offset, offset + length) sharing this chunk's owner; empty if
  // the range is not inside the chunk.
  Chunk slice(size_t offset, size_t length) const;

  // Drops this reference (the chunk becomes empty).
  void reset();

  // False for an empty chunk (default-constructed, moved from, or a failed
  // pool request). A valid chunk may still have zero length.
  bool valid() const { return owner_ != nullptr; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return length_; }
  std::span<const uint8_t> bytes() const { return {data_, length_}; }
  // Whether both refer to bytes of the same owner, so one reference keeps
  // both alive.
  bool shares_owner_with(const Chunk& other) const { return owner_ == other.owner_; }
  // References to the owner, this one included (0 for an empty chunk).
  uint32_t use_count() const { return owner_ != nullptr ? owner_->references : 0; }

 private:
  ChunkOwner* owner_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t length_ = 0;
};

// Per-core pool of fixed-size buffers and of owner records for adopted
// application memory. Storage is allocated by the constructor and grow()
// (warm-up) only; taking and returning chunks never allocates. The pool must
// outlive every chunk it hands out.
class ChunkPool {
 public:
  ChunkPool(size_t buffer_size, size_t buffer_count, size_t adopt_count = 0);
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Copies `bytes` into a free buffer. Empty chunk if bytes.size() >
  // buffer_size() or no buffer is free.
  Chunk copy_from(std::span<const uint8_t> bytes);
  // Wraps application memory; `release(context, data, length)` runs when the
  // last reference is dropped. Empty chunk (and no callback) if no record is
  // free.
  Chunk adopt(const uint8_t* data, size_t length, Chunk::ReleaseFn release, void* context);

  // Adds storage (allocates: warm-up only).
  void grow(size_t buffers, size_t adopt_records);

  size_t buffer_size() const { return buffer_size_; }
  size_t free_buffers() const { return free_buffer_count_; }
  size_t free_adopt_records() const { return free_adopt_count_; }

 private:
  struct BufferSlot : ChunkOwner {
    ChunkPool* pool;
    uint8_t* data;
    BufferSlot* next_free;
  };
  struct AdoptRecord : ChunkOwner {
    ChunkPool* pool;
    Chunk::ReleaseFn release;
    void* context;
    const uint8_t* data;
    size_t length;
    AdoptRecord* next_free;
  };
  static void return_buffer(ChunkOwner* owner);
  static void return_adopted(ChunkOwner* owner);

  size_t buffer_size_;
  std::vector<std::unique_ptr<uint8_t[]>> buffer_blocks_;
  std::vector<std::unique_ptr<BufferSlot[]>> slot_blocks_;
  std::vector<std::unique_ptr<AdoptRecord[]>> record_blocks_;
  BufferSlot* free_buffers_ = nullptr;
  AdoptRecord* free_records_ = nullptr;
  size_t free_buffer_count_ = 0;
  size_t free_adopt_count_ = 0;
};

}  // namespace dpquic::transmit
