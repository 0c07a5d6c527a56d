#include "tests/fuzz/null_packet_protection.h"

#include <cstring>

namespace dpquic::fuzz {

bool NullPacketProtection::aead(bool /*seal*/, const crypto::AeadKey& /*key*/,
                                const crypto::AeadNonce& /*nonce*/,
                                std::span<const uint8_t> /*aad*/,
                                std::span<const crypto::GatherSegment> segments,
                                uint8_t* tag) const {
  // Sealing and opening are the same copy; the caller appends the tag
  // (seal) or compares it with the received one (open).
  for (const crypto::GatherSegment& segment : segments) {
    if (segment.length != 0 && segment.in != segment.out) {
      std::memmove(segment.out, segment.in, segment.length);
    }
  }
  std::memcpy(tag, kNullTag.data(), kNullTag.size());
  return true;
}

void NullPacketProtection::header_protection_mask(const crypto::HeaderProtectionKey& /*key*/,
                                                  const uint8_t* /*sample*/,
                                                  crypto::HeaderProtectionMask& mask) const {
  mask.fill(0);
}

const NullPacketProtection& null_packet_protection() {
  static const NullPacketProtection instance;
  return instance;
}

}  // namespace dpquic::fuzz
