#pragma once
// HKDF-Extract and TLS 1.3 HKDF-Expand-Label (RFC 8446 §7.1) as QUIC uses
// them (RFC 9001 §5.1), with HMAC on BoringSSL's SHA-2 (no heap allocation:
// the hash states live on the stack). The hash follows the cipher
// suite: SHA-384 for AES-256-GCM, SHA-256 otherwise (and for Initial keys).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "crypto/types.h"

namespace dpquic::crypto {

// Output length of the suite's hash: the length of every secret it derives.
inline constexpr size_t hash_length(CipherSuite suite) { return secret_length(suite); }

// PRK = HKDF-Extract(salt, ikm). `prk` must be exactly hash_length(suite)
// bytes. Returns false on a size mismatch or a library failure.
bool hkdf_extract(CipherSuite suite, std::span<const uint8_t> salt, std::span<const uint8_t> ikm,
                  std::span<uint8_t> prk);

// out = HKDF-Expand-Label(secret, label, context, out.size()), where the
// label gets the "tls13 " prefix. Labels are at most 249 bytes and contexts
// at most 255 (the HkdfLabel vectors' limits). Returns false on bad sizes or
// a library failure; `out` is then zeroed.
bool hkdf_expand_label(CipherSuite suite, std::span<const uint8_t> secret, std::string_view label,
                       std::span<const uint8_t> context, std::span<uint8_t> out);

// The labels a QUIC version derives packet protection with: RFC 9001 §5.1
// and §6.1 for v1, RFC 9369 §3.3.2 for v2.
struct QuicLabels {
  std::string_view key;
  std::string_view iv;
  std::string_view hp;
  std::string_view ku;
};

// v2 labels for version 2, v1 labels for everything else: callers only get
// this far with a supported version.
const QuicLabels& quic_labels(uint32_t version);

}  // namespace dpquic::crypto
