#include "quic/wire/header.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>
#include <vector>

#include "quic/wire/packet_number.h"
#include "tests/util/hex.h"

namespace dpquic::wire {
namespace {

using ::dpquic::testing::from_hex;

using Bytes = std::vector<uint8_t>;

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

bool same(std::span<const uint8_t> a, const Bytes& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

const Bytes kClientDcid = from_hex("8394c8f03e515708");
const Bytes kServerScid = from_hex("f067a5502a4262b5");

// RFC 9001 A.2: the CRYPTO frame, PADDING up to a 1162-byte payload, and the
// AEAD tag (the last 16 bytes of the protected packet).
Bytes client_initial_body() {
  Bytes body = from_hex(
      "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
      "04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578"
      "616d706c652e636f6dff01000100000a 00080006001d00170018001000070005"
      "04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba"
      "baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400"
      "0d0010000e0403050306030203080408 050806002d00020101001c0002400100"
      "3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000"
      "75300901100f088394c8f03e51570806 048000ffff");
  body.resize(1162, 0x00);
  const Bytes tag = from_hex("e221af44860018ab0856972e194cd934");
  body.insert(body.end(), tag.begin(), tag.end());
  return body;
}

// RFC 9001 A.3: ACK + CRYPTO payload (99 bytes) and the AEAD tag (the last
// 16 bytes of the protected packet).
Bytes server_initial_body() {
  return from_hex(
      "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
      "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
      "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
      "020304 3d20398c276456cbc42158407dd074ee");
}

const Bytes kV1ClientHeader = from_hex("c300000001088394c8f03e5157080000449e00000002");
const Bytes kV2ClientHeader = from_hex("d36b3343cf088394c8f03e5157080000449e00000002");
const Bytes kV1ServerHeader = from_hex("c1000000010008f067a5502a4262b50040750001");
const Bytes kV2ServerHeader = from_hex("d16b3343cf0008f067a5502a4262b50040750001");
const Bytes kV1Retry =
    from_hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba");
// RFC 9369 A.4.
const Bytes kV2Retry =
    from_hex("cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6");

void expect_client_initial(uint32_t version, const Bytes& header_bytes) {
  const Bytes packet = concat({header_bytes, client_initial_body()});
  ASSERT_EQ(packet.size(), 1200u);
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  EXPECT_TRUE(header.long_header);
  EXPECT_TRUE(header.known_version);
  EXPECT_EQ(header.type, PacketType::kInitial);
  EXPECT_EQ(header.version, version);
  EXPECT_TRUE(same(header.dcid, kClientDcid));
  EXPECT_TRUE(header.scid.empty());
  EXPECT_TRUE(header.token.empty());
  EXPECT_EQ(header.length, 1182u);
  EXPECT_EQ(header.packet_number_offset, 18u);
  EXPECT_EQ(header.packet_size, 1200u);
  EXPECT_EQ(header.destination_connection_id(), ConnectionId(kClientDcid));
  EXPECT_EQ(check_client_initial_dcid(header), WireError::kOk);
  EXPECT_EQ(check_client_initial_datagram_size(packet.size()), WireError::kOk);

  std::span<const uint8_t> sample;
  ASSERT_EQ(header_protection_sample(packet, header, sample), WireError::kOk);
  EXPECT_EQ(sample.data(), packet.data() + 22);
  EXPECT_EQ(sample.size(), 16u);

  PacketNumberFields fields;
  ASSERT_EQ(decode_packet_number_fields(packet, header, std::nullopt, fields), WireError::kOk);
  EXPECT_EQ(fields.packet_number_length, 4u);
  EXPECT_EQ(fields.truncated_packet_number, 2u);
  EXPECT_EQ(fields.packet_number, 2u);
  EXPECT_EQ(fields.reserved_bits, 0);
  EXPECT_EQ(fields.payload_offset, 22u);
  EXPECT_EQ(fields.payload_size, 1178u);
}

void expect_server_initial(uint32_t version, const Bytes& header_bytes) {
  const Bytes packet = concat({header_bytes, server_initial_body()});
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  EXPECT_EQ(header.type, PacketType::kInitial);
  EXPECT_EQ(header.version, version);
  EXPECT_TRUE(header.dcid.empty());
  EXPECT_TRUE(same(header.scid, kServerScid));
  EXPECT_TRUE(header.token.empty());
  EXPECT_EQ(header.length, 0x75u);
  EXPECT_EQ(header.packet_number_offset, 18u);
  EXPECT_EQ(header.packet_size, packet.size());
  EXPECT_EQ(packet.size(), 18u + 0x75u);

  PacketNumberFields fields;
  ASSERT_EQ(decode_packet_number_fields(packet, header, std::nullopt, fields), WireError::kOk);
  EXPECT_EQ(fields.packet_number_length, 2u);
  EXPECT_EQ(fields.packet_number, 1u);
  EXPECT_EQ(fields.payload_offset, 20u);
  EXPECT_EQ(fields.payload_size, 115u);
}

void expect_retry(uint32_t version, const Bytes& packet, const Bytes& tag) {
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  EXPECT_EQ(header.type, PacketType::kRetry);
  EXPECT_EQ(header.version, version);
  EXPECT_TRUE(header.dcid.empty());
  EXPECT_TRUE(same(header.scid, kServerScid));
  EXPECT_TRUE(same(header.token, from_hex("746f6b656e")));  // "token"
  EXPECT_TRUE(same(header.retry_integrity_tag, tag));
  EXPECT_EQ(header.packet_size, packet.size());
  EXPECT_FALSE(header.has_packet_number());

  // Encoding the same fields reproduces the packet byte for byte.
  std::array<uint8_t, 64> buffer{};
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_retry_without_tag(writer, version, {}, kServerScid, from_hex("746f6b656e"),
                                       packet[0] & 0x0f));
  ASSERT_TRUE(writer.write_bytes(tag));
  EXPECT_TRUE(same(writer.written(), packet));
}

TEST(ConnectionIdTest, MatchesExactlyItsBytes) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 4};
  const ConnectionId id(bytes);
  EXPECT_TRUE(id.matches(bytes));
  EXPECT_FALSE(id.matches(std::span(bytes).first(3)));  // a prefix
  EXPECT_FALSE(id.matches(std::vector<uint8_t>{1, 2, 3, 5}));
  EXPECT_FALSE(id.matches(std::vector<uint8_t>{1, 2, 3, 4, 0}));
  EXPECT_TRUE(ConnectionId().matches({}));
  EXPECT_FALSE(ConnectionId().matches(bytes));
}

