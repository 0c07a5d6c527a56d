#include "quic/recovery/received_ranges.h"

#include <algorithm>
#include <stdexcept>

#include "quic/hot_path.h"

namespace dpquic::recovery {

ReceivedRanges::ReceivedRanges(size_t capacity) : capacity_(capacity) {
  if (capacity == 0 || capacity > kMaxRanges) {
    throw std::invalid_argument("ReceivedRanges: capacity must be 1 to kMaxRanges");
  }
}

size_t ReceivedRanges::lower_index(uint64_t packet_number) const {
  // Reordering is mostly shallow, so the answer is mostly near the front; the
  // array is at most kMaxRanges long either way.
  size_t index = 0;
  while (index < size_ && ranges_[index].smallest > packet_number) ++index;
  return index;
}

DPQUIC_HOT const wire::AckRange* ReceivedRanges::find(uint64_t packet_number) const {
  const size_t index = lower_index(packet_number);
  if (index < size_ && packet_number <= ranges_[index].largest) return &ranges_[index];
  return nullptr;
}

bool ReceivedRanges::contains(uint64_t packet_number) const {
  return find(packet_number) != nullptr;
}

DPQUIC_HOT bool ReceivedRanges::is_duplicate(uint64_t packet_number) const {
  if (packet_number < floor_) return true;
  if (size_ == 0 || packet_number > ranges_[0].largest) return false;
  const size_t index = lower_index(packet_number);
  if (index < size_ && packet_number <= ranges_[index].largest) return true;
  // A new range below every kept one cannot be stored in a full set.
  return index == size_ && size_ == capacity_ && packet_number + 1 < ranges_[size_ - 1].smallest;
}

DPQUIC_HOT bool ReceivedRanges::insert(uint64_t packet_number) {
  if (packet_number < floor_) return false;
  if (size_ == 0) {
    ranges_[0] = {packet_number, packet_number};
    size_ = 1;
    return true;
  }
  // The common case: the next packet in sequence extends the newest range.
  wire::AckRange& newest = ranges_[0];
  if (packet_number > newest.largest) {
    if (packet_number == newest.largest + 1) {
      newest.largest = packet_number;
      return true;
    }
    return insert_new_range(0, packet_number);
  }
  const size_t index = lower_index(packet_number);
  if (index < size_ && packet_number <= ranges_[index].largest) return false;
  // Here ranges_[index - 1] lies above packet_number (index >= 1, since
  // packet_number is below the newest range) and ranges_[index], if any,
  // below it.
  wire::AckRange& above = ranges_[index - 1];
  const bool joins_above = packet_number + 1 == above.smallest;
  const bool joins_below = index < size_ && ranges_[index].largest + 1 == packet_number;
  if (joins_above && joins_below) {
    above.smallest = ranges_[index].smallest;
    erase(index);
    return true;
  }
  if (joins_above) {
    above.smallest = packet_number;
    return true;
  }
  if (joins_below) {
    ranges_[index].largest = packet_number;
    return true;
  }
  return insert_new_range(index, packet_number);
}

bool ReceivedRanges::insert_new_range(size_t index, uint64_t packet_number) {
  const bool full = size_ == capacity_;
  if (full && index == size_) {
    // The new range would be the oldest, so it is the one that goes.
    floor_ = ranges_[size_ - 1].smallest;
    return false;
  }
  if (full) --size_;  // drop the oldest
  std::copy_backward(ranges_.begin() + index, ranges_.begin() + size_, ranges_.begin() + size_ + 1);
  ranges_[index] = {packet_number, packet_number};
  ++size_;
  // What lies below the oldest range kept (possibly the new one) is too old
  // from now on.
  if (full) floor_ = ranges_[size_ - 1].smallest;
  return true;
}

void ReceivedRanges::erase(size_t index) {
  std::copy(ranges_.begin() + index + 1, ranges_.begin() + size_, ranges_.begin() + index);
  --size_;
}

void ReceivedRanges::remove_below(uint64_t packet_number) {
  if (packet_number <= floor_) return;
  floor_ = packet_number;
  while (size_ > 0 && ranges_[size_ - 1].largest < packet_number) --size_;
  if (size_ > 0 && ranges_[size_ - 1].smallest < packet_number) {
    ranges_[size_ - 1].smallest = packet_number;
  }
}

}  // namespace dpquic::recovery
