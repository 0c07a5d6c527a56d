#pragma once
// Keys shared by the hosts of a fleet, derived from one secret file.
//
// Every host given the same secret derives the same stateless reset key and
// address-token key: a stateless reset sent by any host ends a connection
// another host served (RFC 9000 §10.3), and a NEW_TOKEN token one host issued
// validates the client's address at another behind the same load balancer
// (RFC 9000 §8.1.3).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dpquic::crypto {

inline constexpr size_t kMinHostSecretLength = 32;
inline constexpr size_t kMaxHostSecrets = 4;

// The keys one host secret yields. Every host of a fleet given the same secret file derives
// the same keys, so each accepts the others' tokens and recognises their stateless resets.
struct HostKeys {
  std::vector<uint8_t> stateless_reset_key;  // 32 bytes
  std::vector<uint8_t> address_token_key;    // 16 bytes (AES-128-GCM)
};

// HKDF-SHA256 (BoringSSL's HKDF(), no salt) of `secret` under distinct info labels
// "dpquic host key: stateless reset" and "dpquic host key: address token".
// `secret` must be at least kMinHostSecretLength bytes (std::invalid_argument otherwise).
HostKeys derive_host_keys(std::span<const uint8_t> secret);

// Reads a secret file (`head -c 32 /dev/urandom > FILE`); nullopt with `error` =
// "PATH: reason" when missing, unreadable, shorter than 32 bytes, or longer than 4096.
std::optional<std::vector<uint8_t>> load_host_secret(const std::string& path, std::string& error);

}  // namespace dpquic::crypto
