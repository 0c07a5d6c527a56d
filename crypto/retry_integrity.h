#pragma once
// The Retry Integrity Tag (RFC 9001 §5.8; RFC 9369 §3.3.3 for v2):
// AES-128-GCM under a fixed, published key and nonce, with an empty
// plaintext and the Retry pseudo-packet as associated data. It proves the
// Retry came from something that saw the client's Initial, nothing more.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/connection_id.h"

namespace dpquic::crypto {

using RetryIntegrityTag = std::array<uint8_t, kAeadTagLength>;

// Retry packets longer than this are refused: the pseudo-packet is built on
// the stack, and a Retry must fit one datagram (9000 covers jumbo frames).
inline constexpr size_t kMaxRetryPacketLength = 9000;

// Holds both versions' keys, expanded once; one per core, like MbManager.
class RetryIntegrity {
 public:
  explicit RetryIntegrity(const MbManager& mb);

  // Tag for a Retry packet (`retry_without_tag`: everything before the tag)
  // sent in reply to an Initial whose Destination CID was `original_dcid`.
  // Returns false for an unsupported version or an over-long packet.
  bool compute(uint32_t version, const wire::ConnectionId& original_dcid,
               std::span<const uint8_t> retry_without_tag, RetryIntegrityTag& tag) const;

  // Checks the last 16 bytes of `retry_packet` in constant time.
  bool verify(uint32_t version, const wire::ConnectionId& original_dcid,
              std::span<const uint8_t> retry_packet) const;

 private:
  const AeadKey* key_for(uint32_t version, const AeadNonce** nonce) const;

  const MbManager& mb_;
  AeadKey key_v1_;
  AeadKey key_v2_;
  AeadNonce nonce_v1_;
  AeadNonce nonce_v2_;
};

}  // namespace dpquic::crypto