TEST(HeaderTest, Rfc9001ClientInitialUnprotected) {
  expect_client_initial(kVersion1, kV1ClientHeader);
}
TEST(HeaderTest, Rfc9369ClientInitialUnprotected) {
  expect_client_initial(kVersion2, kV2ClientHeader);
}
TEST(HeaderTest, Rfc9001ServerInitialUnprotected) {
  expect_server_initial(kVersion1, kV1ServerHeader);
}
TEST(HeaderTest, Rfc9369ServerInitialUnprotected) {
  expect_server_initial(kVersion2, kV2ServerHeader);
}
TEST(HeaderTest, Rfc9001Retry) {
  expect_retry(kVersion1, kV1Retry, from_hex("04a265ba2eff4d829058fb3f0f2496ba"));
}
TEST(HeaderTest, Rfc9369Retry) {
  expect_retry(kVersion2, kV2Retry, from_hex("c8646ce8bfe33952d955543665dcc7b6"));
}

// Step 1 works on the protected bytes: the RFC 9001 A.2 protected header.
TEST(HeaderTest, FieldsReadableBeforeHeaderProtectionRemoval) {
  const Bytes packet =
      concat({from_hex("c000000001088394c8f03e5157080000449e7b9aec34"), client_initial_body()});
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  EXPECT_EQ(header.first_byte, 0xc0);
  EXPECT_EQ(header.type, PacketType::kInitial);
  EXPECT_EQ(header.length, 1182u);
  EXPECT_EQ(header.packet_number_offset, 18u);
  EXPECT_TRUE(same(header.dcid, kClientDcid));
}

