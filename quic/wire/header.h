#pragma once
// QUIC packet headers (RFC 9000 §17, RFC 9369 §3.2, invariants of RFC 8999).
//
// Receiving is two steps because header protection (RFC 9001 §5.4) hides the
// low bits of the first byte and the packet number:
//   1. parse_packet_header() reads what is visible on the wire: form, version,
//      connection IDs, token, Length, where the packet number starts and where
//      the packet ends. The first byte's reserved and packet-number-length bits
//      are still masked and are not interpreted.
//   2. decode_packet_number_fields() runs after the caller removed header
//      protection (in place) and yields the packet-number length, the
//      truncated and recovered packet number, spin and key-phase bits.
// Nothing here allocates; every span points into the caller's datagram.
//
// Sending: encode_long_header() / encode_short_header() write a header with
// zero reserved bits; a long header's Length is written as a placeholder of a
// chosen width and patched with patch_long_header_length() once the payload
// size is known.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "quic/wire/connection_id.h"
#include "quic/wire/errors.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/varint.h"
#include "quic/wire/version.h"

namespace dpquic::wire {

// First-byte bits (RFC 9000 §17.2, §17.3.1).
inline constexpr uint8_t kHeaderFormBit = 0x80;
inline constexpr uint8_t kFixedBit = 0x40;
inline constexpr uint8_t kLongTypeMask = 0x30;
inline constexpr uint8_t kLongReservedMask = 0x0c;
inline constexpr uint8_t kShortSpinBit = 0x20;
inline constexpr uint8_t kShortReservedMask = 0x18;
inline constexpr uint8_t kShortKeyPhaseBit = 0x04;
inline constexpr uint8_t kPacketNumberLengthMask = 0x03;

// RFC 8999 §5.1: a version-independent connection ID is at most 255 bytes.
inline constexpr size_t kMaxInvariantConnectionIdLength = 255;
inline constexpr size_t kRetryIntegrityTagLength = 16;
// RFC 9000 §14.1: a client's datagrams carrying Initial packets.
inline constexpr size_t kMinInitialDatagramSize = 1200;
// RFC 9001 §5.4.2: the sample starts 4 bytes after the packet number offset.
inline constexpr size_t kSampleOffsetFromPacketNumber = 4;
inline constexpr size_t kHeaderProtectionSampleSize = 16;

// The long-header type bits (0..3) of `type` in `version`. v1: Initial=0,
// 0-RTT=1, Handshake=2, Retry=3; v2 (RFC 9369 §3.2): Initial=1, 0-RTT=2,
// Handshake=3, Retry=0. Returns empty for unsupported versions and for types
// that have no long-header type bits (1-RTT, Version Negotiation).
std::optional<uint8_t> long_header_type_bits(uint32_t version, PacketType type);
// The inverse of long_header_type_bits(); empty for unsupported versions.
std::optional<PacketType> long_header_packet_type(uint32_t version, uint8_t type_bits);

// What parse_packet_header() sees before header protection is removed.
// Offsets are from the first byte of this packet.
struct ParsedHeader {
  bool long_header = false;
  // True for short headers, v1/v2 long headers and Version Negotiation. False
  // for long headers of any other version: then only first_byte, version, dcid
  // and scid are meaningful (the RFC 8999 invariants) and the packet runs to
  // the end of the datagram; the endpoint may answer with Version Negotiation
  // (RFC 9000 §6.1).
  bool known_version = false;
  // kInitial/kZeroRtt/kHandshake/kRetry, kVersionNegotiation (version 0) or
  // kOneRtt (short header). Meaningless when !known_version.
  PacketType type = PacketType::kOneRtt;
  uint8_t first_byte = 0;  // as received: still protected where protection applies
  uint32_t version = 0;    // 0 for short headers and Version Negotiation
  // Views into the datagram. For supported versions each is at most 20 bytes;
  // for unsupported versions and Version Negotiation up to 255 (RFC 8999).
  std::span<const uint8_t> dcid;
  std::span<const uint8_t> scid;  // empty for short headers
  // Initial: the token (possibly empty). Retry: the Retry Token.
  std::span<const uint8_t> token;
  // Retry only: the 16-byte Retry Integrity Tag (RFC 9001 §5.8).
  std::span<const uint8_t> retry_integrity_tag;
  // Initial/0-RTT/Handshake: the Length field (packet number + payload).
  uint64_t length = 0;
  // Initial/0-RTT/Handshake/1-RTT: offset of the protected packet number.
  size_t packet_number_offset = 0;
  // Bytes this packet occupies in the datagram. Short headers, Retry, Version
  // Negotiation and unsupported versions extend to the end of the datagram.
  size_t packet_size = 0;

