#pragma once
// Drives endpoints by hand, without the simulator (for the scenario
// tests): collect what an endpoint sends now, hand datagrams to another.

#include <array>
#include <cstdint>
#include <vector>

#include "quic/endpoint/endpoint.h"

namespace dpquic::harness {

struct SentDatagram {
  conn::PathAddresses path;  // local = source, remote = destination
  std::vector<uint8_t> bytes;
};

// Every datagram `endpoint` sends at `now`.
inline std::vector<SentDatagram> collect_transmit(endpoint::Endpoint& endpoint, Instant now) {
  constexpr size_t kSegment = 1472, kBurst = 16;
  std::vector<uint8_t> storage(kSegment * kBurst);
  std::vector<uint8_t*> slices(kBurst);
  for (size_t i = 0; i < kBurst; ++i) slices[i] = storage.data() + i * kSegment;
  transmit::BurstBuffers buffers;
  buffers.datagrams = slices;
  buffers.capacity = kSegment;
  buffers.segment_size = kSegment;
  buffers.mode = transmit::BurstMode::kIndependent;
  transmit::BurstDescriptor out;
  conn::PathAddresses path;
  std::vector<SentDatagram> sent;
  for (int bursts = 0; bursts < 1024 && endpoint.poll_transmit(now, buffers, out, path); ++bursts) {
    for (size_t i = 0; i < out.datagram_count; ++i) {
      sent.push_back({path, std::vector<uint8_t>(slices[i], slices[i] + out.lengths[i])});
    }
  }
  return sent;
}

// Delivers `datagram` to `endpoint` as coming from `from` (the receiver's
// address is the datagram's destination).
inline void deliver(endpoint::Endpoint& endpoint, Instant now, const SentDatagram& datagram,
                    const conn::SocketAddress& from) {
  std::vector<uint8_t> copy = datagram.bytes;
  endpoint.handle_datagram(now, conn::PathAddresses{datagram.path.remote, from},
                           transmit::EcnCodepoint::kNotEct, copy);
}

}  // namespace dpquic::harness