// Encoding the A.2 and A.3 header fields gives the RFC's unprotected bytes.
TEST(HeaderTest, EncodesRfcInitialHeaders) {
  for (const uint32_t version : {kVersion1, kVersion2}) {
    std::array<uint8_t, 64> buffer{};
    ByteWriter writer(buffer);
    LongHeaderFields fields;
    fields.version = version;
    fields.dcid = kClientDcid;
    fields.packet_number = 2;
    fields.packet_number_length = 4;
    EncodedHeader encoded;
    ASSERT_TRUE(encode_long_header(writer, fields, encoded));
    EXPECT_EQ(encoded.header_size, 22u);
    EXPECT_EQ(encoded.packet_number_offset, 18u);
    EXPECT_EQ(encoded.length_offset, 16u);
    ASSERT_TRUE(patch_long_header_length(buffer, encoded, 1162 + 16));
    EXPECT_TRUE(same(writer.written(), version == kVersion1 ? kV1ClientHeader : kV2ClientHeader));

    ByteWriter server_writer(buffer);
    LongHeaderFields server;
    server.version = version;
    server.scid = kServerScid;
    server.packet_number = 1;
    server.packet_number_length = 2;
    ASSERT_TRUE(encode_long_header(server_writer, server, encoded));
    ASSERT_TRUE(patch_long_header_length(buffer, encoded, 99 + 16));
    EXPECT_TRUE(
        same(server_writer.written(), version == kVersion1 ? kV1ServerHeader : kV2ServerHeader));
  }
}

TEST(HeaderTest, LongHeaderRoundTrip) {
  const Bytes token = from_hex("0102030405060708090a");
  const Bytes scid = from_hex("aabbcc");
  for (const uint32_t version : {kVersion1, kVersion2}) {
    for (const PacketType type :
         {PacketType::kInitial, PacketType::kZeroRtt, PacketType::kHandshake}) {
      for (size_t pn_length = 1; pn_length <= 4; ++pn_length) {
        for (const size_t width : {1u, 2u, 4u, 8u}) {
          std::array<uint8_t, 128> buffer{};
          ByteWriter writer(buffer);
          LongHeaderFields fields;
          fields.version = version;
          fields.type = type;
          fields.dcid = kClientDcid;
          fields.scid = scid;
          if (type == PacketType::kInitial) fields.token = token;
          fields.packet_number = 0x12345678 & ((uint64_t{1} << (8 * pn_length)) - 1);
          fields.packet_number_length = pn_length;
          fields.length_field_width = width;
          EncodedHeader encoded;
          ASSERT_TRUE(encode_long_header(writer, fields, encoded));
          ASSERT_TRUE(writer.fill(0x5a, 40));
          ASSERT_TRUE(patch_long_header_length(buffer, encoded, 40));
          const std::span<const uint8_t> packet = writer.written();

          ParsedHeader header;
          ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
          EXPECT_EQ(header.version, version);
          EXPECT_EQ(header.type, type);
          EXPECT_TRUE(same(header.dcid, kClientDcid));
          EXPECT_TRUE(same(header.scid, scid));
          EXPECT_TRUE(same(header.token, type == PacketType::kInitial ? token : Bytes{}));
          EXPECT_EQ(header.length, pn_length + 40);
          EXPECT_EQ(header.packet_number_offset, encoded.packet_number_offset);
          EXPECT_EQ(header.packet_size, packet.size());
          PacketNumberFields pn;
          ASSERT_EQ(decode_packet_number_fields(packet, header, std::nullopt, pn), WireError::kOk);
          EXPECT_EQ(pn.packet_number_length, pn_length);
          EXPECT_EQ(pn.packet_number, fields.packet_number);
          EXPECT_EQ(pn.payload_offset, encoded.header_size);
          EXPECT_EQ(pn.payload_size, 40u);
        }
      }
    }
  }
}

