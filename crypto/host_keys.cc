#include "crypto/host_keys.h"

#include <openssl/digest.h>
#include <openssl/hkdf.h>
#include <openssl/mem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace dpquic::crypto {

namespace {

// Larger files are not secrets written by `head -c` (a certificate, a key
// file in another format, the wrong path): refused rather than hashed.
constexpr size_t kMaxHostSecretFileLength = 4096;

constexpr std::string_view kStatelessResetLabel = "dpquic host key: stateless reset";
constexpr std::string_view kAddressTokenLabel = "dpquic host key: address token";

std::vector<uint8_t> derive(std::span<const uint8_t> secret, std::string_view label,
                            size_t length) {
  std::vector<uint8_t> key(length);
  if (!HKDF(key.data(), key.size(), EVP_sha256(), secret.data(), secret.size(), nullptr, 0,
            reinterpret_cast<const uint8_t*>(label.data()), label.size())) {
    throw std::runtime_error("host key: HKDF-SHA256 failed");
  }
  return key;
}

}  // namespace

HostKeys derive_host_keys(std::span<const uint8_t> secret) {
  if (secret.size() < kMinHostSecretLength) {
    throw std::invalid_argument("host secret must be at least " +
                                std::to_string(kMinHostSecretLength) + " bytes");
  }
  HostKeys keys;
  keys.stateless_reset_key = derive(secret, kStatelessResetLabel, 32);
  keys.address_token_key = derive(secret, kAddressTokenLabel, 16);
  return keys;
}

std::optional<std::vector<uint8_t>> load_host_secret(const std::string& path, std::string& error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  // One byte more than allowed tells a file that is too long.
  std::vector<uint8_t> secret(kMaxHostSecretFileLength + 1);
  const size_t length = std::fread(secret.data(), 1, secret.size(), file);
  const bool failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  std::optional<std::vector<uint8_t>> result;
  if (failed) {
    error = path + ": " + std::strerror(read_errno);
  } else if (length < kMinHostSecretLength) {
    error = path + ": is " + std::to_string(length) + " bytes; a host secret is at least " +
            std::to_string(kMinHostSecretLength) + " (head -c 32 /dev/urandom > FILE)";
  } else if (length > kMaxHostSecretFileLength) {
    error = path + ": longer than " + std::to_string(kMaxHostSecretFileLength) +
            " bytes; not a host secret";
  } else {
    secret.resize(length);
    result = secret;
  }
  OPENSSL_cleanse(secret.data(), secret.size());
  return result;
}

}  // namespace dpquic::crypto
