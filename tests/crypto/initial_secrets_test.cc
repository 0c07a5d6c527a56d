// RFC 9001 Appendix A.1 and RFC 9369 Appendix A.1: Initial secrets and the
// keys derived from them, byte for byte.
#include "crypto/initial_secrets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crypto/hkdf_label.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"
#include "tests/util/hex.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::from_hex;

template <typename Bytes>
std::vector<uint8_t> to_vector(const Bytes& bytes, size_t length) {
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + length);
}

const std::vector<uint8_t> kClientDcid = from_hex("8394c8f03e515708");

struct ExpectedKeys {
  const char* secret;
  const char* key;
  const char* iv;
  const char* hp;
};

void expect_keys(uint32_t version, std::span<const uint8_t> secret, const ExpectedKeys& expected) {
  EXPECT_EQ(to_vector(secret, secret.size()), from_hex(expected.secret));
  KeyMaterial material;
  ASSERT_TRUE(derive_key_material(kInitialCipherSuite, version, secret, material));
  EXPECT_EQ(to_vector(material.key, 16), from_hex(expected.key));
  EXPECT_EQ(to_vector(material.iv, 12), from_hex(expected.iv));
  EXPECT_EQ(to_vector(material.hp, 16), from_hex(expected.hp));
}

TEST(HkdfLabel, ExtractGivesRfcInitialSecrets) {
  // initial_secret = HKDF-Extract(initial_salt, cid) from both appendices.
  std::array<uint8_t, 32> prk;
  ASSERT_TRUE(
      hkdf_extract(CipherSuite::kAes128Gcm, initial_salt(wire::kVersion1), kClientDcid, prk));
  EXPECT_EQ(to_vector(prk, 32),
            from_hex("7db5df06e7a69e432496adedb0085192 3595221596ae2ae9fb8115c1e9ed0a44"));
  ASSERT_TRUE(
      hkdf_extract(CipherSuite::kAes128Gcm, initial_salt(wire::kVersion2), kClientDcid, prk));
  EXPECT_EQ(to_vector(prk, 32),
            from_hex("2062e8b3cd8d52092614b8071d0aa1fb 7c2e3ac193f78b280e72d8f5751f6aba"));
}

TEST(HkdfLabel, RejectsWrongSizes) {
  std::array<uint8_t, 31> short_prk;
  EXPECT_FALSE(hkdf_extract(CipherSuite::kAes128Gcm, {}, kClientDcid, short_prk));
  std::array<uint8_t, 48> prk384;
  EXPECT_TRUE(hkdf_extract(CipherSuite::kAes256Gcm, {}, kClientDcid, prk384));
  std::array<uint8_t, 16> out;
  const std::string long_label(250, 'x');
  EXPECT_FALSE(hkdf_expand_label(CipherSuite::kAes128Gcm, prk384, long_label, {}, out));
  EXPECT_EQ(out, (std::array<uint8_t, 16>{}));
}

TEST(InitialSecrets, Rfc9001A1) {
  InitialSecrets secrets;
  ASSERT_TRUE(derive_initial_secrets(wire::kVersion1, kClientDcid, secrets));
  expect_keys(wire::kVersion1, secrets.client,
              {"c00cf151ca5be075ed0ebfb5c80323c4 2d6b7db67881289af4008f1f6c357aea",
               "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c",
               "9f50449e04a0e810283a1e9933adedd2"});
  expect_keys(wire::kVersion1, secrets.server,
              {"3c199828fd139efd216c155ad844cc81 fb82fa8d7446fa7d78be803acdda951b",
               "cf3a5331653c364c88f0f379b6067e37", "0ac1493ca1905853b0bba03e",
               "c206b8d9b9f0f37644430b490eeaa314"});
}

