#pragma once
// A FIFO of T in a ring over storage allocated up front, so pushes and pops
// in steady state never allocate. The stateless-reply queue, a connection's
// event and DATAGRAM queues, and the endpoint's and scheduler's queues of
// slots are all this one type.
//
// Two ways to add an element:
// - `try_push`, or `next_slot()` then `commit()` to fill an element in
//   place: a full ring refuses (the caller drops and counts);
// - `push`: a full ring doubles first. For queues whose bound is a budget
//   enforced elsewhere (streams, connections): the ring grows only when it
//   holds more than it ever has, never per packet once warm.
//
// Invariants: size() <= capacity(); front() is the oldest element; indices
// of operator[] count from the oldest; capacity() changes only in the
// constructor, reset(capacity) and push().

#include <cstddef>
#include <utility>
#include <vector>

namespace dpquic {

template <typename T>
class FixedRing {
 public:
  FixedRing() = default;
  explicit FixedRing(size_t capacity) : slots_(capacity) {}

  // Empties the ring and sets its capacity (start-up or reuse, not per
  // packet).
  void reset(size_t capacity) {
    slots_.assign(capacity, T{});
    head_ = count_ = 0;
  }
  void clear() { head_ = count_ = 0; }

  size_t capacity() const { return slots_.size(); }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == slots_.size(); }

  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& operator[](size_t i) { return slots_[index(i)]; }
  const T& operator[](size_t i) const { return slots_[index(i)]; }

  // Precondition: !empty().
  void pop() {
    head_ = index(1);
    --count_;
  }

  // The slot the next element goes into; it becomes one on commit().
  // Precondition: !full().
  T& next_slot() { return slots_[index(count_)]; }
  void commit() { ++count_; }

  bool try_push(const T& value) {
    if (full()) return false;
    next_slot() = value;
    commit();
    return true;
  }

  void push(const T& value) {
    if (full()) grow();
    next_slot() = value;
    commit();
  }

 private:
  size_t index(size_t i) const { return (head_ + i) % slots_.size(); }

  void grow() {
    std::vector<T> larger(slots_.empty() ? 1 : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) larger[i] = std::move(slots_[index(i)]);
    slots_.swap(larger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace dpquic
