#include "crypto/ticket_keys.h"

#include <fcntl.h>
#include <openssl/digest.h>
#include <openssl/hmac.h>
#include <openssl/mem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dpquic::crypto {
namespace {

constexpr size_t kNameLength = 16;
constexpr size_t kIvLength = 16;
constexpr size_t kMacLength = SHA256_DIGEST_LENGTH;
constexpr size_t kShortFileLength = 48;
constexpr size_t kLongFileLength = 80;

std::string size_error(uint64_t size) {
  return "is " + std::to_string(size) + " bytes; expected " + std::to_string(kShortFileLength) +
         " or " + std::to_string(kLongFileLength) + " (nginx ssl_session_ticket_key)";
}

std::vector<uint8_t> slice(std::span<const uint8_t> bytes, size_t offset, size_t length) {
  std::span<const uint8_t> part = bytes.subspan(offset, length);
  return {part.begin(), part.end()};
}

// The whole file at `fd`, if it is a regular file of one of the two sizes.
// Otherwise nullopt with `error` set to the reason (without the path).
std::optional<std::vector<uint8_t>> read_key_file(int fd, std::string& error) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(status.st_mode)) {
    error = "not a regular file";
    return std::nullopt;
  }
  const auto size = static_cast<uint64_t>(status.st_size);
  if (size != kShortFileLength && size != kLongFileLength) {
    error = size_error(size);
    return std::nullopt;
  }
  std::vector<uint8_t> bytes(size);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0
                  ? std::string("cannot read: ") + std::strerror(errno)
                  : "read only " + std::to_string(done) + " of " + std::to_string(size) + " bytes";
      OPENSSL_cleanse(bytes.data(), bytes.size());
      return std::nullopt;
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace

std::optional<TicketKey> parse_ticket_key(std::span<const uint8_t> bytes, std::string& error) {
  TicketKey key;
  if (bytes.size() == kShortFileLength) {
    key.aes_key = slice(bytes, kNameLength, 16);
    key.hmac_key = slice(bytes, kNameLength + 16, 16);
  } else if (bytes.size() == kLongFileLength) {
    key.hmac_key = slice(bytes, kNameLength, 32);
    key.aes_key = slice(bytes, kNameLength + 32, 32);
  } else {
    error = size_error(bytes.size());
    return std::nullopt;
  }
  std::memcpy(key.name.data(), bytes.data(), kNameLength);
  return key;
}

std::optional<TicketKey> load_ticket_key_file(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  std::string reason;
  std::optional<std::vector<uint8_t>> bytes = read_key_file(fd, reason);
  ::close(fd);
  std::optional<TicketKey> key;
  if (bytes.has_value()) {
    key = parse_ticket_key(*bytes, reason);
    OPENSSL_cleanse(bytes->data(), bytes->size());
  }
  if (!key.has_value()) error = path + ": " + reason;
  return key;
}

TicketKey random_ticket_key() {
  TicketKey key;
  key.hmac_key.resize(16);
  key.aes_key.resize(16);
  RAND_bytes(key.name.data(), key.name.size());
  RAND_bytes(key.hmac_key.data(), key.hmac_key.size());
  RAND_bytes(key.aes_key.data(), key.aes_key.size());
  return key;
}

bool ticket_authentic(std::span<const uint8_t> ticket, std::span<const TicketKey> keys) {
  if (ticket.size() <= kNameLength + kIvLength + kMacLength) return false;
  const size_t covered = ticket.size() - kMacLength;
  for (const TicketKey& key : keys) {
    if (CRYPTO_memcmp(ticket.data(), key.name.data(), kNameLength) != 0) continue;
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned mac_length = 0;
    if (HMAC(EVP_sha256(), key.hmac_key.data(), key.hmac_key.size(), ticket.data(), covered, mac,
             &mac_length) == nullptr ||
        mac_length != kMacLength) {
      return false;
    }
    // The callback decrypts under the first key of that name only.
    return CRYPTO_memcmp(mac, ticket.data() + covered, kMacLength) == 0;
  }
  return false;
}

}  // namespace dpquic::crypto
