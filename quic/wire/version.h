#pragma once
// QUIC version numbers (RFC 8999, RFC 9000 §15, RFC 9369).

#include <cstdint>

namespace dpquic::wire {

inline constexpr uint32_t kVersion1 = 0x00000001;
inline constexpr uint32_t kVersion2 = 0x6b3343cf;
// Version 0 marks a Version Negotiation packet.
inline constexpr uint32_t kVersionNegotiationVersion = 0x00000000;

constexpr bool is_supported_version(uint32_t version) {
  return version == kVersion1 || version == kVersion2;
}

// Versions of the form 0x?a?a?a?a are reserved for greasing (RFC 9000 §15).
constexpr bool is_reserved_version(uint32_t version) {
  return (version & 0x0f0f0f0fu) == 0x0a0a0a0au;
}

}  // namespace dpquic::wire
