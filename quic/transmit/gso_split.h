#pragma once
// A GSO train split back into datagrams: every segment but the last is
// exactly `segment_size` bytes, the last 1..segment_size. The kernel-UDP
// backend splits GRO receives (a coalesced buffer with the UDP_GRO segment
// size) with it.

#include <cstddef>

namespace dpquic::transmit {

// Datagrams in a train of `length` bytes: ceil(length / segment_size); 0 for
// an empty train or a zero segment size.
constexpr size_t gso_segment_count(size_t length, size_t segment_size) {
  return segment_size == 0 ? 0 : length / segment_size + (length % segment_size != 0);
}

// The length of the datagram at `offset` (< length, a multiple of
// segment_size) in a train of `length` bytes: segment_size, or what is left
// for the last. A segment size of 0 means one datagram, a plain receive.
constexpr size_t gso_segment_length(size_t length, size_t segment_size, size_t offset) {
  const size_t remaining = length - offset;
  return segment_size == 0 || remaining < segment_size ? remaining : segment_size;
}

}  // namespace dpquic::transmit
