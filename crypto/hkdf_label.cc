#include "crypto/hkdf_label.h"

#include <openssl/mem.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "quic/wire/version.h"

namespace dpquic::crypto {
namespace {

constexpr std::string_view kTls13LabelPrefix = "tls13 ";
constexpr size_t kMaxLabelVectorLength = 255;
constexpr size_t kMaxContextLength = 255;
// uint16 length, label<7..255>, context<0..255>.
constexpr size_t kMaxHkdfLabelLength = 2 + 1 + kMaxLabelVectorLength + 1 + kMaxContextLength;

// HMAC (RFC 2104) on BoringSSL's low-level hash API, whose contexts live on
// the stack: EVP-based HMAC_CTX and HKDF_expand allocate digest contexts on
// every call, several times per derived key, and a handshake derives dozens.
struct Sha256 {
  using Context = SHA256_CTX;
  static constexpr size_t kBlock = SHA256_CBLOCK;
  static constexpr size_t kOutput = SHA256_DIGEST_LENGTH;
  static void init(Context& c) { SHA256_Init(&c); }
  static void update(Context& c, const void* data, size_t n) { SHA256_Update(&c, data, n); }
  static void final(uint8_t* out, Context& c) { SHA256_Final(out, &c); }
};

struct Sha384 {
  using Context = SHA512_CTX;
  static constexpr size_t kBlock = SHA512_CBLOCK;
  static constexpr size_t kOutput = SHA384_DIGEST_LENGTH;
  static void init(Context& c) { SHA384_Init(&c); }
  static void update(Context& c, const void* data, size_t n) { SHA384_Update(&c, data, n); }
  static void final(uint8_t* out, Context& c) { SHA384_Final(out, &c); }
};

// The inner and outer hash states after absorbing the padded key, so that
// every HMAC under one key (HKDF-Expand's blocks) starts from a copy.
template <typename Hash>
class KeyedHmac {
 public:
  explicit KeyedHmac(std::span<const uint8_t> key) {
    std::array<uint8_t, Hash::kBlock> block{};
    if (key.size() > Hash::kBlock) {
      typename Hash::Context c;
      Hash::init(c);
      Hash::update(c, key.data(), key.size());
      Hash::final(block.data(), c);
      OPENSSL_cleanse(&c, sizeof(c));
    } else if (!key.empty()) {
      std::memcpy(block.data(), key.data(), key.size());
    }
    for (uint8_t& b : block) b ^= 0x36;
    Hash::init(inner_);
    Hash::update(inner_, block.data(), block.size());
    for (uint8_t& b : block) b ^= 0x36 ^ 0x5c;
    Hash::init(outer_);
    Hash::update(outer_, block.data(), block.size());
    OPENSSL_cleanse(block.data(), block.size());
  }
  ~KeyedHmac() {
    OPENSSL_cleanse(&inner_, sizeof(inner_));
    OPENSSL_cleanse(&outer_, sizeof(outer_));
  }
  KeyedHmac(const KeyedHmac&) = delete;
  KeyedHmac& operator=(const KeyedHmac&) = delete;

  // out = HMAC(key, a || b || c); `out` holds Hash::kOutput bytes.
  void mac(std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<const uint8_t> c,
           uint8_t* out) const {
    typename Hash::Context context = inner_;
    for (const auto part : {a, b, c}) {
      if (!part.empty()) Hash::update(context, part.data(), part.size());
    }
    std::array<uint8_t, Hash::kOutput> inner_digest;
    Hash::final(inner_digest.data(), context);
    context = outer_;
    Hash::update(context, inner_digest.data(), inner_digest.size());
    Hash::final(out, context);
    OPENSSL_cleanse(inner_digest.data(), inner_digest.size());
    OPENSSL_cleanse(&context, sizeof(context));
  }

 private:
  typename Hash::Context inner_;
  typename Hash::Context outer_;
};

template <typename Hash>
void extract_with(std::span<const uint8_t> salt, std::span<const uint8_t> ikm,
                  std::span<uint8_t> prk) {
  KeyedHmac<Hash>(salt).mac(ikm, {}, {}, prk.data());
}

// RFC 5869 §2.3: T(i) = HMAC(PRK, T(i-1) || info || i), out = T(1) || T(2)...
template <typename Hash>
bool expand_with(std::span<const uint8_t> prk, std::span<const uint8_t> info,
                 std::span<uint8_t> out) {
  if (out.size() > 255 * Hash::kOutput) return false;
  const KeyedHmac<Hash> hmac(prk);
  std::array<uint8_t, Hash::kOutput> block;
  size_t previous = 0;  // bytes of T(i-1) in `block`
  for (size_t done = 0, i = 1; done < out.size(); ++i) {
    const uint8_t counter = static_cast<uint8_t>(i);
    hmac.mac({block.data(), previous}, info, {&counter, 1}, block.data());
    previous = block.size();
    const size_t n = std::min(block.size(), out.size() - done);
    std::memcpy(out.data() + done, block.data(), n);
    done += n;
  }
  OPENSSL_cleanse(block.data(), block.size());
  return true;
}

constexpr QuicLabels kLabelsV1{"quic key", "quic iv", "quic hp", "quic ku"};
constexpr QuicLabels kLabelsV2{"quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku"};

}  // namespace

bool hkdf_extract(CipherSuite suite, std::span<const uint8_t> salt, std::span<const uint8_t> ikm,
                  std::span<uint8_t> prk) {
  if (prk.size() != hash_length(suite)) return false;
  if (suite == CipherSuite::kAes256Gcm) {
    extract_with<Sha384>(salt, ikm, prk);
  } else {
    extract_with<Sha256>(salt, ikm, prk);
  }
  return true;
}

bool hkdf_expand_label(CipherSuite suite, std::span<const uint8_t> secret, std::string_view label,
                       std::span<const uint8_t> context, std::span<uint8_t> out) {
  const size_t label_vector_length = kTls13LabelPrefix.size() + label.size();
  // The HkdfLabel length field is 16 bits; HKDF itself caps at 255 blocks.
  if (label_vector_length > kMaxLabelVectorLength || context.size() > kMaxContextLength ||
      out.size() > 0xffff) {
    OPENSSL_cleanse(out.data(), out.size());
    return false;
  }
  std::array<uint8_t, kMaxHkdfLabelLength> info;
  size_t length = 0;
  info[length++] = static_cast<uint8_t>(out.size() >> 8);
  info[length++] = static_cast<uint8_t>(out.size());
  info[length++] = static_cast<uint8_t>(label_vector_length);
  std::memcpy(&info[length], kTls13LabelPrefix.data(), kTls13LabelPrefix.size());
  length += kTls13LabelPrefix.size();
  if (!label.empty()) std::memcpy(&info[length], label.data(), label.size());
  length += label.size();
  info[length++] = static_cast<uint8_t>(context.size());
  if (!context.empty()) std::memcpy(&info[length], context.data(), context.size());
  length += context.size();

  const std::span<const uint8_t> info_span(info.data(), length);
  const bool ok = suite == CipherSuite::kAes256Gcm ? expand_with<Sha384>(secret, info_span, out)
                                                   : expand_with<Sha256>(secret, info_span, out);
  if (!ok) {
    OPENSSL_cleanse(out.data(), out.size());
    return false;
  }
  return true;
}

const QuicLabels& quic_labels(uint32_t version) {
  return version == wire::kVersion2 ? kLabelsV2 : kLabelsV1;
}

}  // namespace dpquic::crypto
