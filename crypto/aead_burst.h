#pragma once
// AEAD seal and open of QUIC packet payloads (RFC 9001 §5.3) on ipsec-mb's
// job API, one packet or a burst at a time.
//
// A burst submits one job per packet to the per-core manager and then
// flushes it, so ipsec-mb can interleave packets across its lanes. Each
// packet has its own status: a packet that fails to open (or has bad
// arguments) is marked and the others complete normally. Every packet carries
// its own key, so a burst may mix connections, levels and key phases.
//
// Nothing here allocates: per-chunk state (nonces, computed tags) lives in
// fixed arrays of kMaxBurst entries and longer bursts run in chunks.

#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/header_protection.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "crypto/types.h"

namespace dpquic::crypto {

enum class PacketStatus : uint8_t {
  kOk = 0,
  kAuthenticationFailed,  // open: the tag did not verify; output zeroed
  kInvalidArgument,       // missing key, buffer too small, partial overlap
  kEngineError,           // ipsec-mb rejected or failed the job
};

// Seals `plaintext` into `out`: the ciphertext (plaintext.size() bytes)
// followed by the 16-byte tag, with `header` as associated data. In place
// when plaintext.data() == out.data(); out of place otherwise (e.g. stream
// bytes straight from the send buffer into the packet buffer). Any other
// overlap is rejected.
struct SealOp {
  const AeadKey* key = nullptr;
  uint64_t packet_number = 0;
  std::span<const uint8_t> header;
  std::span<const uint8_t> plaintext;
  std::span<uint8_t> out;  // at least plaintext.size() + kAeadTagLength bytes
};

// Opens `ciphertext` (payload followed by its 16-byte tag) into `out`
// (ciphertext.size() - 16 bytes). In place when out.data() ==
// ciphertext.data(). On failure the output is zeroed so unauthenticated
// plaintext never reaches the caller.
struct OpenOp {
  const AeadKey* key = nullptr;
  uint64_t packet_number = 0;
  std::span<const uint8_t> header;
  std::span<const uint8_t> ciphertext;
  std::span<uint8_t> out;
};

PacketStatus seal(const MbManager& mb, const SealOp& op);
PacketStatus open(const MbManager& mb, const OpenOp& op);

// status.size() must be >= ops.size() (otherwise nothing is done and 0 is
// returned). Returns how many packets succeeded.
size_t seal_burst(const MbManager& mb, std::span<const SealOp> ops, std::span<PacketStatus> status);
size_t open_burst(const MbManager& mb, std::span<const OpenOp> ops, std::span<PacketStatus> status);

// One message under an explicit nonce rather than IV XOR packet number: for
// the Retry integrity tag and address-validation tokens. Same buffer rules
// as SealOp/OpenOp.
PacketStatus seal_with_nonce(const MbManager& mb, const AeadKey& key, const AeadNonce& nonce,
                             std::span<const uint8_t> aad, std::span<const uint8_t> plaintext,
                             std::span<uint8_t> out);
PacketStatus open_with_nonce(const MbManager& mb, const AeadKey& key, const AeadNonce& nonce,
                             std::span<const uint8_t> aad, std::span<const uint8_t> ciphertext,
                             std::span<uint8_t> out);

// Protects one whole packet: seals the payload after the header, then
// applies header protection. `packet` is exactly header_length +
// payload.size() + 16 bytes and starts with the unprotected header, whose
// last (packet[0] & 3) + 1 bytes are the packet number. The payload is read
// from `payload`, which may already sit at packet.data() + header_length (in
// place) or anywhere else that does not overlap. The caller pads so the
// header protection sample fits (RFC 9001 §5.4.2).
struct ProtectOp {
  const PacketKeys* keys = nullptr;
  uint64_t packet_number = 0;
  std::span<uint8_t> packet;
  size_t header_length = 0;
  std::span<const uint8_t> payload;
};

PacketStatus protect(const MbManager& mb, const ProtectOp& op);
// Seals the burst, then computes all header protection masks in one pass.
size_t protect_burst(const MbManager& mb, std::span<const ProtectOp> ops,
                     std::span<PacketStatus> status);

}  // namespace dpquic::crypto
