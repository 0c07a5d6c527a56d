#pragma once
// Server connection IDs that say which core owns the connection, in the
// plaintext layout of QUIC-LB (draft-ietf-quic-load-balancers, §3 "First CID
// octet" and the CID format):
//
//   First Octet {
//     Config Rotation (3),          // 0..6; 0b111 means "unroutable"
//     CID Len or Random Bits (5),   // length self-description: the length
//   }                               // of the CID after this octet
//   Server ID (0..15 bytes),        // what a QUIC-LB balancer routes on
//   Core ID (8),                    // which core of this server
//   Nonce (32..),                   // random
//
// To a QUIC-LB balancer the core byte is just part of the nonce; the draft
// suggests exactly this kind of in-host demultiplexing behind the server ID.
// The plaintext algorithm links CIDs of one server to each other (not to a
// connection): that is the draft's stated trade-off for this algorithm.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quic/conn/random.h"
#include "quic/wire/connection_id.h"

namespace dpquic::conn {

struct CidLayout {
  static constexpr uint8_t kUnroutableConfigRotation = 7;
  static constexpr size_t kMaxServerIdLength = 15;
  static constexpr size_t kMinNonceLength = 4;
  static constexpr size_t kMinCidLength = 8;

  std::vector<uint8_t> server_id;  // 0..15 bytes
  uint8_t config_rotation = 0;     // 0..6
  size_t cid_length = 16;          // 8..20; at least 1 + server_id + 1 + 4
};

class CidGenerator {
 public:
  // Throws std::invalid_argument for a layout outside the limits above
  // (configuration time only).
  CidGenerator(CidLayout layout, uint8_t core_id, RandomSource& random);

  wire::ConnectionId generate();
  size_t cid_length() const { return layout_.cid_length; }

  // The core a CID of `layout` names. nullopt when the CID cannot be one of
  // ours: wrong length, config rotation, length self-description or server
  // ID (e.g. a client-chosen Initial DCID); the caller then falls back to a
  // hash of the DCID. The caller checks the core is one it runs. A random
  // 16-byte DCID passes all checks with probability about 2^-8 * 2^-8*|sid|.
  static std::optional<uint8_t> core_of(std::span<const uint8_t> cid, const CidLayout& layout);

  // Throws std::invalid_argument when `layout` is invalid (see CidLayout).
  static void validate(const CidLayout& layout);
  // The first octet CIDs of `layout` start with.
  static uint8_t first_octet(const CidLayout& layout);

  const CidLayout& layout() const { return layout_; }
  uint8_t core_id() const { return core_id_; }
  RandomSource& random() { return random_; }

 private:
  CidLayout layout_;
  uint8_t core_id_;
  RandomSource& random_;
};

}  // namespace dpquic::conn
