#include "crypto/retry_integrity.h"

#include <openssl/mem.h>

#include <cstring>
#include <stdexcept>

#include "crypto/aead_burst.h"
#include "quic/wire/version.h"

namespace dpquic::crypto {
namespace {

// RFC 9001 §5.8.
constexpr std::array<uint8_t, 16> kKeyV1 = {0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a,
                                            0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e};
constexpr AeadNonce kNonceV1 = {0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63,
                                0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb};
// RFC 9369 §3.3.3.
constexpr std::array<uint8_t, 16> kKeyV2 = {0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2,
                                            0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92};
constexpr AeadNonce kNonceV2 = {0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c,
                                0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a};

}  // namespace

RetryIntegrity::RetryIntegrity(const MbManager& mb)
    : mb_(mb), nonce_v1_(kNonceV1), nonce_v2_(kNonceV2) {
  // The nonce is used as given, so the key's IV (IV XOR packet number) is
  // unused; zeros keep install() happy.
  const std::array<uint8_t, kAeadIvLength> unused_iv{};
  if (!key_v1_.install(mb, CipherSuite::kAes128Gcm, kKeyV1, unused_iv) ||
      !key_v2_.install(mb, CipherSuite::kAes128Gcm, kKeyV2, unused_iv)) {
    throw std::runtime_error("retry integrity: key setup failed");
  }
}

const AeadKey* RetryIntegrity::key_for(uint32_t version, const AeadNonce** nonce) const {
  switch (version) {
    case wire::kVersion1: *nonce = &nonce_v1_; return &key_v1_;
    case wire::kVersion2: *nonce = &nonce_v2_; return &key_v2_;
    default: return nullptr;
  }
}

bool RetryIntegrity::compute(uint32_t version, const wire::ConnectionId& original_dcid,
                             std::span<const uint8_t> retry_without_tag,
                             RetryIntegrityTag& tag) const {
  const AeadNonce* nonce = nullptr;
  const AeadKey* key = key_for(version, &nonce);
  if (key == nullptr || retry_without_tag.size() > kMaxRetryPacketLength) return false;
  // Retry Pseudo-Packet: ODCID Length (8), Original Destination Connection
  // ID, then the Retry packet without its tag.
  uint8_t pseudo_packet[1 + wire::kMaxConnectionIdLength + kMaxRetryPacketLength];
  size_t length = 0;
  pseudo_packet[length++] = static_cast<uint8_t>(original_dcid.size());
  if (!original_dcid.empty())
    std::memcpy(&pseudo_packet[length], original_dcid.data(), original_dcid.size());
  length += original_dcid.size();
  if (!retry_without_tag.empty()) {
    std::memcpy(&pseudo_packet[length], retry_without_tag.data(), retry_without_tag.size());
  }
  length += retry_without_tag.size();
  return seal_with_nonce(mb_, *key, *nonce, {pseudo_packet, length}, {}, tag) == PacketStatus::kOk;
}

bool RetryIntegrity::verify(uint32_t version, const wire::ConnectionId& original_dcid,
                            std::span<const uint8_t> retry_packet) const {
  if (retry_packet.size() < kAeadTagLength) return false;
  const size_t body_length = retry_packet.size() - kAeadTagLength;
  RetryIntegrityTag expected;
  if (!compute(version, original_dcid, retry_packet.first(body_length), expected)) return false;
  return CRYPTO_memcmp(expected.data(), retry_packet.data() + body_length, kAeadTagLength) == 0;
}

}  // namespace dpquic::crypto
