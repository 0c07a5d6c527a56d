#pragma once
// A FIFO of small integers (stream slots) as a ring that grows by doubling
// only when it holds more than ever before, so steady-state pushes and pops
// never allocate. The round-robin stream scheduler is built on it.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpquic::conn {

class SlotQueue {
 public:
  explicit SlotQueue(size_t initial_capacity = 16) : slots_(initial_capacity) {}

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  uint32_t front() const { return slots_[head_]; }
  void pop() {
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
  void push(uint32_t slot) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = slot;
    ++count_;
  }

 private:
  void grow() {
    std::vector<uint32_t> larger(slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) larger[i] = slots_[(head_ + i) % slots_.size()];
    slots_.swap(larger);
    head_ = 0;
  }

  std::vector<uint32_t> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace dpquic::conn
