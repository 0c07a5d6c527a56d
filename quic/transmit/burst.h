#pragma once
// The buffers a caller lends to one burst, and the descriptor it gets back.
//
// One shape serves both backends:
// - kernel UDP with GSO: one buffer cut into N consecutive slices of the
//   segment size S (lend_gso_buffer); the datagrams come back back to back,
//   every one but the last exactly S bytes, so the whole train goes to one
//   sendmsg with UDP_SEGMENT = S and total length total_bytes().
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
  // Up to kMaxBurstDatagrams datagram buffers of `capacity` bytes each.
  std::span<uint8_t* const> datagrams;
  size_t capacity = 0;
  // S: the largest datagram to build (the path's maximum UDP payload), at
  // least 1200 and at most min(capacity, kMaxSegmentSize).
  size_t segment_size = 0;
  BurstMode mode = BurstMode::kGsoTrain;
};

// What was built: datagram i is datagrams[i][0, lengths[i]).
struct BurstDescriptor {
  size_t datagram_count = 0;
  size_t segment_size = 0;  // S as lent; the GSO segment size for a train
  std::array<uint16_t, kMaxBurstDatagrams> lengths{};
  EcnCodepoint ecn = EcnCodepoint::kNotEct;
  uint32_t path_id = 0;  // the connection's path the burst is for

  size_t total_bytes() const {
    size_t total = 0;
    for (size_t i = 0; i < datagram_count; ++i) total += lengths[i];
    return total;
  }
};

// Cuts `buffer` (at least slices.size() * segment_size bytes) into
// consecutive slices for a GSO train.
inline void lend_gso_buffer(uint8_t* buffer, size_t segment_size, std::span<uint8_t*> slices) {
  for (size_t i = 0; i < slices.size(); ++i) slices[i] = buffer + i * segment_size;
}

}  // namespace dpquic::transmit