TEST(InitialSecrets, Rfc9369A1) {
  InitialSecrets secrets;
  ASSERT_TRUE(derive_initial_secrets(wire::kVersion2, kClientDcid, secrets));
  expect_keys(wire::kVersion2, secrets.client,
              {"14ec9d6eb9fd7af83bf5a668bc17a7e2 83766aade7ecd0891f70f9ff7f4bf47b",
               "8b1a0bc121284290a29e0971b5cd045d", "91f73e2351d8fa91660e909f",
               "45b95e15235d6f45a6b19cbcb0294ba9"});
  expect_keys(wire::kVersion2, secrets.server,
              {"0263db1782731bf4588e7e4d93b74639 07cb8cd8200b5da55a8bd488eafc37c1",
               "82db637861d55e1d011f19ea71d5d2a7", "dd13c276499c0249d3310652",
               "edf6d05c83121201b436e16877593c3a"});
}

TEST(InitialSecrets, UnsupportedVersionFails) {
  InitialSecrets secrets;
  EXPECT_FALSE(derive_initial_secrets(0xff00001d, kClientDcid, secrets));
  EXPECT_TRUE(initial_salt(0x0a0a0a0a).empty());
}

// RFC 9001 A.5 / RFC 9369 A.5: ChaCha20 keys and the key-update secret.
TEST(KeyMaterial, ChaCha20SecretsV1AndV2) {
  const std::vector<uint8_t> secret =
      from_hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b");
  for (const auto& [version, key, iv, hp, ku] :
       {std::tuple{wire::kVersion1,
                   "c6d98ff3441c3fe1b2182094f69caa2e d4b716b65488960a7a984979fb23e1c8",
                   "e0459b3474bdd0e44a41c144",
                   "25a282b9e82f06f21f488917a4fc8f1b 73573685608597d0efcb076b0ab7a7a4",
                   "1223504755036d556342ee9361d25342 1a826c9ecdf3c7148684b36b714881f9"},
        std::tuple{wire::kVersion2,
                   "3bfcddd72bcf02541d7fa0dd1f5f9eee a817e09a6963a0e6c7df0f9a1bab90f2",
                   "a6b5bc6ab7dafce30ffff5dd",
                   "d659760d2ba434a226fd37b35c69e2da 8211d10c4f12538787d65645d5d1b8e2",
                   "c69374c49e3d2a9466fa689e49d476db 5d0dfbc87d32ceeaa6343fd0ae4c7d88"}}) {
    KeyMaterial material;
    ASSERT_TRUE(derive_key_material(CipherSuite::kChaCha20Poly1305, version, secret, material));
    EXPECT_EQ(to_vector(material.key, 32), from_hex(key));
    EXPECT_EQ(to_vector(material.iv, 12), from_hex(iv));
    EXPECT_EQ(to_vector(material.hp, 32), from_hex(hp));
    std::array<uint8_t, 32> next;
    ASSERT_TRUE(derive_next_secret(CipherSuite::kChaCha20Poly1305, version, secret, next));
    EXPECT_EQ(to_vector(next, 32), from_hex(ku));
  }
}

TEST(KeyMaterial, NonceIsIvXorPacketNumber) {
  MbManager mb;
  const std::vector<uint8_t> secret =
      from_hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b");
  AeadKey key;
  ASSERT_TRUE(key.derive(mb, CipherSuite::kChaCha20Poly1305, wire::kVersion1, secret));
  AeadNonce nonce;
  key.nonce(654360564, nonce);
  EXPECT_EQ(to_vector(nonce, 12), from_hex("e0459b3474bdd0e46d417eb0"));
  ASSERT_TRUE(key.derive(mb, CipherSuite::kChaCha20Poly1305, wire::kVersion2, secret));
  key.nonce(654360564, nonce);
  EXPECT_EQ(to_vector(nonce, 12), from_hex("a6b5bc6ab7dafce328ff4a29"));
}

TEST(KeyMaterial, WrongSecretLengthFails) {
  KeyMaterial material;
  const std::vector<uint8_t> secret(48, 1);
  EXPECT_FALSE(derive_key_material(CipherSuite::kAes128Gcm, wire::kVersion1, secret, material));
  EXPECT_TRUE(derive_key_material(CipherSuite::kAes256Gcm, wire::kVersion1, secret, material));
}

}  // namespace
}  // namespace dpquic::crypto
