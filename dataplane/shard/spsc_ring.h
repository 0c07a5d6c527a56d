#pragma once
// A bounded lock-free ring for exactly one producer thread and one consumer
// thread: how a shard hands a datagram to the shard that owns its connection.
//
// The slots are T objects constructed once, up front; items are written and
// read in place (producer_slot/producer_commit, consumer_slot/
// consumer_release), so a large item such as a 1500-byte datagram is copied
// once into the ring and read where it lies. try_push/try_pop are the
// move-in/move-out convenience on top.
//
// Positions are free-running counters (the slot is position & mask). Each side
// owns one counter, publishes it with a release store and reads the other's
// with an acquire load; it keeps a private copy of the other side's counter
// and reloads it only when the ring looks full (producer) or empty
// (consumer), so in steady state neither touches the other's cache line.

#include <atomic>
#include <cassert>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>

namespace dpquic::dataplane {

template <typename T>
class SpscRing {
 public:
  // `capacity` is rounded up to a power of two (at least 1). Allocates the
  // slots here and never again. Throws std::invalid_argument for 0.
  explicit SpscRing(size_t capacity) : mask_(round_up(capacity) - 1), slots_(new T[mask_ + 1]) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // --- producer thread only ---

  // The next free slot to write in place, or null when the ring is full.
  // Repeated calls before producer_commit() return the same slot.
  T* producer_slot() {
    const size_t tail = producer_.position.load(std::memory_order_relaxed);
    if (tail - producer_.other_cached == capacity()) {
      producer_.other_cached = consumer_.position.load(std::memory_order_acquire);
      if (tail - producer_.other_cached == capacity()) return nullptr;
    }
    return &slots_[tail & mask_];
  }
  // Publishes the slot producer_slot() returned (which must not be null).
  void producer_commit() {
    const size_t tail = producer_.position.load(std::memory_order_relaxed);
    assert(tail - producer_.other_cached < capacity());
    producer_.position.store(tail + 1, std::memory_order_release);
  }
  bool try_push(T&& item) {
    T* slot = producer_slot();
    if (slot == nullptr) return false;
    *slot = std::move(item);
    producer_commit();
    return true;
  }

  // --- consumer thread only ---

  // The oldest published item, read in place, or null when the ring is empty.
  T* consumer_slot() {
    const size_t head = consumer_.position.load(std::memory_order_relaxed);
    if (head == consumer_.other_cached) {
      consumer_.other_cached = producer_.position.load(std::memory_order_acquire);
      if (head == consumer_.other_cached) return nullptr;
    }
    return &slots_[head & mask_];
  }
  // Frees the slot consumer_slot() returned (which must not be null); the
  // producer may overwrite it from now on.
  void consumer_release() {
    const size_t head = consumer_.position.load(std::memory_order_relaxed);
    assert(head != consumer_.other_cached);
    consumer_.position.store(head + 1, std::memory_order_release);
  }
  bool try_pop(T& out) {
    T* slot = consumer_slot();
    if (slot == nullptr) return false;
    out = std::move(*slot);
    consumer_release();
    return true;
  }

  // --- either thread ---

  // Items published and not yet released. Exact when both sides are idle;
  // otherwise a snapshot that may already be stale.
  size_t size() const {
    // Head first: the tail read after it is never behind it.
    const size_t head = consumer_.position.load(std::memory_order_acquire);
    const size_t tail = producer_.position.load(std::memory_order_acquire);
    const size_t used = tail - head;
    return used < capacity() ? used : capacity();
  }
  bool empty() const { return size() == 0; }

 private:
  // 128 bytes: two 64-byte lines, since adjacent-line prefetching on x86
  // would otherwise make neighbouring lines false-share.
  static constexpr size_t kSeparation = 128;

  struct alignas(kSeparation) Side {
    std::atomic<size_t> position{0};  // written by this side only
    size_t other_cached = 0;          // this side's copy of the other position
  };

  static size_t round_up(size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("SpscRing capacity must be at least 1");
    size_t power = 1;
    while (power < capacity) power <<= 1;
    return power;
  }

  const size_t mask_;
  const std::unique_ptr<T[]> slots_;
  Side producer_;  // tail: next slot to write
  Side consumer_;  // head: next slot to read
};

}  // namespace dpquic::dataplane