// RFC 9001 A.5: unprotected short header 4200bff4, packet number 654360564.
TEST(HeaderTest, Rfc9001ShortHeader) {
  const Bytes packet = from_hex("4200bff4 655e5cd55c41f69080575d7999c25a5bfb");
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  EXPECT_FALSE(header.long_header);
  EXPECT_EQ(header.type, PacketType::kOneRtt);
  EXPECT_TRUE(header.dcid.empty());
  EXPECT_EQ(header.packet_number_offset, 1u);
  EXPECT_EQ(header.packet_size, 21u);
  std::span<const uint8_t> sample;
  ASSERT_EQ(header_protection_sample(packet, header, sample), WireError::kOk);
  EXPECT_TRUE(same(sample, from_hex("5e5cd55c41f69080575d7999c25a5bfb")));

  PacketNumberFields fields;
  ASSERT_EQ(decode_packet_number_fields(packet, header, 654360563, fields), WireError::kOk);
  EXPECT_EQ(fields.packet_number_length, 3u);
  EXPECT_EQ(fields.truncated_packet_number, 49140u);
  EXPECT_EQ(fields.packet_number, 654360564u);
  EXPECT_FALSE(fields.spin_bit);
  EXPECT_FALSE(fields.key_phase);
  EXPECT_EQ(fields.payload_offset, 4u);
  EXPECT_EQ(fields.payload_size, 17u);

  std::array<uint8_t, 8> buffer{};
  ByteWriter writer(buffer);
  ShortHeaderFields out;
  out.packet_number = 654360564;
  out.packet_number_length = 3;
  EncodedHeader encoded;
  ASSERT_TRUE(encode_short_header(writer, out, encoded));
  EXPECT_TRUE(same(writer.written(), from_hex("4200bff4")));
  EXPECT_EQ(encoded.header_size, 4u);
  EXPECT_EQ(encoded.length_width, 0u);
}

TEST(HeaderTest, ShortHeaderSpinAndKeyPhase) {
  for (const bool spin : {false, true}) {
    for (const bool key_phase : {false, true}) {
      std::array<uint8_t, 64> buffer{};
      ByteWriter writer(buffer);
      ShortHeaderFields fields;
      fields.dcid = kClientDcid;
      fields.packet_number = 1000;
      fields.largest_acked = 990;  // picks a 1-byte packet number
      fields.spin_bit = spin;
      fields.key_phase = key_phase;
      EncodedHeader encoded;
      ASSERT_TRUE(encode_short_header(writer, fields, encoded));
      EXPECT_EQ(encoded.packet_number_length, 1u);
      EXPECT_EQ(buffer[0], 0x40 | (spin ? 0x20 : 0) | (key_phase ? 0x04 : 0));
      ASSERT_TRUE(writer.fill(0, 20));
      ParsedHeader header;
      ASSERT_EQ(parse_packet_header(writer.written(), 8, header), WireError::kOk);
      EXPECT_TRUE(same(header.dcid, kClientDcid));
      EXPECT_EQ(header.packet_number_offset, 9u);
      PacketNumberFields pn;
      ASSERT_EQ(decode_packet_number_fields(writer.written(), header, 999, pn), WireError::kOk);
      EXPECT_EQ(pn.spin_bit, spin);
      EXPECT_EQ(pn.key_phase, key_phase);
      EXPECT_EQ(pn.packet_number, 1000u);
    }
  }
}

TEST(HeaderTest, TypeBitsDifferBetweenV1AndV2) {
  const PacketType types[] = {PacketType::kInitial, PacketType::kZeroRtt, PacketType::kHandshake,
                              PacketType::kRetry};
  const uint8_t v1_bits[] = {0, 1, 2, 3};
  const uint8_t v2_bits[] = {1, 2, 3, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(long_header_type_bits(kVersion1, types[i]), v1_bits[i]);
    EXPECT_EQ(long_header_type_bits(kVersion2, types[i]), v2_bits[i]);
    EXPECT_EQ(long_header_packet_type(kVersion1, v1_bits[i]), types[i]);
    EXPECT_EQ(long_header_packet_type(kVersion2, v2_bits[i]), types[i]);
  }
  EXPECT_FALSE(long_header_type_bits(0x1a2a3a4a, PacketType::kInitial));
  EXPECT_FALSE(long_header_type_bits(kVersion1, PacketType::kOneRtt));
  EXPECT_FALSE(long_header_packet_type(0x1a2a3a4a, 0));
  EXPECT_FALSE(long_header_packet_type(kVersion1, 4));

  // The same first byte 0xe3 (type bits 0b10) is Handshake in v1, 0-RTT in v2.
  for (const auto& [version, expected] :
       {std::pair{kVersion1, PacketType::kHandshake}, std::pair{kVersion2, PacketType::kZeroRtt}}) {
    Bytes packet = from_hex("e3 00000000 00 00 05 00000000 00");
    packet[1] = static_cast<uint8_t>(version >> 24);
    packet[2] = static_cast<uint8_t>(version >> 16);
    packet[3] = static_cast<uint8_t>(version >> 8);
    packet[4] = static_cast<uint8_t>(version);
    ParsedHeader header;
    ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
    EXPECT_EQ(header.type, expected);
    EXPECT_EQ(header.length, 5u);
  }
}

