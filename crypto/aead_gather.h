#pragma once
// Gather protection: seals a packet whose payload plaintext comes from
// several places, straight into the packet buffer, then applies header
// protection (RFC 9001 §5.3, §5.4).
//
// The burst builder writes frame headers in place in the packet buffer and
// leaves holes for stream data, which stays in the application's refcounted
// chunks. One segment list per packet says where each run of payload
// plaintext comes from (`in`) and where its ciphertext goes (`out`): in ==
// out for bytes already in the packet, a chunk's bytes for stream data. The
// AEAD reads each chunk once, as it encrypts into the packet: the plaintext
// is never copied into an intermediate buffer. It runs on ipsec-mb's
// scatter-gather job API (IMB_SGL_ALL: the whole message in one job), so a
// burst of packets still interleaves across the library's lanes.

#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/aead_burst.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"

namespace dpquic::crypto {

// One run of payload plaintext. Laid out exactly as ipsec-mb's IMB_SGL_IOV,
// so a packet's segment list is handed to the library as it is.
struct GatherSegment {
  const uint8_t* in;  // plaintext; == out when already in place
  uint8_t* out;       // where its ciphertext goes, inside the packet
  size_t length;
};

// Protects one packet: `packet` is exactly header_length + payload + 16 bytes
// and starts with the unprotected header, whose last (packet[0] & 3) + 1 bytes
// are the packet number. The segments' `out` ranges tile the payload exactly,
// in order, from packet + header_length to the tag; zero-length segments are
// allowed anywhere. An out-of-place segment's `in` must not overlap the
// packet. Anything else is kInvalidArgument, as is a payload too short for the
// header protection sample (RFC 9001 §5.4.2; the caller pads).
struct GatherProtectOp {
  const PacketKeys* keys = nullptr;
  uint64_t packet_number = 0;
  std::span<uint8_t> packet;
  size_t header_length = 0;
  std::span<const GatherSegment> payload;
};

PacketStatus protect_gather(const MbManager& mb, const GatherProtectOp& op);
// Seals the burst, applying header protection to each packet as its seal
// completes. status.size() must be >= ops.size() (otherwise nothing is done
// and 0 is returned). Returns how many packets were protected.
size_t protect_gather_burst(const MbManager& mb, std::span<const GatherProtectOp> ops,
                            std::span<PacketStatus> status);

}  // namespace dpquic::crypto
