#include "crypto/tokens.h"

#include <openssl/digest.h>
#include <openssl/hmac.h>
#include <openssl/mem.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>

#include "crypto/aead_burst.h"

namespace dpquic::crypto {

StatelessResetTokens::StatelessResetTokens(std::span<const uint8_t> static_key) {
  if (static_key.size() < 32 || static_key.size() > 64) {
    throw std::invalid_argument("stateless reset key must be 32 to 64 bytes");
  }
  if (!HMAC_Init_ex(hmac_.get(), static_key.data(), static_key.size(), EVP_sha256(), nullptr)) {
    throw std::runtime_error("stateless reset key: HMAC-SHA256 setup failed");
  }
  // One token now, so the digest contexts the HMAC state copies into exist
  // before the first reset is sent: later tokens reuse them.
  token_for(wire::ConnectionId());
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

}  // namespace

AddressTokens::AddressTokens(const MbManager& mb, std::span<const uint8_t> key,
                             AddressTokenLifetimes lifetimes)
    : mb_(mb), lifetimes_(lifetimes) {
  // Every token has its own nonce, so the key's IV is never used.
  const std::array<uint8_t, kAeadIvLength> unused_iv{};
  if (key.size() != 16 || !key_.install(mb, CipherSuite::kAes128Gcm, key, unused_iv)) {
    throw std::invalid_argument("address token key must be 16 bytes");
  }
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

  const PacketStatus status = seal_with_nonce(mb_, key_, nonce, out.first(1), {plaintext, length},
                                              out.subspan(kHeaderLength, length + kAeadTagLength));
  OPENSSL_cleanse(plaintext, sizeof(plaintext));
  return status == PacketStatus::kOk ? token_length : 0;
}

TokenValidation AddressTokens::validate(std::span<const uint8_t> token,
                                        std::optional<AddressTokenType> expected_type,
                                        std::span<const uint8_t> client_address, uint64_t now,
                                        ValidatedToken& out) const {
  if (token.size() < kHeaderLength + kMinPlaintextLength + kAeadTagLength ||
      token.size() > kMaxAddressTokenLength || token[0] >> 4 != kFormatVersion) {
    return TokenValidation::kMalformed;
  }
  const uint8_t type_bits = token[0] & 0x0f;
  if (type_bits != static_cast<uint8_t>(AddressTokenType::kRetry) &&
      type_bits != static_cast<uint8_t>(AddressTokenType::kNewToken)) {
    return TokenValidation::kMalformed;
  }
  AeadNonce nonce;
  std::memcpy(nonce.data(), &token[1], nonce.size());
  const std::span<const uint8_t> sealed = token.subspan(kHeaderLength);
  uint8_t plaintext[kMaxPlaintextLength];
  const size_t length = sealed.size() - kAeadTagLength;
  if (open_with_nonce(mb_, key_, nonce, token.first(1), sealed, {plaintext, length}) !=
      PacketStatus::kOk) {
    return TokenValidation::kInvalid;
  }

  // Authenticated, so the lengths were written by us; still check them.
  TokenValidation result = TokenValidation::kValid;
  const uint64_t issued_at = load_u64(plaintext);
  const size_t address_length = plaintext[8];
  const size_t dcid_offset = 9 + address_length;
  if (dcid_offset >= length || plaintext[dcid_offset] > wire::kMaxConnectionIdLength ||
      dcid_offset + 1 + plaintext[dcid_offset] != length) {
    result = TokenValidation::kMalformed;
  } else if (expected_type && static_cast<uint8_t>(*expected_type) != type_bits) {
    result = TokenValidation::kWrongType;
  } else if (address_length != client_address.size() ||
             (address_length != 0 &&
              std::memcmp(&plaintext[9], client_address.data(), address_length) != 0)) {
    result = TokenValidation::kWrongAddress;
  } else {
    const AddressTokenType type = static_cast<AddressTokenType>(type_bits);
    const uint64_t lifetime =
        type == AddressTokenType::kRetry ? lifetimes_.retry : lifetimes_.new_token;
    if (now < issued_at || now - issued_at > lifetime) {
      result = TokenValidation::kExpired;
    } else {
      out.type = type;
      out.issued_at = issued_at;
      out.original_dcid = wire::ConnectionId({&plaintext[dcid_offset + 1], plaintext[dcid_offset]});
    }
  }
  OPENSSL_cleanse(plaintext, sizeof(plaintext));
  return result;
}

}  // namespace dpquic::crypto
