#pragma once
// Datagram buffers that tests and benchmarks lend to poll_transmit, the way
// the backends lend theirs: `count` separate buffers of `segment` bytes, one
// datagram each (BurstMode::kIndependent). Datagram i of a burst is in
// datagram(i).
//
// Not copyable: the slices point into the storage. Moving keeps them valid
// (the storage's heap block moves with it).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "quic/transmit/burst.h"

namespace dpquic::harness {

class LentBuffers {
 public:
  LentBuffers(size_t count, size_t segment)
      : segment_(segment), storage_(count * segment), slices_(count) {
    for (size_t i = 0; i < count; ++i) slices_[i] = storage_.data() + i * segment;
  }
  LentBuffers(const LentBuffers&) = delete;
  LentBuffers& operator=(const LentBuffers&) = delete;
  LentBuffers(LentBuffers&&) = default;
  LentBuffers& operator=(LentBuffers&&) = default;

  transmit::BurstBuffers buffers() const {
    transmit::BurstBuffers lent;
    lent.datagrams = slices_;
    lent.capacity = segment_;
    lent.segment_size = segment_;
    lent.mode = transmit::BurstMode::kIndependent;
    return lent;
  }
  uint8_t* datagram(size_t i) const { return slices_[i]; }
  size_t count() const { return slices_.size(); }

 private:
  size_t segment_;
  std::vector<uint8_t> storage_;
  std::vector<uint8_t*> slices_;
};

}  // namespace dpquic::harness