  // True for packets carrying a packet number under header protection.
  bool has_packet_number() const {
    return known_version && (type == PacketType::kInitial || type == PacketType::kZeroRtt ||
                             type == PacketType::kHandshake || type == PacketType::kOneRtt);
  }
  ConnectionId destination_connection_id() const { return ConnectionId(dcid); }
  ConnectionId source_connection_id() const { return ConnectionId(scid); }
};

// Parses the header of the packet at the front of `packet` (which runs to the
// end of the datagram). `local_cid_length` is the length of connection IDs
// this endpoint issued, needed to find the end of a short header's DCID.
// Errors: kDrop for anything malformed or truncated, a fixed bit of zero
// (RFC 9000 §17.2; RFC 9287 greasing is not negotiated), a v1/v2 connection
// ID longer than 20 bytes, a Length beyond the datagram, or a Retry without a
// token (RFC 9000 §17.2.5.2).
WireError parse_packet_header(std::span<const uint8_t> packet, size_t local_cid_length,
                              ParsedHeader& out);

// The 16-byte header-protection sample of a packet that has_packet_number()
// (RFC 9001 §5.4.2). kDrop if the packet is too short to contain it.
WireError header_protection_sample(std::span<const uint8_t> packet, const ParsedHeader& header,
                                   std::span<const uint8_t>& sample);

// Fields revealed once header protection is removed.
struct PacketNumberFields {
  size_t packet_number_length = 0;  // 1..4
  uint64_t truncated_packet_number = 0;
  uint64_t packet_number = 0;  // recovered full packet number
  bool spin_bit = false;       // short header only
  bool key_phase = false;      // short header only
  uint8_t reserved_bits = 0;   // as received, in place (mask applied)
  // The AEAD associated data is packet[0, payload_offset); the ciphertext and
  // tag are packet[payload_offset, payload_offset + payload_size).
  size_t payload_offset = 0;
  size_t payload_size = 0;
};

// Step 2: reads the unprotected first byte and packet number from `packet`
// (the same packet as step 1, with header protection removed in place) and
// recovers the full packet number given the largest packet number received
// in the space (empty if none).
// Errors: kDrop if the packet number does not fit in the Length or the packet
// (or cannot be recovered). kProtocolViolation if the reserved bits are not
// zero: `out` is then still filled in completely, because RFC 9000 §17.2 asks
// for the connection error only after packet protection is removed too; the
// caller decrypts first and drops the packet if that fails.
WireError decode_packet_number_fields(std::span<const uint8_t> packet, const ParsedHeader& header,
                                      std::optional<uint64_t> largest_received,
                                      PacketNumberFields& out);

// RFC 9000 §7.2: a server drops a client's first Initial whose DCID is shorter
// than 8 bytes. kDrop or kOk.
WireError check_client_initial_dcid(const ParsedHeader& header);
// RFC 9000 §14.1: a server drops client Initial packets in datagrams whose UDP
// payload is smaller than 1200 bytes. kDrop or kOk.
WireError check_client_initial_datagram_size(size_t datagram_size);
// RFC 9000 §17.2.2: a server's Initial packets carry an empty token; a client
// discards an Initial with a non-zero Token Length (the RFC's other choice is
// PROTOCOL_VIOLATION; dropping needs no decryption first). kDrop or kOk; kOk
// for any other packet type.
WireError check_server_initial_token(const ParsedHeader& header);

// --- Encoding -----------------------------------------------------------------

// A long header carrying a packet number: Initial, 0-RTT or Handshake.
struct LongHeaderFields {
  uint32_t version = kVersion1;
  PacketType type = PacketType::kInitial;
  std::span<const uint8_t> dcid;   // 0..20 bytes
  std::span<const uint8_t> scid;   // 0..20 bytes
  std::span<const uint8_t> token;  // Initial only; must be empty otherwise
  uint64_t packet_number = 0;
  // 1..4 bytes; 0 picks the shortest safe length from largest_acked.
  size_t packet_number_length = 0;
  std::optional<uint64_t> largest_acked;
  // Width of the Length varint placeholder: 1, 2, 4 or 8. Two bytes cover any
  // packet up to 16383 bytes, so the header size does not depend on the payload.
  size_t length_field_width = 2;
};

// Where the header that was written sits, relative to its first byte.
struct EncodedHeader {
  size_t header_size = 0;  // through the packet number; the payload starts here
  size_t packet_number_offset = 0;
  size_t packet_number_length = 0;
  size_t length_offset = 0;  // long headers with a Length field only
  size_t length_width = 0;   // 0 for short headers
};

// Writes the header and packet number (Length left as 0 in length_field_width
// bytes). Returns false, having written nothing, if the fields are invalid
// (unsupported version or type, CID > 20 bytes, token on a non-Initial, bad
// widths, an unencodable packet number) or the writer is too short.
bool encode_long_header(ByteWriter& writer, const LongHeaderFields& fields, EncodedHeader& out);

// Sets the Length of a header written by encode_long_header() to the packet
// number length plus `payload_size` (ciphertext including the AEAD tag).
// `packet` starts at the header's first byte. False if the value does not fit
// the width or the span.
bool patch_long_header_length(std::span<uint8_t> packet, const EncodedHeader& header,
                              size_t payload_size);

struct ShortHeaderFields {
  std::span<const uint8_t> dcid;  // 0..20 bytes
  uint64_t packet_number = 0;
  size_t packet_number_length = 0;  // 1..4; 0 picks from largest_acked
  std::optional<uint64_t> largest_acked;
  bool spin_bit = false;
  bool key_phase = false;
};

// Writes a 1-RTT header and packet number. False (nothing written) on invalid
// fields or lack of room.
bool encode_short_header(ByteWriter& writer, const ShortHeaderFields& fields, EncodedHeader& out);

// Writes a Retry packet without its integrity tag (which is computed over these
// bytes; RFC 9001 §5.8): the caller appends the 16-byte tag. `unused_bits` is
// the low nibble of the first byte, arbitrary per RFC 9000 §17.2.5. False on
// invalid fields (unsupported version, CID > 20, empty token) or lack of room.
bool encode_retry_without_tag(ByteWriter& writer, uint32_t version, std::span<const uint8_t> dcid,
                              std::span<const uint8_t> scid, std::span<const uint8_t> token,
                              uint8_t unused_bits = 0);

}  // namespace dpquic::wire
