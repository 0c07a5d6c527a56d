#include "crypto/tokens.h"

#include <openssl/digest.h>
#include <openssl/hmac.h>
#include <openssl/mem.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "crypto/aead_burst.h"

namespace dpquic::crypto {

StatelessResetTokens::StatelessResetTokens(std::span<const uint8_t> static_key) {
  if (static_key.size() < 32 || static_key.size() > 64) {
    throw std::invalid_argument("stateless reset key must be 32 to 64 bytes");
  }
  if (!rekey(static_key)) throw std::runtime_error("stateless reset key: HMAC-SHA256 setup failed");
}

bool StatelessResetTokens::rekey(std::span<const uint8_t> static_key) {
  if (static_key.size() < 32 || static_key.size() > 64) return false;
  // Keyed on a new state, then copied in: BoringSSL fails either step only
  // when it cannot allocate.
  bssl::ScopedHMAC_CTX keyed;
  if (!HMAC_Init_ex(keyed.get(), static_key.data(), static_key.size(), EVP_sha256(), nullptr) ||
      !HMAC_CTX_copy_ex(hmac_.get(), keyed.get())) {
    return false;
  }
  // One token now, so the digest contexts the HMAC state copies into exist
  // before the first reset is sent: later tokens reuse them.
  token_for(wire::ConnectionId());
  return true;
}

StatelessResetTokens::~StatelessResetTokens() = default;

StatelessResetToken StatelessResetTokens::token_for(const wire::ConnectionId& cid) const {
  // The keyed HMAC state is kept (HMAC_Init_ex with no key restarts from
  // it): BoringSSL's one-shot HMAC() allocates its digest contexts, and this
  // runs for every stateless reset sent, a per-packet path.
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  StatelessResetToken token;
  if (!HMAC_Init_ex(hmac_.get(), nullptr, 0, nullptr, nullptr) ||
      !HMAC_Update(hmac_.get(), cid.data(), cid.size()) ||
      !HMAC_Final(hmac_.get(), digest, &digest_length) || digest_length < token.size()) {
    // Only an allocation failure gets here. An unpredictable token keeps the
    // guarantee that matters: nobody can forge a reset for this CID.
    RAND_bytes(token.data(), token.size());
    return token;
  }
  std::memcpy(token.data(), digest, token.size());
  OPENSSL_cleanse(digest, sizeof(digest));
  return token;
}

namespace {

// The first byte: format version in the high nibble, token type in the low
// one. It is sent in clear but authenticated as associated data.
constexpr uint8_t kFormatVersion = 1;
constexpr size_t kHeaderLength = 1 + kAeadIvLength;
// Issue time, address length, ODCID length; the address and ODCID follow.
constexpr size_t kMinPlaintextLength = 8 + 1 + 1;
constexpr size_t kMaxPlaintextLength =
    kMinPlaintextLength + kMaxTokenAddressLength + wire::kMaxConnectionIdLength;

void store_u64(uint8_t* out, uint64_t value) {
  for (int i = 7; i >= 0; --i, value >>= 8) out[i] = static_cast<uint8_t>(value);
}

uint64_t load_u64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | in[i];
  return value;
}

bool install_token_key(const MbManager& mb, std::span<const uint8_t> key, AeadKey& out) {
  // Every token has its own nonce, so the key's IV is never used.
  const std::array<uint8_t, kAeadIvLength> unused_iv{};
  return key.size() == 16 && out.install(mb, CipherSuite::kAes128Gcm, key, unused_iv);
}

// What validate() checks once a token authenticated: the layout of the
// plaintext (issue time, address and ODCID with their lengths), then type,
// address and age. Fills `out` only when the token is valid.
TokenValidation check_contents(std::span<const uint8_t> plaintext, AddressTokenType type,
                               std::optional<AddressTokenType> expected_type,
                               std::span<const uint8_t> client_address, uint64_t now,
                               uint64_t lifetime, ValidatedToken& out) {
  // Authenticated, so the lengths were written by us; still check them.
  const size_t length = plaintext.size();
  const uint64_t issued_at = load_u64(plaintext.data());
  const size_t address_length = plaintext[8];
  const size_t dcid_offset = 9 + address_length;
  if (dcid_offset >= length || plaintext[dcid_offset] > wire::kMaxConnectionIdLength ||
      dcid_offset + 1 + plaintext[dcid_offset] != length) {
    return TokenValidation::kMalformed;
  }
  if (expected_type && *expected_type != type) return TokenValidation::kWrongType;
  if (address_length != client_address.size() ||
      (address_length != 0 &&
       std::memcmp(&plaintext[9], client_address.data(), address_length) != 0)) {
    return TokenValidation::kWrongAddress;
  }
  if (now < issued_at || now - issued_at > lifetime) return TokenValidation::kExpired;
  out.type = type;
  out.issued_at = issued_at;
  out.original_dcid =
      wire::ConnectionId(plaintext.subspan(dcid_offset + 1, plaintext[dcid_offset]));
  return TokenValidation::kValid;
}

}  // namespace

