#pragma once
// Packet types and encryption levels, independent of the version-specific
// long-header type bits (v1 and v2 number them differently; see header.h).

#include <cstdint>

namespace dpquic::wire {

enum class PacketType : uint8_t {
  kInitial,
  kZeroRtt,
  kHandshake,
  kRetry,
  kVersionNegotiation,
  kOneRtt,  // short header
};

// The packet number spaces of RFC 9000 §12.3; 0-RTT and 1-RTT share one.
enum class PacketNumberSpace : uint8_t { kInitial, kHandshake, kApplication };
inline constexpr int kPacketNumberSpaceCount = 3;

constexpr PacketNumberSpace packet_number_space(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return PacketNumberSpace::kInitial;
    case PacketType::kHandshake: return PacketNumberSpace::kHandshake;
    default: return PacketNumberSpace::kApplication;
  }
}

}  // namespace dpquic::wire
