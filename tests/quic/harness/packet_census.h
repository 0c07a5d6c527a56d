#pragma once
// Reads the packet types of a datagram as seen on the wire (for the
// scenario tests): the unprotected parts of each coalesced packet's header.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/wire/header.h"

namespace dpquic::harness {

// Calls `visit(header)` for each packet of `datagram` until one fails to
// parse or a short header (which runs to the end) was visited. `cid_length`:
// the length of the receiver's connection IDs (short headers only).
template <typename Visit>
void for_each_packet(std::span<const uint8_t> datagram, size_t cid_length, Visit&& visit) {
  size_t offset = 0;
  while (offset < datagram.size()) {
    wire::ParsedHeader header;
    if (wire::parse_packet_header(datagram.subspan(offset), cid_length, header) !=
        wire::WireError::kOk) {
      return;
    }
    visit(header);
    if (!header.long_header || header.packet_size == 0) return;
    offset += header.packet_size;
  }
}

// Packets of each type seen in one direction.
struct PacketCensus {
  std::array<uint64_t, 6> packets{};
  uint64_t datagrams = 0;
  uint64_t bytes = 0;

  void count(std::span<const uint8_t> datagram, size_t cid_length) {
    ++datagrams;
    bytes += datagram.size();
    for_each_packet(datagram, cid_length, [&](const wire::ParsedHeader& header) {
      ++packets[static_cast<size_t>(header.type)];
    });
  }
  uint64_t of(wire::PacketType type) const { return packets[static_cast<size_t>(type)]; }
};

// True if the datagram holds a packet of `type`.
inline bool contains_packet(std::span<const uint8_t> datagram, size_t cid_length,
                            wire::PacketType type) {
  bool found = false;
  for_each_packet(datagram, cid_length,
                  [&](const wire::ParsedHeader& header) { found |= header.type == type; });
  return found;
}

}  // namespace dpquic::harness
