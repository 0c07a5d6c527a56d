#pragma once
// Drives endpoints by hand, without the simulator (for the scenario
// tests): collect what an endpoint sends now, hand datagrams to another.

#include <cstdint>
#include <vector>

#include "quic/endpoint/endpoint.h"
#include "tools/testbed/lent_buffers.h"

namespace dpquic::harness {

struct SentDatagram {
  conn::PathAddresses path;  // local = source, remote = destination
  std::vector<uint8_t> bytes;
};

// Every datagram `endpoint` sends at `now`.
inline std::vector<SentDatagram> collect_transmit(endpoint::Endpoint& endpoint, Instant now) {
  const LentBuffers lent(16, 1472);
  const transmit::BurstBuffers buffers = lent.buffers();
  transmit::BurstDescriptor out;
  conn::PathAddresses path;
  std::vector<SentDatagram> sent;
  for (int bursts = 0; bursts < 1024 && endpoint.poll_transmit(now, buffers, out, path); ++bursts) {
    for (size_t i = 0; i < out.datagram_count; ++i) {
      sent.push_back(
          {path, std::vector<uint8_t>(lent.datagram(i), lent.datagram(i) + out.lengths[i])});
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
