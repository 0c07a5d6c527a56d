#include "crypto/initial_secrets.h"

#include <openssl/mem.h>

#include "crypto/hkdf_label.h"
#include "quic/wire/version.h"

namespace dpquic::crypto {
namespace {

// RFC 9001 §5.2.
constexpr std::array<uint8_t, 20> kInitialSaltV1 = {
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
    0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
};
// RFC 9369 §3.3.1.
constexpr std::array<uint8_t, 20> kInitialSaltV2 = {
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
    0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
};

}  // namespace

InitialSecrets::~InitialSecrets() {
  OPENSSL_cleanse(client.data(), client.size());
  OPENSSL_cleanse(server.data(), server.size());
}

std::span<const uint8_t> initial_salt(uint32_t version) {
  switch (version) {
    case wire::kVersion1: return kInitialSaltV1;
    case wire::kVersion2: return kInitialSaltV2;
    default: return {};
  }
}

bool derive_initial_secrets(uint32_t version, std::span<const uint8_t> client_dcid,
                            InitialSecrets& out) {
  const std::span<const uint8_t> salt = initial_salt(version);
  if (salt.empty()) return false;
  std::array<uint8_t, kInitialSecretLength> initial_secret;
  // The "client in"/"server in" labels are the same in both versions.
  const bool ok =
      hkdf_extract(kInitialCipherSuite, salt, client_dcid, initial_secret) &&
      hkdf_expand_label(kInitialCipherSuite, initial_secret, "client in", {}, out.client) &&
      hkdf_expand_label(kInitialCipherSuite, initial_secret, "server in", {}, out.server);
  OPENSSL_cleanse(initial_secret.data(), initial_secret.size());
  return ok;
}

}  // namespace dpquic::crypto
