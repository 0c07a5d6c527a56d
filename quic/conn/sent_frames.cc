#include "quic/conn/sent_frames.h"

#include <bit>

namespace dpquic::conn {

SentFrameLog::SentFrameLog(size_t initial_capacity)
    : records_(std::bit_ceil(initial_capacity < 16 ? size_t{16} : initial_capacity)),
      mask_(records_.size() - 1) {}

uint32_t SentFrameLog::end_packet() {
  if (head_ == packet_first_) add(SentFrame{});
  records_[(head_ - 1) & mask_].last_in_packet = true;
  packet_open_ = false;
  return static_cast<uint32_t>(packet_first_);
}

void SentFrameLog::grow() {
  std::vector<SentFrame> larger(records_.size() * 2);
  const uint64_t new_mask = larger.size() - 1;
  for (uint64_t index = tail_; index < head_; ++index) {
    larger[index & new_mask] = records_[index & mask_];
  }
  records_.swap(larger);
  mask_ = new_mask;
}

}  // namespace dpquic::conn
