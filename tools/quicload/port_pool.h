#pragma once
// The UDP source ports of a DPDK client shard's connections: a range of its
// own, each port handed to one connection at a time, the one freed longest
// ago first (so a late datagram for a finished connection seldom meets its
// successor). Sized once; take() and give_back() do not allocate.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dpquic::tools {

class PortPool {
 public:
  // Ports [first, first + count); first + count <= 65536.
  PortPool(uint16_t first, size_t count) : first_(first), ring_(count), in_use_(count, false) {
    for (size_t i = 0; i < count; ++i) ring_[i] = static_cast<uint16_t>(first + i);
    free_ = count;
  }

  std::optional<uint16_t> take() {
    if (free_ == 0) return std::nullopt;
    const uint16_t port = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --free_;
    in_use_[size_t{port} - first_] = true;
    return port;
  }
  // A port not taken from this pool (or given back twice) is ignored.
  void give_back(uint16_t port) {
    const size_t index = size_t{port} - first_;
    if (port < first_ || index >= ring_.size() || !in_use_[index]) return;
    in_use_[index] = false;
    ring_[(head_ + free_) % ring_.size()] = port;
    ++free_;
  }

  size_t free() const { return free_; }
  size_t size() const { return ring_.size(); }

 private:
  uint16_t first_;
  std::vector<uint16_t> ring_;  // free ports from head_, free_ of them
  std::vector<bool> in_use_;
  size_t head_ = 0;
  size_t free_ = 0;
};

}  // namespace dpquic::tools
