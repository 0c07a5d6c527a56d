// Fuzzes header parsing, coalesced-datagram splitting and Version Negotiation
// parsing on arbitrary datagrams. The first input byte picks the local
// connection ID length (0..20); the rest is the datagram. Every packet also
// goes through the post-header-protection step as if it were unprotected, and
// whatever parses is re-encoded and must parse back to the same fields.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "quic/wire/coalesced.h"
#include "quic/wire/header.h"
#include "quic/wire/version_negotiation.h"

namespace {

using namespace dpquic::wire;

void check(bool condition) {
  if (!condition) std::abort();
}

bool within(std::span<const uint8_t> inner, std::span<const uint8_t> outer) {
  return inner.empty() || (inner.data() >= outer.data() &&
                           inner.data() + inner.size() <= outer.data() + outer.size());
}

bool equal(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::ranges::equal(a, b);
}

std::array<uint8_t, 70000> g_buffer;

// Re-encodes a packet carrying a packet number from its parsed fields and
// checks that it parses back to the same header and packet number.
void check_reencode(std::span<const uint8_t> packet, const ParsedHeader& header,
                    const PacketNumberFields& pn) {
  if (pn.payload_size > 65000) return;
  ByteWriter writer(g_buffer);
  EncodedHeader encoded;
  if (header.long_header) {
    LongHeaderFields fields;
    fields.version = header.version;
    fields.type = header.type;
    fields.dcid = header.dcid;
    fields.scid = header.scid;
    fields.token = header.token;
    fields.packet_number = pn.truncated_packet_number;
    fields.packet_number_length = pn.packet_number_length;
    fields.length_field_width = 8;
    check(encode_long_header(writer, fields, encoded));
    check(patch_long_header_length(g_buffer, encoded, pn.payload_size));
  } else {
    ShortHeaderFields fields;
    fields.dcid = header.dcid;
    fields.packet_number = pn.truncated_packet_number;
    fields.packet_number_length = pn.packet_number_length;
    fields.spin_bit = pn.spin_bit;
    fields.key_phase = pn.key_phase;
    check(encode_short_header(writer, fields, encoded));
  }
  check(writer.write_bytes(packet.subspan(pn.payload_offset, pn.payload_size)));
  ParsedHeader again;
  check(parse_packet_header(writer.written(), header.dcid.size(), again) == WireError::kOk);
  check(again.type == header.type && again.version == header.version);
  check(equal(again.dcid, header.dcid) && equal(again.scid, header.scid));
  check(equal(again.token, header.token) && again.length == header.length);
  PacketNumberFields pn_again;
  check(decode_packet_number_fields(writer.written(), again, std::nullopt, pn_again) ==
        WireError::kOk);
  check(pn_again.truncated_packet_number == pn.truncated_packet_number);
  check(pn_again.packet_number_length == pn.packet_number_length);
  check(pn_again.payload_size == pn.payload_size);
  check(pn_again.spin_bit == pn.spin_bit && pn_again.key_phase == pn.key_phase);
}

void check_packet(const CoalescedPacket& packet, std::span<const uint8_t> datagram) {
  const ParsedHeader& header = packet.header;
  check(within(packet.bytes, datagram));
  check(packet.bytes.size() == header.packet_size && header.packet_size > 0);
  check(within(header.dcid, packet.bytes) && within(header.scid, packet.bytes));
  check(within(header.token, packet.bytes) && within(header.retry_integrity_tag, packet.bytes));
  if (header.long_header && is_supported_version(header.version)) {
    check(header.dcid.size() <= kMaxConnectionIdLength);
    check(header.scid.size() <= kMaxConnectionIdLength);
  }
  if (header.type == PacketType::kRetry && header.known_version) {
    check(!header.token.empty() && header.retry_integrity_tag.size() == kRetryIntegrityTagLength);
  }
  if (header.type == PacketType::kVersionNegotiation) {
    VersionNegotiationPacket vn;
    if (parse_version_negotiation(packet.bytes, vn) == WireError::kOk) {
      check(!vn.versions.empty() && vn.versions.bytes().size() % 4 == 0);
      check(equal(vn.dcid, header.dcid) && equal(vn.scid, header.scid));
    }
  }
  (void)check_client_initial_dcid(header);
  std::span<const uint8_t> sample;
  if (header_protection_sample(packet.bytes, header, sample) == WireError::kOk) {
    check(sample.size() == kHeaderProtectionSampleSize && within(sample, packet.bytes));
  }
  if (!header.has_packet_number()) return;

  // Treat the bytes as already unprotected.
  PacketNumberFields pn;
  const uint64_t largest = datagram.size() * 1000003ull;
  const WireError error = decode_packet_number_fields(packet.bytes, header, largest, pn);
  if (error != WireError::kOk && error != WireError::kProtocolViolation) {
    check(error == WireError::kDrop);
    return;
  }
  check(pn.packet_number_length >= 1 && pn.packet_number_length <= 4);
  check((pn.packet_number & ((uint64_t{1} << (8 * pn.packet_number_length)) - 1)) ==
        pn.truncated_packet_number);
  check(pn.payload_offset + pn.payload_size == header.packet_size);
  check((error == WireError::kProtocolViolation) == (pn.reserved_bits != 0));
  check_reencode(packet.bytes, header, pn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t local_cid_length = data[0] % (kMaxConnectionIdLength + 1);
  const std::span<const uint8_t> datagram(data + 1, size - 1);

  DatagramSplitter splitter(datagram, local_cid_length);
  CoalescedPacket packet;
  size_t end = 0;
  size_t count = 0;
  while (splitter.next(packet)) {
    check(packet.offset >= end);
    end = packet.offset + packet.bytes.size();
    if (count++ > 0) check(equal(packet.header.dcid, splitter.datagram_dcid()));
    check_packet(packet, datagram);
  }
  check(splitter.remaining() == 0);
  check(splitter.error() == WireError::kOk || splitter.error() == WireError::kDrop);

  VersionNegotiationPacket vn;
  if (parse_version_negotiation(datagram, vn) == WireError::kOk) {
    check(vn.versions.size() >= 1 && within(vn.versions.bytes(), datagram));
    check(4 * vn.versions.size() == vn.versions.bytes().size());
    // Answering it must produce a packet that parses back.
    ByteWriter writer(g_buffer);
    std::array<uint32_t, 2> versions = {kVersion1, kVersion2};
    const size_t written =
        build_version_negotiation(writer, vn.dcid, vn.scid, versions, datagram.size());
    check(written == writer.position() && written > 0);
    VersionNegotiationPacket reply;
    check(parse_version_negotiation(writer.written(), reply) == WireError::kOk);
    check(equal(reply.dcid, vn.scid) && equal(reply.scid, vn.dcid));
    check(reply.versions.size() == 3 && reply.versions.contains(kVersion1));
  }
  return 0;
}
