#pragma once
// Vocabulary shared by packet protection and the TLS handshake.

#include <cstddef>
#include <cstdint>

namespace dpquic::crypto {

// RFC 9001 §4.1.4: one key set per level; 0-RTT has its own keys but shares
// the application packet number space.
enum class EncryptionLevel : uint8_t {
  kInitial = 0,
  kEarlyData = 1,
  kHandshake = 2,
  kApplication = 3
};
inline constexpr int kEncryptionLevelCount = 4;

enum class Direction : uint8_t { kRead, kWrite };

// The TLS 1.3 cipher suites QUIC uses (RFC 9001 §5.3). AES-128-CCM is not
// offered.
enum class CipherSuite : uint8_t { kAes128Gcm, kAes256Gcm, kChaCha20Poly1305 };

inline constexpr size_t kAeadTagLength = 16;
inline constexpr size_t kAeadIvLength = 12;
inline constexpr size_t kHeaderProtectionSampleLength = 16;
inline constexpr size_t kHeaderProtectionMaskLength = 5;
inline constexpr size_t kMaxSecretLength = 48;  // SHA-384
inline constexpr size_t kMaxAeadKeyLength = 32;

constexpr size_t aead_key_length(CipherSuite suite) {
  return suite == CipherSuite::kAes128Gcm ? 16 : 32;
}
// The hash of the suite sets the secret length: SHA-384 for AES-256-GCM.
constexpr size_t secret_length(CipherSuite suite) {
  return suite == CipherSuite::kAes256Gcm ? 48 : 32;
}

}  // namespace dpquic::crypto
