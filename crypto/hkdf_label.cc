#include "crypto/hkdf_label.h"

#include <openssl/digest.h>
#include <openssl/hkdf.h>
#include <openssl/mem.h>

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

const EVP_MD* digest_for(CipherSuite suite) {
  return suite == CipherSuite::kAes256Gcm ? EVP_sha384() : EVP_sha256();
}

constexpr QuicLabels kLabelsV1{"quic key", "quic iv", "quic hp", "quic ku"};
constexpr QuicLabels kLabelsV2{"quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku"};

}  // namespace

bool hkdf_extract(CipherSuite suite, std::span<const uint8_t> salt, std::span<const uint8_t> ikm,
                  std::span<uint8_t> prk) {
  if (prk.size() != hash_length(suite)) return false;
  size_t written = 0;
  if (HKDF_extract(prk.data(), &written, digest_for(suite), ikm.data(), ikm.size(), salt.data(),
                   salt.size()) != 1 ||
      written != prk.size()) {
    OPENSSL_cleanse(prk.data(), prk.size());
    return false;
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

  if (HKDF_expand(out.data(), out.size(), digest_for(suite), secret.data(), secret.size(),
                  info.data(), length) != 1) {
    OPENSSL_cleanse(out.data(), out.size());
    return false;
  }
  return true;
}

const QuicLabels& quic_labels(uint32_t version) {
  return version == wire::kVersion2 ? kLabelsV2 : kLabelsV1;
}

}  // namespace dpquic::crypto
