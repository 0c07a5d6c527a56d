#include "quic/wire/header.h"

#include <algorithm>

#include "quic/hot_path.h"
#include "quic/wire/packet_number.h"

namespace dpquic::wire {

namespace {

// v1 numbers the long-header types Initial=0 .. Retry=3; v2 rotates them by
// one (RFC 9369 §3.2), so v2 bits = (v1 bits + 1) mod 4.
std::optional<uint8_t> v1_type_bits(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return 0;
    case PacketType::kZeroRtt: return 1;
    case PacketType::kHandshake: return 2;
    case PacketType::kRetry: return 3;
    case PacketType::kVersionNegotiation:
    case PacketType::kOneRtt: break;
  }
  return std::nullopt;
}

bool read_connection_id(ByteReader& reader, size_t max_length, std::span<const uint8_t>& out) {
  uint8_t length = 0;
  if (!reader.read_u8(length) || length > max_length) return false;
  return reader.read_bytes(length, out);
}

WireError parse_short_header(std::span<const uint8_t> packet, size_t local_cid_length,
                             ParsedHeader& out) {
  if ((packet[0] & kFixedBit) == 0 || local_cid_length > kMaxConnectionIdLength) {
    return WireError::kDrop;
  }
  ByteReader reader(packet.subspan(1));
  if (!reader.read_bytes(local_cid_length, out.dcid)) return WireError::kDrop;
  out.known_version = true;
  out.type = PacketType::kOneRtt;
  out.packet_number_offset = 1 + local_cid_length;
  out.packet_size = packet.size();
  return WireError::kOk;
}

WireError parse_long_header(std::span<const uint8_t> packet, ParsedHeader& out) {
  ByteReader reader(packet.subspan(1));
  out.long_header = true;
  if (!reader.read_u32(out.version)) return WireError::kDrop;
  const bool supported = is_supported_version(out.version);
  const size_t max_cid = supported ? kMaxConnectionIdLength : kMaxInvariantConnectionIdLength;
  if (!read_connection_id(reader, max_cid, out.dcid) ||
      !read_connection_id(reader, max_cid, out.scid)) {
    return WireError::kDrop;
  }
  // Version Negotiation and unknown versions: only the invariants are known,
  // and the packet's extent is the rest of the datagram.
  out.packet_size = packet.size();
  if (out.version == kVersionNegotiationVersion) {
    out.known_version = true;
    out.type = PacketType::kVersionNegotiation;
    return WireError::kOk;
  }
  if (!supported) return WireError::kOk;
  if ((packet[0] & kFixedBit) == 0) return WireError::kDrop;
  const auto type = long_header_packet_type(out.version, (packet[0] & kLongTypeMask) >> 4);
  if (!type) return WireError::kDrop;
  out.known_version = true;
  out.type = *type;

  if (out.type == PacketType::kRetry) {
    // Token, then the tag up to the end of the datagram; an empty token is
    // invalid (RFC 9000 §17.2.5.2).
    if (reader.remaining() <= kRetryIntegrityTagLength) return WireError::kDrop;
    const bool ok = reader.read_bytes(reader.remaining() - kRetryIntegrityTagLength, out.token) &&
                    reader.read_bytes(kRetryIntegrityTagLength, out.retry_integrity_tag);
    return ok ? WireError::kOk : WireError::kDrop;
  }
  if (out.type == PacketType::kInitial) {
    uint64_t token_length = 0;
    if (!reader.read_varint(token_length) || token_length > reader.remaining() ||
        !reader.read_bytes(static_cast<size_t>(token_length), out.token)) {
      return WireError::kDrop;
    }
  }
  if (!reader.read_varint(out.length) || out.length > reader.remaining()) return WireError::kDrop;
  out.packet_number_offset = 1 + reader.position();
  out.packet_size = out.packet_number_offset + static_cast<size_t>(out.length);
  return WireError::kOk;
}

size_t choose_packet_number_length(uint64_t packet_number, size_t requested,
                                   std::optional<uint64_t> largest_acked) {
  if (packet_number > kMaxPacketNumber) return 0;
  const size_t length =
      requested != 0 ? requested : packet_number_length(packet_number, largest_acked);
  return length >= 1 && length <= 4 ? length : 0;
}

bool valid_width(size_t width) { return width == 1 || width == 2 || width == 4 || width == 8; }

}  // namespace

std::optional<uint8_t> long_header_type_bits(uint32_t version, PacketType type) {
  const auto v1 = v1_type_bits(type);
  if (!v1) return std::nullopt;
  if (version == kVersion1) return v1;
  if (version == kVersion2) return static_cast<uint8_t>((*v1 + 1) & 3);
  return std::nullopt;
}

