#pragma once
// Splitting a GSO train back into datagrams: every segment but the last is
// exactly `segment_size` bytes, the last 1..segment_size. The kernel-UDP
// backend uses it for GRO receive (a coalesced buffer with the
// UDP_GRO segment size) and tests use it to feed peers that cannot do GSO.

#include <cstddef>
#include <cstdint>
#include <span>

namespace dpquic::transmit {

// Datagrams in a train of `length` bytes: ceil(length / segment_size); 0 for
// an empty train or a zero segment size.
constexpr size_t gso_segment_count(size_t length, size_t segment_size) {
  return segment_size == 0 ? 0 : length / segment_size + (length % segment_size != 0);
}

// Fills out[0..n) with views of the train's datagrams and returns n; 0 (out
// untouched) if segment_size is 0, the train is empty, or out is too small.
size_t gso_split(std::span<const uint8_t> train, size_t segment_size,
                 std::span<std::span<const uint8_t>> out);

}  // namespace dpquic::transmit
