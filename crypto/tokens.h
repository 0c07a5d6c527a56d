#pragma once
// Server-issued tokens.
//
// Stateless reset tokens (RFC 9000 §10.3.2): HMAC-SHA256 of the connection
// ID under a static key, truncated to 16 bytes, so any core (or a restarted
// server with the same key) can recompute a connection's token without
// state.
//
// Address-validation tokens (RFC 9000 §8.1): sent in Retry packets and
// NEW_TOKEN frames, AES-128-GCM sealed on ipsec-mb. A token carries the
// client address it was issued to, the original Destination Connection ID,
// the issue time and its type; only the server can read or forge one.

#include <openssl/hmac.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/connection_id.h"

namespace dpquic::crypto {

using StatelessResetToken = std::array<uint8_t, 16>;

class StatelessResetTokens {
 public:
  // `static_key` is 32 to 64 secret bytes. Throws std::invalid_argument
  // otherwise (configuration time only).
  explicit StatelessResetTokens(std::span<const uint8_t> static_key);
  ~StatelessResetTokens();
  StatelessResetTokens(const StatelessResetTokens&) = delete;
  StatelessResetTokens& operator=(const StatelessResetTokens&) = delete;

  // Not thread-safe: one instance per core (it reuses one HMAC state).
  StatelessResetToken token_for(const wire::ConnectionId& cid) const;

  // Replaces the key (a rotated host secret). False, with the key
  // unchanged, unless `static_key` is 32 to 64 bytes.
  bool rekey(std::span<const uint8_t> static_key);

 private:
  // Keyed at construction and by rekey(); cleansed by BoringSSL when freed.
  mutable bssl::ScopedHMAC_CTX hmac_;
};

enum class AddressTokenType : uint8_t { kRetry = 1, kNewToken = 2 };

// How long each type stays valid, in the units of the caller's `now`. Retry
// tokens are used within one round trip; NEW_TOKEN tokens across
// connections (RFC 9000 §8.1.3).
struct AddressTokenLifetimes {
  uint64_t retry = 10'000'000;             // 10 s in microseconds
  uint64_t new_token = 86'400'000'000ull;  // 24 h in microseconds
};

enum class TokenValidation : uint8_t {
  kValid,
  kMalformed,     // wrong length or unknown format
  kInvalid,       // does not authenticate: tampered, or another key
  kWrongType,     // a Retry token where a NEW_TOKEN one was expected, or the reverse
  kWrongAddress,  // issued to another client address
  kExpired,       // older than its type's lifetime, or issued in the future
};

struct ValidatedToken {
  AddressTokenType type = AddressTokenType::kRetry;
  wire::ConnectionId original_dcid;
  uint64_t issued_at = 0;
};

// Opaque client address bytes (e.g. family, IP and port) of at most this size.
inline constexpr size_t kMaxTokenAddressLength = 32;
// Format byte, nonce, issue time, address and ODCID with their lengths, tag.
inline constexpr size_t kMaxAddressTokenLength = 1 + kAeadIvLength + 8 + 1 +
                                                 kMaxTokenAddressLength + 1 +
                                                 wire::kMaxConnectionIdLength + kAeadTagLength;

// Keys a server still accepts tokens under after rotating to a new one.
inline constexpr size_t kMaxPreviousTokenKeys = 3;

class AddressTokens {
 public:
  // `key` is 16 secret bytes (AES-128): every token is issued under it.
  // Tokens issued under one of `previous_keys` (16 bytes each, at most
  // kMaxPreviousTokenKeys) still validate until they expire, so the key can
  // rotate across a fleet without turning away clients holding NEW_TOKEN
  // tokens. Throws std::invalid_argument otherwise (configuration time only).
  AddressTokens(const MbManager& mb, std::span<const uint8_t> key,
                std::span<const std::vector<uint8_t>> previous_keys = {},
                AddressTokenLifetimes lifetimes = {});

  // Writes a token to `out` and returns its length, or 0 if the address is
  // too long, `out` too small or no random nonce could be drawn.
  size_t issue(AddressTokenType type, std::span<const uint8_t> client_address,
               const wire::ConnectionId& original_dcid, uint64_t now, std::span<uint8_t> out) const;

  // Checks a token received from `client_address` at `now`. `expected_type`
  // empty accepts either type (the server learns which from `out.type`).
  // `out` is only filled in when the result is kValid. Tries the current
  // key, then each previous one: at most 1 + kMaxPreviousTokenKeys AEAD
  // opens per token, the CPU a forged token can cost.
  TokenValidation validate(std::span<const uint8_t> token,
                           std::optional<AddressTokenType> expected_type,
                           std::span<const uint8_t> client_address, uint64_t now,
                           ValidatedToken& out) const;

  // Replaces the current and previous keys (a rotated host secret), with the
  // constructor's rules. False, with the keys unchanged, if they break them.
  bool rekey(std::span<const uint8_t> key, std::span<const std::vector<uint8_t>> previous_keys);

  // The type a token claims in its clear first byte, before validate() has
  // authenticated it; nullopt for an unknown format or type. For choosing
  // what to validate against (the type is authenticated data: a token whose
  // byte was changed fails validate() with kInvalid).
  static std::optional<AddressTokenType> claimed_type(std::span<const uint8_t> token);

 private:
  const MbManager& mb_;
  // keys_[0] issues; keys_[0..key_count_) validate, newest first.
  std::array<AeadKey, 1 + kMaxPreviousTokenKeys> keys_;
  size_t key_count_ = 0;
  AddressTokenLifetimes lifetimes_;
};

}  // namespace dpquic::crypto
