#pragma once
// The buffers a caller lends to one burst, and the descriptor it gets back.
//
// One shape serves both backends:
// - kernel UDP with GSO: one contiguous buffer of N * capacity bytes, lent as
//   N consecutive slices (lend_gso_buffer). The builder lays the train out
//   back to back from the start of the buffer at the burst's segment size S
//   (which the connection may lower below the lent one: the path's PMTU, the
//   peer's limit), every datagram but the last exactly S bytes, so the whole
//   train goes to one sendmsg with UDP_SEGMENT = S and total length
//   total_bytes(). Datagram i is then at buffer + i * S (burst_datagram()),
//   not necessarily at slice i.
// - DPDK: N mbuf data areas (after the Ethernet/IP/UDP headroom); each
//   datagram is one mbuf of lengths[i] bytes; no uniformity is needed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dpquic::transmit {

// The most datagrams one burst builds.
inline constexpr size_t kMaxBurstDatagrams = 64;
// A long header's 2-byte Length field caps packets at 16383 bytes, so no
// datagram is larger (and GSO/jumbo frames stay below it anyway).
inline constexpr size_t kMaxSegmentSize = 16383;

enum class BurstMode : uint8_t {
  // Uniform segments: every datagram but the last has exactly segment_size
  // bytes (padding the ones that end short); a shorter datagram ends the
  // train.
  kGsoTrain,
  // Each datagram stands alone (one mbuf each): no padding to segment_size.
  kIndependent,
};

// ECN codepoint of the IP header (RFC 3168 bit values).
enum class EcnCodepoint : uint8_t { kNotEct = 0b00, kEct1 = 0b01, kEct0 = 0b10, kCe = 0b11 };

// Lent by the caller for one build() call.
struct BurstBuffers {
  // Up to kMaxBurstDatagrams datagram buffers of `capacity` bytes each. In
  // kGsoTrain mode they must be one contiguous region, datagrams[i] ==
  // datagrams[0] + i * capacity (as lend_gso_buffer cuts it): the builder
  // writes the train from datagrams[0] at the segment size it uses.
  std::span<uint8_t* const> datagrams;
  size_t capacity = 0;
  // S: the largest datagram to build (the path's maximum UDP payload), at
  // least 1200 and at most min(capacity, kMaxSegmentSize).
  size_t segment_size = 0;
  BurstMode mode = BurstMode::kGsoTrain;
};

// What was built: datagram i is burst_datagram(buffers, *this, i)[0,
// lengths[i]): datagrams[i] for kIndependent bursts, datagrams[0] + i *
// segment_size for a kGsoTrain.
struct BurstDescriptor {
  size_t datagram_count = 0;
  size_t segment_size = 0;  // S as built (<= as lent); the GSO segment size for a train
  std::array<uint16_t, kMaxBurstDatagrams> lengths{};
  EcnCodepoint ecn = EcnCodepoint::kNotEct;
  uint32_t path_id = 0;  // the connection's path the burst is for

  size_t total_bytes() const {
    size_t total = 0;
    for (size_t i = 0; i < datagram_count; ++i) total += lengths[i];
    return total;
  }
};

// Where datagram `i` of `built` starts, in the buffers lent for it.
inline uint8_t* burst_datagram(const BurstBuffers& lent, const BurstDescriptor& built, size_t i) {
  return lent.mode == BurstMode::kGsoTrain ? lent.datagrams[0] + i * built.segment_size
                                           : lent.datagrams[i];
}

// Cuts `buffer` (at least slices.size() * segment_size bytes) into
// consecutive slices for a GSO train.
inline void lend_gso_buffer(uint8_t* buffer, size_t segment_size, std::span<uint8_t*> slices) {
  for (size_t i = 0; i < slices.size(); ++i) slices[i] = buffer + i * segment_size;
}

}  // namespace dpquic::transmit