// Every proper prefix of a packet with a Length field is dropped, and the
// output is left empty.
TEST(HeaderTest, TruncationAtEveryOffsetDrops) {
  for (const Bytes& packet : {concat({kV1ClientHeader, client_initial_body()}),
                              concat({kV2ServerHeader, server_initial_body()})}) {
    for (size_t n = 0; n < packet.size(); ++n) {
      ParsedHeader header;
      header.packet_size = 99;
      EXPECT_EQ(parse_packet_header(std::span(packet).first(n), 0, header), WireError::kDrop) << n;
      EXPECT_EQ(header.packet_size, 0u);
      EXPECT_TRUE(header.dcid.empty());
    }
  }
  // A Retry needs its whole header, a non-empty token and the 16-byte tag.
  for (const Bytes& retry : {kV1Retry, kV2Retry}) {
    for (size_t n = 0; n <= 15 + 16; ++n) {
      ParsedHeader header;
      EXPECT_EQ(parse_packet_header(std::span(retry).first(n), 0, header), WireError::kDrop) << n;
    }
  }
  // A short header needs its DCID in step 1 and the packet number in step 2.
  const Bytes short_packet = from_hex("43 0102030405060708 0000bff4 01");
  for (size_t n = 0; n < short_packet.size(); ++n) {
    const auto prefix = std::span(short_packet).first(n);
    ParsedHeader header;
    const WireError error = parse_packet_header(prefix, 8, header);
    if (n < 9) {
      EXPECT_EQ(error, WireError::kDrop) << n;
      continue;
    }
    ASSERT_EQ(error, WireError::kOk) << n;
    PacketNumberFields pn;
    EXPECT_EQ(decode_packet_number_fields(prefix, header, std::nullopt, pn),
              n < 13 ? WireError::kDrop : WireError::kOk)
        << n;
    std::span<const uint8_t> sample;
    EXPECT_EQ(header_protection_sample(prefix, header, sample), WireError::kDrop);
  }
}

TEST(HeaderTest, NonZeroReservedBitsAreProtocolViolationAfterUnprotect) {
  for (const uint8_t first : {0xcb, 0xc7}) {  // 0x08 and 0x04 reserved bits
    Bytes packet = concat({kV1ClientHeader, client_initial_body()});
    packet[0] = first;
    ParsedHeader header;
    ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);  // still masked: fine
    PacketNumberFields fields;
    EXPECT_EQ(decode_packet_number_fields(packet, header, std::nullopt, fields),
              WireError::kProtocolViolation);
    // Everything else is filled in so the caller can decrypt first.
    EXPECT_EQ(fields.packet_number_length, 4u);
    EXPECT_EQ(fields.packet_number, 2u);
    EXPECT_EQ(fields.reserved_bits, first & 0x0c);
  }
  for (const uint8_t first : {0x4a, 0x52}) {  // short: 0x08 and 0x10
    Bytes packet = from_hex("4200bff4 655e5cd55c41f69080575d7999c25a5bfb");
    packet[0] = first;
    ParsedHeader header;
    ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
    PacketNumberFields fields;
    EXPECT_EQ(decode_packet_number_fields(packet, header, std::nullopt, fields),
              WireError::kProtocolViolation);
    EXPECT_EQ(fields.reserved_bits, first & 0x18);
  }
}

