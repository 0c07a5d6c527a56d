// HKDF-Extract / HKDF-Expand-Label on the stack-based HMAC: the RFC 5869
// SHA-256 vector, agreement with BoringSSL's own HKDF for both hashes and
// many lengths, and no heap allocation.
#include "crypto/hkdf_label.h"

#include <gtest/gtest.h>
#include <openssl/digest.h>
#include <openssl/hkdf.h>

#include <array>
#include <string>
#include <vector>

#include "tests/util/hex.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::AllocationWindow;

// The HkdfLabel structure of RFC 8446 §7.1, built independently.
std::vector<uint8_t> hkdf_label(size_t length, const std::string& label,
                                const std::vector<uint8_t>& context) {
  const std::string full = "tls13 " + label;
  std::vector<uint8_t> info = {static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length),
                               static_cast<uint8_t>(full.size())};
  info.insert(info.end(), full.begin(), full.end());
  info.push_back(static_cast<uint8_t>(context.size()));
  info.insert(info.end(), context.begin(), context.end());
  return info;
}

TEST(HkdfLabelTest, ExtractMatchesRfc5869TestCase1) {
  const std::vector<uint8_t> ikm(22, 0x0b);
  const auto salt = testing::from_hex("000102030405060708090a0b0c");
  std::array<uint8_t, 32> prk;
  ASSERT_TRUE(hkdf_extract(CipherSuite::kAes128Gcm, salt, ikm, prk));
  EXPECT_EQ(testing::to_hex(prk),
            "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
}

TEST(HkdfLabelTest, ExtractWithLongSaltMatchesBoringSsl) {
  // A salt longer than the hash block is hashed first (RFC 2104 §2).
  const std::vector<uint8_t> salt(200, 0x5a), ikm(48, 0x21);
  for (const CipherSuite suite : {CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm}) {
    const EVP_MD* md = suite == CipherSuite::kAes256Gcm ? EVP_sha384() : EVP_sha256();
    std::vector<uint8_t> ours(hash_length(suite)), theirs(hash_length(suite));
    size_t written = 0;
    ASSERT_EQ(
        HKDF_extract(theirs.data(), &written, md, ikm.data(), ikm.size(), salt.data(), salt.size()),
        1);
    ASSERT_TRUE(hkdf_extract(suite, salt, ikm, ours));
    EXPECT_EQ(ours, theirs);
  }
}

TEST(HkdfLabelTest, ExpandLabelMatchesBoringSslForBothHashesAndManyLengths) {
  const std::vector<uint8_t> context = {1, 2, 3, 4, 5};
  for (const CipherSuite suite : {CipherSuite::kChaCha20Poly1305, CipherSuite::kAes256Gcm}) {
    const EVP_MD* md = suite == CipherSuite::kAes256Gcm ? EVP_sha384() : EVP_sha256();
    std::vector<uint8_t> secret(hash_length(suite));
    for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(i * 7 + 1);
    for (const size_t length : {1u, 12u, 16u, 31u, 32u, 33u, 48u, 49u, 64u, 97u, 200u}) {
      for (const auto& ctx : {std::vector<uint8_t>{}, context}) {
        const auto info = hkdf_label(length, "quic key", ctx);
        std::vector<uint8_t> theirs(length), ours(length);
        ASSERT_EQ(HKDF_expand(theirs.data(), length, md, secret.data(), secret.size(), info.data(),
                              info.size()),
                  1);
        ASSERT_TRUE(hkdf_expand_label(suite, secret, "quic key", ctx, ours));
        EXPECT_EQ(ours, theirs) << "suite " << static_cast<int>(suite) << " length " << length;
      }
    }
  }
}

TEST(HkdfLabelTest, TooLongOutputFailsAndZeroes) {
  std::vector<uint8_t> secret(32, 1), out(255 * 32 + 1, 0xee);
  EXPECT_FALSE(hkdf_expand_label(CipherSuite::kAes128Gcm, secret, "x", {}, out));
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0));
}

TEST(HkdfLabelTest, DerivationsAllocateNothing) {
  std::array<uint8_t, 48> secret{}, prk{};
  std::array<uint8_t, 32> out{};
  const std::array<uint8_t, 8> ikm = {1, 2, 3, 4, 5, 6, 7, 8};
  size_t failures = 0;
  AllocationWindow window;
  for (int i = 0; i < 100; ++i) {
    failures += !hkdf_extract(CipherSuite::kAes128Gcm, ikm, secret, {prk.data(), 32});
    failures += !hkdf_extract(CipherSuite::kAes256Gcm, ikm, secret, prk);
    failures +=
        !hkdf_expand_label(CipherSuite::kAes128Gcm, {secret.data(), 32}, "quic iv", {}, out);
    failures += !hkdf_expand_label(CipherSuite::kAes256Gcm, secret, "quic hp", {}, out);
  }
  EXPECT_EQ(window.count(), 0u);
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace dpquic::crypto