AddressTokens::AddressTokens(const MbManager& mb, std::span<const uint8_t> key,
                             std::span<const std::vector<uint8_t>> previous_keys,
                             AddressTokenLifetimes lifetimes)
    : mb_(mb), lifetimes_(lifetimes) {
  if (!rekey(key, previous_keys)) {
    throw std::invalid_argument("address token keys must be 16 bytes, with at most " +
                                std::to_string(kMaxPreviousTokenKeys) + " previous ones");
  }
}

bool AddressTokens::rekey(std::span<const uint8_t> key,
                          std::span<const std::vector<uint8_t>> previous_keys) {
  if (previous_keys.size() > kMaxPreviousTokenKeys) return false;
  // Expanded aside first, so that a bad key leaves the current ones.
  std::array<AeadKey, 1 + kMaxPreviousTokenKeys> fresh;
  if (!install_token_key(mb_, key, fresh[0])) return false;
  for (size_t i = 0; i < previous_keys.size(); ++i) {
    if (!install_token_key(mb_, previous_keys[i], fresh[1 + i])) return false;
  }
  key_count_ = 1 + previous_keys.size();
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (i < key_count_) {
      fresh[i].move_to(keys_[i]);
    } else {
      keys_[i].wipe();
    }
  }
  return true;
}

std::optional<AddressTokenType> AddressTokens::claimed_type(std::span<const uint8_t> token) {
  if (token.empty() || token[0] >> 4 != kFormatVersion) return std::nullopt;
  const uint8_t type_bits = token[0] & 0x0f;
  if (type_bits == static_cast<uint8_t>(AddressTokenType::kRetry)) return AddressTokenType::kRetry;
  if (type_bits == static_cast<uint8_t>(AddressTokenType::kNewToken)) {
    return AddressTokenType::kNewToken;
  }
  return std::nullopt;
}

size_t AddressTokens::issue(AddressTokenType type, std::span<const uint8_t> client_address,
                            const wire::ConnectionId& original_dcid, uint64_t now,
                            std::span<uint8_t> out) const {
  const size_t plaintext_length =
      kMinPlaintextLength + client_address.size() + original_dcid.size();
  const size_t token_length = kHeaderLength + plaintext_length + kAeadTagLength;
  if (client_address.size() > kMaxTokenAddressLength || out.size() < token_length) return 0;

  out[0] = static_cast<uint8_t>(kFormatVersion << 4 | static_cast<uint8_t>(type));
  // A random 96-bit nonce rather than a counter: every core issues tokens
  // under the same key and a server restart must not repeat a nonce, which a
  // counter would need shared, persistent state for. Random nonces stay safe
  // for 2^32 tokens per key (NIST SP 800-38D §8.3); the key is meant to be
  // rotated long before that.
  AeadNonce nonce;
  if (RAND_bytes(nonce.data(), nonce.size()) != 1) return 0;
  std::memcpy(&out[1], nonce.data(), nonce.size());

  uint8_t plaintext[kMaxPlaintextLength];
  size_t length = 0;
  store_u64(&plaintext[length], now);
  length += 8;
  plaintext[length++] = static_cast<uint8_t>(client_address.size());
  if (!client_address.empty()) {
    std::memcpy(&plaintext[length], client_address.data(), client_address.size());
  }
  length += client_address.size();
  plaintext[length++] = static_cast<uint8_t>(original_dcid.size());
  if (!original_dcid.empty()) {
    std::memcpy(&plaintext[length], original_dcid.data(), original_dcid.size());
  }
  length += original_dcid.size();

  const PacketStatus status =
      seal_with_nonce(mb_, keys_[0], nonce, out.first(1), {plaintext, length},
                      out.subspan(kHeaderLength, length + kAeadTagLength));
  OPENSSL_cleanse(plaintext, sizeof(plaintext));
  return status == PacketStatus::kOk ? token_length : 0;
}

TokenValidation AddressTokens::validate(std::span<const uint8_t> token,
                                        std::optional<AddressTokenType> expected_type,
                                        std::span<const uint8_t> client_address, uint64_t now,
                                        ValidatedToken& out) const {
  const std::optional<AddressTokenType> type = claimed_type(token);
  if (!type || token.size() < kHeaderLength + kMinPlaintextLength + kAeadTagLength ||
      token.size() > kMaxAddressTokenLength) {
    return TokenValidation::kMalformed;
  }
  AeadNonce nonce;
  std::memcpy(nonce.data(), &token[1], nonce.size());
  const std::span<const uint8_t> sealed = token.subspan(kHeaderLength);
  uint8_t plaintext[kMaxPlaintextLength];
  const size_t length = sealed.size() - kAeadTagLength;
  // The current key, then the previous ones, newest first: at most
  // 1 + kMaxPreviousTokenKeys AEAD opens per token, authentic or not.
  bool opened = false;
  for (size_t i = 0; i < key_count_ && !opened; ++i) {
    opened = open_with_nonce(mb_, keys_[i], nonce, token.first(1), sealed, {plaintext, length}) ==
             PacketStatus::kOk;
  }
  const uint64_t lifetime =
      *type == AddressTokenType::kRetry ? lifetimes_.retry : lifetimes_.new_token;
  const TokenValidation result = opened ? check_contents({plaintext, length}, *type, expected_type,
                                                         client_address, now, lifetime, out)
                                        : TokenValidation::kInvalid;
  OPENSSL_cleanse(plaintext, sizeof(plaintext));
  return result;
}

}  // namespace dpquic::crypto
