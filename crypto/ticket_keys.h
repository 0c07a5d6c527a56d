#pragma once
// TLS session-ticket keys in nginx's ssl_session_ticket_key file formats, so
// that the hosts of a fleet (and nginx next to them) resume each other's
// tickets. A server holds up to kMaxTicketKeys: the first encrypts new
// tickets, every one decrypts, which lets keys rotate without a full
// handshake for every client.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dpquic::crypto {

inline constexpr size_t kMaxTicketKeys = 8;

// One session-ticket key. AES-128 with a 16-byte HMAC key (nginx's 48-byte
// file), or AES-256 with a 32-byte HMAC key (nginx's 80-byte file).
struct TicketKey {
  std::array<uint8_t, 16> name{};
  std::vector<uint8_t> hmac_key;  // 16 or 32 bytes
  std::vector<uint8_t> aes_key;   // 16 (AES-128-CBC) or 32 (AES-256-CBC)
};

// nginx ssl_session_ticket_key formats: 48 bytes = 16 name, 16 AES-128 key,
// 16 HMAC key; 80 bytes = 16 name, 32 HMAC key, 32 AES-256 key. nullopt with
// `error` set otherwise (one line, e.g. "is 47 bytes; expected 48 or 80
// (nginx ssl_session_ticket_key)").
std::optional<TicketKey> parse_ticket_key(std::span<const uint8_t> bytes, std::string& error);

// Reads and parses a file; nullopt with `error` = "PATH: reason" (missing,
// unreadable, wrong size).
std::optional<TicketKey> load_ticket_key_file(const std::string& path, std::string& error);

// A fresh random AES-128 key (48-byte format) for a server without key files.
TicketKey random_ticket_key();

// True if `ticket` was issued under one of `keys`: the ticket layout of
// BoringSSL's ticket-key callback is key name (16 B), IV (16 B), AES-CBC
// ciphertext, then HMAC-SHA256 (32 B) under that key's HMAC key over
// everything before it. Matches the name, then checks the HMAC (constant
// time).
bool ticket_authentic(std::span<const uint8_t> ticket, std::span<const TicketKey> keys);

}  // namespace dpquic::crypto
