#pragma once
// Initial secrets (RFC 9001 §5.2; RFC 9369 §3.3.1 for v2): derived from the
// Destination Connection ID of the client's first Initial packet, so anyone
// who sees that packet can compute them. They only keep the handshake from
// being read by middleboxes that do not know the version.

#include <array>
#include <cstdint>
#include <span>

#include "crypto/types.h"

namespace dpquic::crypto {

// Initial keys always use AES-128-GCM with SHA-256.
inline constexpr CipherSuite kInitialCipherSuite = CipherSuite::kAes128Gcm;
inline constexpr size_t kInitialSecretLength = 32;

struct InitialSecrets {
  std::array<uint8_t, kInitialSecretLength> client{};
  std::array<uint8_t, kInitialSecretLength> server{};

  InitialSecrets() = default;
  InitialSecrets(const InitialSecrets&) = delete;
  InitialSecrets& operator=(const InitialSecrets&) = delete;
  ~InitialSecrets();  // wipes both secrets
};

// The version's initial salt, or an empty span for an unsupported version.
std::span<const uint8_t> initial_salt(uint32_t version);

// client/server_initial_secret for `version` (v1 or v2) and the client's
// original Destination Connection ID (any length up to 20 bytes; RFC 9000
// requires at least 8 from clients, which is the caller's check). Returns
// false for an unsupported version.
bool derive_initial_secrets(uint32_t version, std::span<const uint8_t> client_dcid,
                            InitialSecrets& out);

}  // namespace dpquic::crypto
