#pragma once
// The null packet protection of the fuzz targets (crypto/protection_override.h):
// compiled into fuzz targets and their corpus tests only, never into a server.
//
//   seal:  ciphertext = plaintext, then the 16-byte tag kNullTag (all zeros);
//   open:  the payload is returned as it is if its last 16 bytes are kNullTag,
//          otherwise it is an authentication failure;
//   header protection: the mask is all zeros, so the first byte and the
//          packet number are sent as they are.
//
// Installed on the MbManager of both endpoints of an in-memory pair, it makes
// every packet (Initial, Handshake, 0-RTT, 1-RTT), the Retry integrity tag and
// address tokens plaintext with a fixed tag, while the TLS handshake stays
// real. A fuzz input is then a datagram of plaintext QUIC packets:
//   header | frames | 00 x 16
// with the header as on the wire (packet number unmasked) and the payload
// long enough for a header protection sample (4 + 16 bytes after the start of
// the packet number field).

#include <array>
#include <cstdint>
#include <span>

#include "crypto/protection_override.h"

namespace dpquic::fuzz {

inline constexpr std::array<uint8_t, 16> kNullTag{};

class NullPacketProtection final : public crypto::PacketProtectionOverride {
 public:
  bool aead(bool seal, const crypto::AeadKey& key, const crypto::AeadNonce& nonce,
            std::span<const uint8_t> aad, std::span<const crypto::GatherSegment> segments,
            uint8_t* tag) const override;
  void header_protection_mask(const crypto::HeaderProtectionKey& key, const uint8_t* sample,
                              crypto::HeaderProtectionMask& mask) const override;
};

// The one instance fuzz targets install (it has no state).
const NullPacketProtection& null_packet_protection();

}  // namespace dpquic::fuzz