TEST(HeaderTest, ConnectionIdLongerThan20Dropped) {
  Bytes cid21(21, 0x11);
  const Bytes long_dcid =
      concat({from_hex("c3 00000001 15"), cid21, from_hex("00 00 05 00000000 00")});
  const Bytes long_scid =
      concat({from_hex("c3 00000001 00 15"), cid21, from_hex("00 05 00000000 00")});
  ParsedHeader header;
  EXPECT_EQ(parse_packet_header(long_dcid, 0, header), WireError::kDrop);
  EXPECT_EQ(parse_packet_header(long_scid, 0, header), WireError::kDrop);
  const Bytes twenty =
      concat({from_hex("c3 00000001 14"), Bytes(20, 0x11), from_hex("00 00 05 00000000 00")});
  EXPECT_EQ(parse_packet_header(twenty, 0, header), WireError::kOk);
  EXPECT_EQ(header.dcid.size(), 20u);
  EXPECT_EQ(parse_packet_header(from_hex("40 00"), 21, header), WireError::kDrop);

  // Unknown versions keep the RFC 8999 invariants, with CIDs up to 255 bytes.
  const Bytes unknown = concat(
      {from_hex("c0 1a2a3a4a 15"), cid21, from_hex("ff"), Bytes(255, 0x22), from_hex("0102")});
  ASSERT_EQ(parse_packet_header(unknown, 0, header), WireError::kOk);
  EXPECT_TRUE(header.long_header);
  EXPECT_FALSE(header.known_version);
  EXPECT_FALSE(header.has_packet_number());
  EXPECT_EQ(header.version, 0x1a2a3a4au);
  EXPECT_EQ(header.dcid.size(), 21u);
  EXPECT_EQ(header.scid.size(), 255u);
  EXPECT_EQ(header.packet_size, unknown.size());

  std::array<uint8_t, 128> buffer{};
  ByteWriter writer(buffer);
  LongHeaderFields fields;
  fields.dcid = cid21;
  EncodedHeader encoded;
  EXPECT_FALSE(encode_long_header(writer, fields, encoded));
  EXPECT_EQ(writer.position(), 0u);
}

TEST(HeaderTest, ClientInitialDcidShorterThan8Dropped) {
  const Bytes seven = concat({from_hex("c3 00000001 07 01020304050607 00 00 05 00000000 00")});
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(seven, 0, header), WireError::kOk);
  EXPECT_EQ(check_client_initial_dcid(header), WireError::kDrop);
  EXPECT_EQ(check_client_initial_datagram_size(1199), WireError::kDrop);
  EXPECT_EQ(check_client_initial_datagram_size(1200), WireError::kOk);
}

// RFC 9000 §17.2.2: a client discards a server Initial whose token is not
// empty; the RFC 9001 A.3 server Initial (empty token) passes.
TEST(HeaderTest, ClientDropsServerInitialWithToken) {
  ParsedHeader header;
  const Bytes server_initial = concat({kV1ServerHeader, server_initial_body()});
  ASSERT_EQ(parse_packet_header(server_initial, 0, header), WireError::kOk);
  EXPECT_EQ(check_server_initial_token(header), WireError::kOk);

  const Bytes with_token = from_hex("c3 00000001 00 00 02 abcd 05 00000000 00");
  ASSERT_EQ(parse_packet_header(with_token, 0, header), WireError::kOk);
  ASSERT_EQ(header.token.size(), 2u);
  EXPECT_EQ(check_server_initial_token(header), WireError::kDrop);

  // Only Initial packets carry a token field; a Retry's token is its point.
  ASSERT_EQ(parse_packet_header(kV1Retry, 0, header), WireError::kOk);
  EXPECT_EQ(check_server_initial_token(header), WireError::kOk);
}