std::optional<PacketType> long_header_packet_type(uint32_t version, uint8_t type_bits) {
  static constexpr PacketType kV1Order[4] = {PacketType::kInitial, PacketType::kZeroRtt,
                                             PacketType::kHandshake, PacketType::kRetry};
  if (type_bits > 3) return std::nullopt;
  if (version == kVersion1) return kV1Order[type_bits];
  if (version == kVersion2) return kV1Order[(type_bits + 3) & 3];
  return std::nullopt;
}

namespace {

// Every field as ParsedHeader{} has it, assigned one by one: `out =
// ParsedHeader{}` (or a copy of a constant one) compiled to `rep stos`, whose
// start-up cost was most of parsing a short header.
void reset(ParsedHeader& out) {
  static_assert(sizeof(ParsedHeader) == 96, "reset() assigns every field: add the new one");
  out.long_header = false;
  out.known_version = false;
  out.type = PacketType::kOneRtt;
  out.first_byte = 0;
  out.version = 0;
  out.dcid = {};
  out.scid = {};
  out.token = {};
  out.retry_integrity_tag = {};
  out.length = 0;
  out.packet_number_offset = 0;
  out.packet_size = 0;
}

}  // namespace

DPQUIC_HOT WireError parse_packet_header(std::span<const uint8_t> packet, size_t local_cid_length,
                                         ParsedHeader& out) {
  reset(out);
  if (packet.empty()) return WireError::kDrop;
  out.first_byte = packet[0];
  const WireError error = (packet[0] & kHeaderFormBit) != 0
                              ? parse_long_header(packet, out)
                              : parse_short_header(packet, local_cid_length, out);
  if (error != WireError::kOk) reset(out);
  return error;
}

WireError header_protection_sample(std::span<const uint8_t> packet, const ParsedHeader& header,
                                   std::span<const uint8_t>& sample) {
  if (!header.has_packet_number()) return WireError::kDrop;
  const size_t offset = header.packet_number_offset + kSampleOffsetFromPacketNumber;
  const size_t end = std::min(header.packet_size, packet.size());
  if (offset > end || end - offset < kHeaderProtectionSampleSize) return WireError::kDrop;
  sample = packet.subspan(offset, kHeaderProtectionSampleSize);
  return WireError::kOk;
}

DPQUIC_HOT WireError decode_packet_number_fields(std::span<const uint8_t> packet,
                                                 const ParsedHeader& header,
                                                 std::optional<uint64_t> largest_received,
                                                 PacketNumberFields& out) {
  out = PacketNumberFields{};
  if (!header.has_packet_number() || packet.size() < header.packet_size ||
      header.packet_number_offset > header.packet_size) {
    return WireError::kDrop;
  }
  const uint8_t first = packet[0];
  // Header protection masks only the low 4 (long) or 5 (short) bits; the rest
  // must be what step 1 saw, or this is not the same packet.
  const uint8_t visible = header.long_header ? 0xf0 : 0xe0;
  if ((first & visible) != (header.first_byte & visible)) return WireError::kDrop;

  const size_t pn_length = (first & kPacketNumberLengthMask) + 1u;
  const size_t room = header.long_header ? static_cast<size_t>(header.length)
                                         : header.packet_size - header.packet_number_offset;
  if (pn_length > room) return WireError::kDrop;
  ByteReader reader(packet.subspan(header.packet_number_offset));
  uint64_t truncated = 0;
  if (!reader.read_uint(pn_length, truncated)) return WireError::kDrop;
  const auto full = decode_packet_number(largest_received, truncated, pn_length);
  if (!full) return WireError::kDrop;

  out.packet_number_length = pn_length;
  out.truncated_packet_number = truncated;
  out.packet_number = *full;
  if (header.long_header) {
    out.reserved_bits = first & kLongReservedMask;
  } else {
    out.reserved_bits = first & kShortReservedMask;
    out.spin_bit = (first & kShortSpinBit) != 0;
    out.key_phase = (first & kShortKeyPhaseBit) != 0;
  }
  out.payload_offset = header.packet_number_offset + pn_length;
  out.payload_size = header.packet_size - out.payload_offset;
  return out.reserved_bits == 0 ? WireError::kOk : WireError::kProtocolViolation;
}

WireError check_client_initial_dcid(const ParsedHeader& header) {
  return header.dcid.size() < kMinInitialDestinationCidLength ? WireError::kDrop : WireError::kOk;
}

WireError check_client_initial_datagram_size(size_t datagram_size) {
  return datagram_size < kMinInitialDatagramSize ? WireError::kDrop : WireError::kOk;
}

WireError check_server_initial_token(const ParsedHeader& header) {
  const bool initial = header.known_version && header.type == PacketType::kInitial;
  return initial && !header.token.empty() ? WireError::kDrop : WireError::kOk;
}

