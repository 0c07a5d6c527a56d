#pragma once
// Client Initial packets for the flood tool (RFC 9000 §17.2.2, RFC 9001
// §5): real ones, protected with the Initial keys of their own random
// Destination Connection ID and carrying a real TLS ClientHello, and
// Initial-looking junk.
//
// The ClientHello comes from our TLS client once, at start; each packet gets
// a copy with a fresh client random and its own Source Connection ID in
// initial_source_connection_id (RFC 9000 §7.3), so a server that decrypts
// it sees a consistent handshake and does the full work for it: ECDHE and
// a certificate signature (every copy offers the same key share).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "crypto/connection_keys.h"
#include "crypto/mb_manager.h"
#include "tools/impair/rng.h"

namespace dpquic::flood {

// Every datagram the tool sends has this size: the smallest a server
// accepts for a client Initial (RFC 9000 §14.1).
inline constexpr size_t kDatagramSize = 1200;
inline constexpr size_t kScidLength = 8;

// A ClientHello and where its per-packet fields sit.
struct ClientHelloTemplate {
  std::vector<uint8_t> bytes;  // the TLS handshake message
  size_t random_offset = 0;    // 32-byte client random
  size_t scid_offset = 0;      // kScidLength bytes: initial_source_connection_id
};

// Runs our TLS client to its first flight (ALPN h3, SNI `server_name`).
// Throws std::runtime_error if TLS fails (start-up only).
ClientHelloTemplate make_client_hello_template(const char* server_name);

class InitialBuilder {
 public:
  InitialBuilder(const crypto::MbManager& mb, ClientHelloTemplate hello, uint64_t seed);

  // A protected v1 client Initial with random DCID (8..20 bytes) and SCID
  // (kScidLength bytes) and the ClientHello in a CRYPTO frame, padded to
  // kDatagramSize. Returns its size (kDatagramSize), or 0 if protection
  // failed. `out` holds at least kDatagramSize bytes.
  size_t valid(std::span<uint8_t> out);
  // kDatagramSize bytes that parse as a v1 Initial header (random CIDs, no
  // token, a Length covering the rest) followed by random bytes: no server
  // can open it.
  size_t garbage(std::span<uint8_t> out);

 private:
  const crypto::MbManager& mb_;
  ClientHelloTemplate hello_;
  std::vector<uint8_t> hello_scratch_;
  crypto::ConnectionKeys keys_;
  // Non-cryptographic: the tool only needs connection IDs that do not repeat.
  impair::Rng random_;
};

}  // namespace dpquic::flood