TEST(HeaderTest, MalformedHeadersDropped) {
  ParsedHeader header;
  EXPECT_EQ(parse_packet_header({}, 0, header), WireError::kDrop);
  // Fixed bit clear, long and short.
  EXPECT_EQ(parse_packet_header(from_hex("83 00000001 00 00 00 05 00000000 00"), 0, header),
            WireError::kDrop);
  EXPECT_EQ(parse_packet_header(from_hex("03 00000000"), 0, header), WireError::kDrop);
  // Length beyond the datagram.
  EXPECT_EQ(parse_packet_header(from_hex("e3 00000001 00 00 06 00000000 00"), 0, header),
            WireError::kDrop);
  // Token length beyond the datagram.
  EXPECT_EQ(parse_packet_header(from_hex("c3 00000001 00 00 09 0102"), 0, header),
            WireError::kDrop);
  // Retry with an empty token: only the tag follows the SCID.
  EXPECT_EQ(parse_packet_header(concat({from_hex("f0 00000001 00 00"), Bytes(16, 0)}), 0, header),
            WireError::kDrop);
  // Version Negotiation is recognised (its body is parsed elsewhere).
  ASSERT_EQ(parse_packet_header(from_hex("80 00000000 00 00 00000001"), 0, header), WireError::kOk);
  EXPECT_EQ(header.type, PacketType::kVersionNegotiation);
  EXPECT_FALSE(header.has_packet_number());
}

TEST(HeaderTest, PacketNumberStepRejectsInconsistentInput) {
  // Length 1 cannot hold a 4-byte packet number.
  const Bytes packet = from_hex("e3 00000001 00 00 01 00");
  ParsedHeader header;
  ASSERT_EQ(parse_packet_header(packet, 0, header), WireError::kOk);
  PacketNumberFields pn;
  EXPECT_EQ(decode_packet_number_fields(packet, header, std::nullopt, pn), WireError::kDrop);
  Bytes one_byte = packet;
  one_byte[0] = 0xe0;
  EXPECT_EQ(decode_packet_number_fields(one_byte, header, std::nullopt, pn), WireError::kOk);
  // Unprotected type bits that differ from step 1: not the same packet.
  Bytes other_type = one_byte;
  other_type[0] = 0xd0;
  EXPECT_EQ(decode_packet_number_fields(other_type, header, std::nullopt, pn), WireError::kDrop);
  // Retry carries no packet number.
  ASSERT_EQ(parse_packet_header(kV1Retry, 0, header), WireError::kOk);
  EXPECT_EQ(decode_packet_number_fields(kV1Retry, header, std::nullopt, pn), WireError::kDrop);
}

TEST(HeaderTest, EncodeRejectsInvalidFieldsAndShortBuffers) {
  std::array<uint8_t, 64> buffer{};
  EncodedHeader encoded;
  LongHeaderFields fields;
  fields.dcid = kClientDcid;
  fields.packet_number = 7;
  {
    ByteWriter writer{std::span<uint8_t>(buffer).first(15)};  // needs 1+4+1+8+1+1+2+1 = 19
    EXPECT_FALSE(encode_long_header(writer, fields, encoded));
    EXPECT_EQ(writer.position(), 0u);
  }
  auto rejects = [&](LongHeaderFields bad) {
    ByteWriter writer(buffer);
    EXPECT_FALSE(encode_long_header(writer, bad, encoded));
    EXPECT_EQ(writer.position(), 0u);
  };
  LongHeaderFields bad = fields;
  bad.version = 0x1a2a3a4a;
  rejects(bad);
  bad = fields;
  bad.type = PacketType::kHandshake;
  bad.token = kClientDcid;
  rejects(bad);
  bad = fields;
  bad.type = PacketType::kRetry;
  rejects(bad);
  bad = fields;
  bad.length_field_width = 3;
  rejects(bad);
  bad = fields;
  bad.packet_number_length = 5;
  rejects(bad);
  bad = fields;
  bad.packet_number = kMaxPacketNumber + 1;
  rejects(bad);

  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_long_header(writer, fields, encoded));
  EXPECT_EQ(encoded.packet_number_length, 1u);  // no ACK yet: 1 byte covers 7
  // A 1-byte Length cannot hold 64 or more.
  fields.length_field_width = 1;
  ByteWriter narrow(buffer);
  ASSERT_TRUE(encode_long_header(narrow, fields, encoded));
  EXPECT_TRUE(patch_long_header_length(buffer, encoded, 62));
  EXPECT_FALSE(patch_long_header_length(buffer, encoded, 63));
  EXPECT_FALSE(encode_retry_without_tag(writer, kVersion1, {}, kServerScid, {}));
}

}  // namespace
}  // namespace dpquic::wire