bool encode_long_header(ByteWriter& writer, const LongHeaderFields& fields, EncodedHeader& out) {
  if (fields.type != PacketType::kInitial && fields.type != PacketType::kZeroRtt &&
      fields.type != PacketType::kHandshake) {
    return false;
  }
  const auto type_bits = long_header_type_bits(fields.version, fields.type);
  const size_t pn_length = choose_packet_number_length(
      fields.packet_number, fields.packet_number_length, fields.largest_acked);
  if (!type_bits || pn_length == 0 || fields.dcid.size() > kMaxConnectionIdLength ||
      fields.scid.size() > kMaxConnectionIdLength || !valid_width(fields.length_field_width) ||
      (fields.type != PacketType::kInitial && !fields.token.empty())) {
    return false;
  }
  size_t size = 1 + 4 + 1 + fields.dcid.size() + 1 + fields.scid.size();
  if (fields.type == PacketType::kInitial) {
    const size_t token_length_size = varint_length(fields.token.size());
    if (token_length_size == 0) return false;
    size += token_length_size + fields.token.size();
  }
  const size_t length_offset = size;
  size += fields.length_field_width + pn_length;
  if (writer.remaining() < size) return false;

  const uint8_t first =
      kHeaderFormBit | kFixedBit | static_cast<uint8_t>(*type_bits << 4) | (pn_length - 1);
  // Room was checked above, so none of these writes can fail.
  bool ok = writer.write_u8(first) && writer.write_u32(fields.version) &&
            writer.write_u8(static_cast<uint8_t>(fields.dcid.size())) &&
            writer.write_bytes(fields.dcid) &&
            writer.write_u8(static_cast<uint8_t>(fields.scid.size())) &&
            writer.write_bytes(fields.scid);
  if (fields.type == PacketType::kInitial) {
    ok = ok && writer.write_varint(fields.token.size()) && writer.write_bytes(fields.token);
  }
  ok = ok && writer.write_varint_fixed(0, fields.length_field_width) &&
       writer.write_uint(fields.packet_number, pn_length);
  if (!ok) return false;
  out.header_size = size;
  out.packet_number_offset = size - pn_length;
  out.packet_number_length = pn_length;
  out.length_offset = length_offset;
  out.length_width = fields.length_field_width;
  return true;
}

bool patch_long_header_length(std::span<uint8_t> packet, const EncodedHeader& header,
                              size_t payload_size) {
  if (header.length_width == 0 || packet.size() < header.length_offset) return false;
  return varint_encode_fixed(packet.subspan(header.length_offset),
                             header.packet_number_length + uint64_t{payload_size},
                             header.length_width);
}

bool encode_short_header(ByteWriter& writer, const ShortHeaderFields& fields, EncodedHeader& out) {
  const size_t pn_length = choose_packet_number_length(
      fields.packet_number, fields.packet_number_length, fields.largest_acked);
  if (pn_length == 0 || fields.dcid.size() > kMaxConnectionIdLength) return false;
  const size_t size = 1 + fields.dcid.size() + pn_length;
  if (writer.remaining() < size) return false;
  uint8_t first = kFixedBit | static_cast<uint8_t>(pn_length - 1);
  if (fields.spin_bit) first |= kShortSpinBit;
  if (fields.key_phase) first |= kShortKeyPhaseBit;
  if (!writer.write_u8(first) || !writer.write_bytes(fields.dcid) ||
      !writer.write_uint(fields.packet_number, pn_length)) {
    return false;
  }
  out = EncodedHeader{};
  out.header_size = size;
  out.packet_number_offset = size - pn_length;
  out.packet_number_length = pn_length;
  return true;
}

bool encode_retry_without_tag(ByteWriter& writer, uint32_t version, std::span<const uint8_t> dcid,
                              std::span<const uint8_t> scid, std::span<const uint8_t> token,
                              uint8_t unused_bits) {
  const auto type_bits = long_header_type_bits(version, PacketType::kRetry);
  if (!type_bits || dcid.size() > kMaxConnectionIdLength || scid.size() > kMaxConnectionIdLength ||
      token.empty()) {
    return false;
  }
  if (writer.remaining() < 1 + 4 + 1 + dcid.size() + 1 + scid.size() + token.size()) return false;
  const uint8_t first =
      kHeaderFormBit | kFixedBit | static_cast<uint8_t>(*type_bits << 4) | (unused_bits & 0x0f);
  return writer.write_u8(first) && writer.write_u32(version) &&
         writer.write_u8(static_cast<uint8_t>(dcid.size())) && writer.write_bytes(dcid) &&
         writer.write_u8(static_cast<uint8_t>(scid.size())) && writer.write_bytes(scid) &&
         writer.write_bytes(token);
}

}  // namespace dpquic::wire
