// Keys derived from a fleet's shared host secret, and reading the secret file.
#include "crypto/host_keys.h"

#include <gtest/gtest.h>
#include <openssl/digest.h>
#include <openssl/hkdf.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/util/hex.h"
#include "tests/util/temp_dir.h"

namespace dpquic::crypto {
namespace {

using Bytes = std::vector<uint8_t>;
using testing::from_hex;

Bytes secret_of(uint8_t first, size_t length = kMinHostSecretLength) {
  Bytes secret(length);
  for (size_t i = 0; i < length; ++i) secret[i] = static_cast<uint8_t>(first + i);
  return secret;
}

// HKDF-SHA256 with no salt, as extract then expand: the derivation the
// header promises, computed apart from derive_host_keys().
Bytes hkdf_sha256(const Bytes& secret, std::string_view info, size_t length) {
  uint8_t prk[32];
  size_t prk_length = 0;
  EXPECT_EQ(HKDF_extract(prk, &prk_length, EVP_sha256(), secret.data(), secret.size(), nullptr, 0),
            1);
  Bytes out(length);
  EXPECT_EQ(HKDF_expand(out.data(), out.size(), EVP_sha256(), prk, prk_length,
                        reinterpret_cast<const uint8_t*>(info.data()), info.size()),
            1);
  return out;
}

// Secret 000102...1f. Expected values computed independently with Python's
// hmac module (HKDF per RFC 5869, salt = 32 zero bytes, the labels as info).
TEST(HostKeysTest, KnownAnswer) {
  const HostKeys keys = derive_host_keys(secret_of(0));
  EXPECT_EQ(keys.stateless_reset_key,
            from_hex("eda6616c53befaad08db1f8a0ce9e6d9b5b7c5e0694c5d5484a9d95c72a9d642"));
  EXPECT_EQ(keys.address_token_key, from_hex("2956d72e9ab7b1aee5d53f092033c49d"));
}

TEST(HostKeysTest, IsHkdfSha256UnderTheLabels) {
  for (const size_t length : {size_t{32}, size_t{33}, size_t{64}, size_t{4096}}) {
    const Bytes secret = secret_of(0x40, length);
    const HostKeys keys = derive_host_keys(secret);
    EXPECT_EQ(keys.stateless_reset_key, hkdf_sha256(secret, "dpquic host key: stateless reset", 32))
        << length;
    EXPECT_EQ(keys.address_token_key, hkdf_sha256(secret, "dpquic host key: address token", 16))
        << length;
  }
}

TEST(HostKeysTest, SameSecretSameKeysOtherSecretOtherKeys) {
  const HostKeys first = derive_host_keys(secret_of(1));
  const HostKeys again = derive_host_keys(secret_of(1));
  EXPECT_EQ(first.stateless_reset_key, again.stateless_reset_key);
  EXPECT_EQ(first.address_token_key, again.address_token_key);
  ASSERT_EQ(first.stateless_reset_key.size(), 32u);
  ASSERT_EQ(first.address_token_key.size(), 16u);

  Bytes other_secret = secret_of(1);
  other_secret.back() ^= 1;
  const HostKeys other = derive_host_keys(other_secret);
  EXPECT_NE(other.stateless_reset_key, first.stateless_reset_key);
  EXPECT_NE(other.address_token_key, first.address_token_key);
  // A longer secret is another secret, even with the same first 32 bytes.
  const Bytes longer = secret_of(1, 33);
  EXPECT_NE(derive_host_keys(longer).address_token_key, first.address_token_key);
}

TEST(HostKeysTest, KeysDifferFromEachOtherAndFromTheSecret) {
  const Bytes secret = secret_of(7);
  const HostKeys keys = derive_host_keys(secret);
  const Bytes reset_prefix(keys.stateless_reset_key.begin(), keys.stateless_reset_key.begin() + 16);
  EXPECT_NE(reset_prefix, keys.address_token_key);
  EXPECT_NE(keys.stateless_reset_key, secret);
  EXPECT_NE(keys.address_token_key, Bytes(secret.begin(), secret.begin() + 16));
}

TEST(HostKeysTest, ShortSecretThrows) {
  EXPECT_THROW(derive_host_keys(secret_of(0, kMinHostSecretLength - 1)), std::invalid_argument);
  EXPECT_THROW(derive_host_keys(Bytes{}), std::invalid_argument);
  EXPECT_NO_THROW(derive_host_keys(secret_of(0, kMinHostSecretLength)));
}

TEST(HostKeysTest, LoadsSecretFiles) {
  const testing::TempDir dir("host_keys");
  std::string error;

  const Bytes secret = secret_of(0x90);
  dir.write("ok", secret);
  const auto loaded = load_host_secret(dir.path() + "/ok", error);
  ASSERT_TRUE(loaded.has_value()) << error;
  EXPECT_EQ(*loaded, secret);
  dir.write("max", Bytes(4096, 0x5a));
  ASSERT_TRUE(load_host_secret(dir.path() + "/max", error).has_value()) << error;
  EXPECT_EQ(load_host_secret(dir.path() + "/max", error)->size(), 4096u);

  const std::string missing = dir.path() + "/missing";
  EXPECT_FALSE(load_host_secret(missing, error).has_value());
  EXPECT_EQ(error, missing + ": No such file or directory");

  dir.write("short", secret_of(0, 31));
  const std::string short_path = dir.path() + "/short";
  EXPECT_FALSE(load_host_secret(short_path, error).has_value());
  EXPECT_EQ(error.rfind(short_path + ": is 31 bytes", 0), 0u) << error;

  dir.write("empty", Bytes{});
  EXPECT_FALSE(load_host_secret(dir.path() + "/empty", error).has_value());
  EXPECT_EQ(error.rfind(dir.path() + "/empty: is 0 bytes", 0), 0u) << error;

  dir.write("long", Bytes(4097, 0x5a));
  const std::string long_path = dir.path() + "/long";
  EXPECT_FALSE(load_host_secret(long_path, error).has_value());
  EXPECT_EQ(error.rfind(long_path + ": longer than 4096 bytes", 0), 0u) << error;

  // A directory opens but cannot be read.
  EXPECT_FALSE(load_host_secret(dir.path(), error).has_value());
  EXPECT_EQ(error, dir.path() + ": Is a directory");
}

}  // namespace
}  // namespace dpquic::crypto
