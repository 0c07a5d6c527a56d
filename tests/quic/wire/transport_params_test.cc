#include "quic/wire/transport_params.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>
#include <vector>

#include "tests/util/hex.h"

namespace dpquic::wire {
namespace {

using ::dpquic::testing::from_hex;

using Bytes = std::vector<uint8_t>;
using P = TransportParameter;
constexpr WireError kTpe = WireError::kTransportParameterError;

WireError decode(const Bytes& bytes, Role sender = Role::kServer) {
  TransportParameters tp;
  return decode_transport_parameters(bytes, sender, tp);
}

// Every parameter, with values that differ from the defaults.
TransportParameters all_parameters(Role sender) {
  TransportParameters tp;
  const Bytes odcid = from_hex("8394c8f03e515708");
  const Bytes iscid = from_hex("f067a5502a4262b5");
  const Bytes rscid = from_hex("0102030405060708090a0b0c0d0e0f1011121314");
  tp.original_destination_connection_id = ConnectionId(odcid);
  tp.max_idle_timeout_ms = 30000;
  tp.stateless_reset_token = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  tp.max_udp_payload_size = 1472;
  tp.initial_max_data = kVarintMax;
  tp.initial_max_stream_data_bidi_local = 65535;
  tp.initial_max_stream_data_bidi_remote = 1 << 20;
  tp.initial_max_stream_data_uni = 63;
  tp.initial_max_streams_bidi = kMaxStreamsLimit;
  tp.initial_max_streams_uni = 3;
  tp.ack_delay_exponent = 20;
  tp.max_ack_delay_ms = 16383;
  tp.preferred_address.ipv4_address = {192, 0, 2, 1};
  tp.preferred_address.ipv4_port = 4433;
  tp.preferred_address.ipv6_address = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  tp.preferred_address.ipv6_port = 4434;
  tp.preferred_address.connection_id = ConnectionId(rscid);
  tp.preferred_address.stateless_reset_token = {16, 15, 14, 13, 12, 11, 10, 9,
                                                8,  7,  6,  5,  4,  3,  2,  1};
  tp.active_connection_id_limit = 8;
  tp.initial_source_connection_id = ConnectionId(iscid);
  tp.retry_source_connection_id = ConnectionId(rscid);
  tp.version_information.chosen_version = 0x00000001;
  tp.version_information.available_versions[0] = 0x6b3343cf;
  tp.version_information.available_versions[1] = 0x00000001;
  tp.version_information.available_version_count = 2;
  tp.max_datagram_frame_size = 65535;
  tp.min_ack_delay_us = 1000;
  for (size_t i = 0; i < kTransportParameterCount; ++i) {
    const auto parameter = static_cast<P>(i);
    const bool server_only =
        parameter == P::kOriginalDestinationConnectionId || parameter == P::kStatelessResetToken ||
        parameter == P::kPreferredAddress || parameter == P::kRetrySourceConnectionId;
    if (sender == Role::kServer || !server_only) tp.mark_present(parameter);
  }
  if (sender == Role::kClient) {
    tp.original_destination_connection_id = ConnectionId();
    tp.stateless_reset_token = {};
    tp.preferred_address = PreferredAddress{};
    tp.retry_source_connection_id = ConnectionId();
  }
  return tp;
}

Bytes encode(const TransportParameters& tp, Role sender) {
  std::array<uint8_t, 512> buffer{};
  ByteWriter writer(buffer);
  EXPECT_TRUE(encode_transport_parameters(tp, sender, writer));
  return Bytes(writer.written().begin(), writer.written().end());
}

TEST(TransportParamsTest, RoundTripsEveryParameter) {
  for (const auto sender : {Role::kClient, Role::kServer}) {
    const TransportParameters tp = all_parameters(sender);
    const Bytes bytes = encode(tp, sender);
    TransportParameters decoded;
    ASSERT_EQ(decode_transport_parameters(bytes, sender, decoded), WireError::kOk);
    EXPECT_EQ(decoded, tp);
    EXPECT_TRUE(decoded.has(P::kDisableActiveMigration));
    EXPECT_EQ(decoded.has(P::kPreferredAddress), sender == Role::kServer);
  }
}

// The transport parameters in the RFC 9001 A.2 ClientHello, decoded field by field.
TEST(TransportParamsTest, DecodesRfc9001ClientParameters) {
  const Bytes bytes = from_hex(
      "0408ffffffffffffffff 05048000ffff 07048000ffff 080110 0104 80007530"
      "090110 0f088394c8f03e515708 06048000ffff");
  ASSERT_EQ(bytes.size(), 0x32u);
  TransportParameters tp;
  ASSERT_EQ(decode_transport_parameters(bytes, Role::kClient, tp), WireError::kOk);
  EXPECT_EQ(tp.initial_max_data, kVarintMax);
  EXPECT_EQ(tp.initial_max_stream_data_bidi_local, 65535u);
  EXPECT_EQ(tp.initial_max_stream_data_bidi_remote, 65535u);
  EXPECT_EQ(tp.initial_max_stream_data_uni, 65535u);
  EXPECT_EQ(tp.initial_max_streams_bidi, 16u);
  EXPECT_EQ(tp.initial_max_streams_uni, 16u);
  EXPECT_EQ(tp.max_idle_timeout_ms, 30000u);
  EXPECT_EQ(tp.initial_source_connection_id, ConnectionId(from_hex("8394c8f03e515708")));
  const uint32_t expected_present = (1u << 4) | (1u << 5) | (1u << 7) | (1u << 8) | (1u << 1) |
                                    (1u << 9) | (1u << 15) | (1u << 6);
  EXPECT_EQ(tp.present, expected_present);
  // Absent parameters keep their RFC defaults.
  EXPECT_EQ(tp.max_udp_payload_size, 65527u);
  EXPECT_EQ(tp.ack_delay_exponent, 3u);
  EXPECT_EQ(tp.max_ack_delay_ms, 25u);
  EXPECT_EQ(tp.active_connection_id_limit, 2u);
  EXPECT_FALSE(tp.has(P::kDisableActiveMigration));
}

TEST(TransportParamsTest, EncodesExactBytes) {
  TransportParameters tp;
  tp.max_idle_timeout_ms = 30000;
  tp.mark_present(P::kMaxIdleTimeout);
  tp.mark_present(P::kDisableActiveMigration);
  tp.initial_source_connection_id = ConnectionId(from_hex("0102"));
  tp.mark_present(P::kInitialSourceConnectionId);
  tp.max_datagram_frame_size = 1200;
  tp.mark_present(P::kMaxDatagramFrameSize);
  tp.min_ack_delay_us = 0;
  tp.mark_present(P::kMinAckDelay);
  EXPECT_EQ(encode(tp, Role::kClient),
            from_hex("01 04 80007530  0c 00  0f 02 0102  20 02 44b0  c0000000ff04de1b 01 00"));
  EXPECT_EQ(transport_parameter_id(P::kVersionInformation), 0x11u);
  EXPECT_EQ(transport_parameter_id(P::kMinAckDelay), 0xff04de1bu);
}

TEST(TransportParamsTest, EmptyInputGivesDefaults) {
  TransportParameters tp;
  tp.initial_max_data = 5;
  ASSERT_EQ(decode_transport_parameters({}, Role::kServer, tp), WireError::kOk);
  EXPECT_EQ(tp, TransportParameters{});
  EXPECT_EQ(tp.present, 0u);
  EXPECT_EQ(tp.max_udp_payload_size, kDefaultMaxUdpPayloadSize);
}

TEST(TransportParamsTest, RangeRules) {
  struct Case {
    const char* bytes;
    WireError expected;
  };
  const Case cases[] = {
      {"03 02 44af", kTpe},                        // max_udp_payload_size 1199
      {"03 02 44b0", WireError::kOk},              // 1200
      {"08 08 d000000000000001", kTpe},            // initial_max_streams_bidi 2^60 + 1
      {"08 08 d000000000000000", WireError::kOk},  // 2^60
      {"09 08 d000000000000001", kTpe},            // initial_max_streams_uni 2^60 + 1
      {"0a 01 15", kTpe},                          // ack_delay_exponent 21
      {"0a 01 14", WireError::kOk},                // 20
      {"0b 02 8000", kTpe},                        // the varint needs 4 bytes, the value has 2
      {"0b 04 80004000", kTpe},                    // max_ack_delay 16384
      {"0b 02 7fff", WireError::kOk},              // 16383
      {"0e 01 01", kTpe},                          // active_connection_id_limit 1
      {"0e 01 00", kTpe},                          // 0
      {"0e 01 02", WireError::kOk},                // 2
      {"c0000000ff04de1b 04 800061a9", kTpe},      // min_ack_delay 25001 us > default 25 ms
      {"c0000000ff04de1b 04 800061a8", WireError::kOk},  // 25000 us
      // Checked against max_ack_delay wherever it appears.
      {"c0000000ff04de1b 02 6711 0b 01 0a", kTpe},            // 10001 us > 10 ms
      {"c0000000ff04de1b 02 6710 0b 01 0a", WireError::kOk},  // 10000 us
      {"c0000000ff04de1b 04 81000000", kTpe},                 // 2^24
  };
  for (const Case& c : cases) {
    EXPECT_EQ(decode(from_hex(c.bytes)), c.expected) << c.bytes;
  }
}

TEST(TransportParamsTest, MalformedLengthsAndValues) {
  const char* invalid[] = {
      "01 02 05 00",                                       // varint does not fill the value
      "01 00",                                             // empty integer
      "01 01 40",                                          // truncated varint inside the value
      "0c 01 00",                                          // disable_active_migration must be empty
      "02 0f 000102030405060708090a0b0c0d0e",              // reset token: 15 bytes
      "02 11 000102030405060708090a0b0c0d0e0f10",          // 17 bytes
      "0f 15 000102030405060708090a0b0c0d0e0f1011121314",  // CID of 21 bytes
      "00 15 000102030405060708090a0b0c0d0e0f1011121314",
      "10 15 000102030405060708090a0b0c0d0e0f1011121314",
      "11 00",         // version_information: empty
      "11 03 000001",  // not a multiple of 4
      "11 05 0000000100",
      "11 04 00000000",           // chosen version 0
      "11 08 00000001 00000000",  // available version 0
      "01",                       // truncated id / length / value
      "01 04 8000",
      "41",
      "01 c000000000000001",  // length larger than the input
  };
  for (const char* bytes : invalid) {
    EXPECT_EQ(decode(from_hex(bytes)), kTpe) << bytes;
  }
  // Non-minimal varints are valid encodings.
  TransportParameters tp;
  ASSERT_EQ(decode_transport_parameters(from_hex("01 02 4005  4004 01 05"), Role::kClient, tp),
            WireError::kOk);
  EXPECT_EQ(tp.max_idle_timeout_ms, 5u);
  EXPECT_EQ(tp.initial_max_data, 5u);  // id 4 as a 2-byte varint
  EXPECT_TRUE(tp.has(P::kMaxIdleTimeout));
  EXPECT_EQ(decode(from_hex("0f 00")), WireError::kOk);  // zero-length CIDs are allowed here
  EXPECT_EQ(decode(from_hex("11 04 00000001")), WireError::kOk);  // no available versions
}

Bytes preferred_address(uint8_t cid_length, size_t extra = 0) {
  Bytes value = from_hex("c0000201 1151 20010db8000000000000000000000001 1152");
  value.push_back(cid_length);
  value.insert(value.end(), cid_length, 0x77);
  value.insert(value.end(), 16, 0x99);
  value.insert(value.end(), extra, 0x00);
  // Prepend id and length (GCC 12 warns falsely on inserting into a 2-byte vector).
  value.insert(value.begin(), {0x0d, static_cast<uint8_t>(value.size())});
  return value;
}

TEST(TransportParamsTest, PreferredAddressStructure) {
  TransportParameters tp;
  ASSERT_EQ(decode_transport_parameters(preferred_address(4), Role::kServer, tp), WireError::kOk);
  const PreferredAddress& pa = tp.preferred_address;
  EXPECT_EQ(pa.ipv4_address, (std::array<uint8_t, 4>{192, 0, 2, 1}));
  EXPECT_EQ(pa.ipv4_port, 4433);
  EXPECT_EQ(pa.ipv6_address[0], 0x20);
  EXPECT_EQ(pa.ipv6_address[15], 0x01);
  EXPECT_EQ(pa.ipv6_port, 4434);
  EXPECT_EQ(pa.connection_id, ConnectionId(Bytes(4, 0x77)));
  EXPECT_EQ(pa.stateless_reset_token,
            (StatelessResetToken{0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99,
                                 0x99, 0x99, 0x99, 0x99, 0x99}));
  EXPECT_EQ(decode(preferred_address(20)), WireError::kOk);
  EXPECT_EQ(decode(preferred_address(0)), kTpe);     // zero-length CID forbidden
  EXPECT_EQ(decode(preferred_address(21)), kTpe);    // longer than 20
  EXPECT_EQ(decode(preferred_address(4, 1)), kTpe);  // trailing byte
  Bytes short_value = preferred_address(4);
  short_value.pop_back();
  short_value[1] -= 1;
  EXPECT_EQ(decode(short_value), kTpe);  // token cut short
}

TEST(TransportParamsTest, DuplicatesRejected) {
  EXPECT_EQ(decode(from_hex("01 01 05  04 01 01  01 01 05")), kTpe);
  EXPECT_EQ(decode(from_hex("0c 00 0c 00")), kTpe);
  EXPECT_EQ(decode(from_hex("0f 00 0f 00")), kTpe);
  EXPECT_EQ(decode(from_hex("c0000000ff04de1b 01 00 c0000000ff04de1b 01 00")), kTpe);
  // Distinct parameters with the same value are fine.
  EXPECT_EQ(decode(from_hex("05 01 05 06 01 05")), WireError::kOk);
}

TEST(TransportParamsTest, ServerOnlyParametersRejectedFromClient) {
  const Bytes server_only[] = {
      from_hex("00 08 8394c8f03e515708"),
      from_hex("02 10 000102030405060708090a0b0c0d0e0f"),
      preferred_address(8),
      from_hex("10 04 01020304"),
  };
  for (const Bytes& bytes : server_only) {
    EXPECT_EQ(decode(bytes, Role::kClient), kTpe);
    EXPECT_EQ(decode(bytes, Role::kServer), WireError::kOk);
  }
  // The encoder refuses them too, and writes nothing.
  TransportParameters tp = all_parameters(Role::kServer);
  std::array<uint8_t, 512> buffer{};
  ByteWriter writer(buffer);
  EXPECT_FALSE(encode_transport_parameters(tp, Role::kClient, writer));
  EXPECT_EQ(writer.position(), 0u);
  EXPECT_EQ(validate_transport_parameters(tp, Role::kClient), kTpe);
  EXPECT_EQ(validate_transport_parameters(tp, Role::kServer), WireError::kOk);
}

TEST(TransportParamsTest, UnknownAndGreasedParametersSkipped) {
  const Bytes base = from_hex("01 02 4005");
  TransportParameters expected;
  ASSERT_EQ(decode_transport_parameters(base, Role::kServer, expected), WireError::kOk);
  // 27 = 31*0+27, 182 = 31*5+27 (as a 2-byte varint), 0x1234 unknown, 0x12 unassigned.
  const Bytes with_unknown =
      from_hex("1b 00  40b6 03 aabbcc  01 02 4005  5234 02 ffff  12 01 00  80ff04de 00");
  TransportParameters tp;
  ASSERT_EQ(decode_transport_parameters(with_unknown, Role::kServer, tp), WireError::kOk);
  EXPECT_EQ(tp, expected);
  // Unknown ids may repeat: they are not tracked.
  EXPECT_EQ(decode(from_hex("1b 00 1b 00")), WireError::kOk);

  for (uint64_t entropy : {0ull, 1ull, 0x123456789abcdefull, ~0ull}) {
    std::array<uint8_t, 64> buffer{};
    ByteWriter writer(buffer);
    ASSERT_TRUE(write_greased_transport_parameter(writer, entropy));
    uint64_t id = 0;
    ByteReader reader(writer.written());
    ASSERT_TRUE(reader.read_varint(id));
    EXPECT_EQ(id % 31, 27u);
    ASSERT_EQ(decode_transport_parameters(writer.written(), Role::kClient, tp), WireError::kOk);
    EXPECT_EQ(tp.present, 0u);
  }
}

TEST(TransportParamsTest, AvailableVersionsKeepFirstSixteen) {
  Bytes bytes = {0x11, 0x40, 4 + 20 * 4, 0, 0, 0, 1};  // 2-byte Length: 84
  for (uint8_t i = 1; i <= 20; ++i) bytes.insert(bytes.end(), {0x0a, 0x0a, 0x0a, i});
  TransportParameters tp;
  ASSERT_EQ(decode_transport_parameters(bytes, Role::kClient, tp), WireError::kOk);
  EXPECT_EQ(tp.version_information.chosen_version, 1u);
  ASSERT_EQ(tp.version_information.available().size(), kMaxAvailableVersions);
  EXPECT_EQ(tp.version_information.available()[15], 0x0a0a0a10u);
  // A zero beyond the 16 kept is still an error.
  bytes[bytes.size() - 1] = 0;
  bytes[bytes.size() - 2] = 0;
  bytes[bytes.size() - 3] = 0;
  bytes[bytes.size() - 4] = 0;
  EXPECT_EQ(decode_transport_parameters(bytes, Role::kClient, tp), kTpe);
  EXPECT_EQ(tp, TransportParameters{});  // reset on error
}

// Every prefix of a valid blob decodes only if it ends on a parameter boundary.
TEST(TransportParamsTest, TruncationAtEveryOffset) {
  const Bytes bytes = encode(all_parameters(Role::kServer), Role::kServer);
  std::vector<size_t> boundaries = {0};
  ByteReader reader(bytes);
  while (!reader.empty()) {
    uint64_t id = 0, length = 0;
    ASSERT_TRUE(reader.read_varint(id) && reader.read_varint(length) && reader.skip(length));
    boundaries.push_back(reader.position());
  }
  EXPECT_EQ(boundaries.size(), kTransportParameterCount + 1);
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const Bytes prefix(bytes.begin(), bytes.begin() + n);
    const bool boundary = std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
    EXPECT_EQ(decode(prefix), boundary ? WireError::kOk : kTpe) << n;
  }
}

TEST(TransportParamsTest, EncodeFailsWithoutWritingWhenShortOrInvalid) {
  const TransportParameters tp = all_parameters(Role::kServer);
  const Bytes full = encode(tp, Role::kServer);
  std::array<uint8_t, 512> buffer{};
  ByteWriter short_writer{std::span<uint8_t>(buffer).first(full.size() - 1)};
  EXPECT_FALSE(encode_transport_parameters(tp, Role::kServer, short_writer));
  EXPECT_EQ(short_writer.position(), 0u);

  auto rejected = [&](auto mutate) {
    TransportParameters bad = tp;
    mutate(bad);
    ByteWriter writer(buffer);
    EXPECT_FALSE(encode_transport_parameters(bad, Role::kServer, writer));
    EXPECT_EQ(writer.position(), 0u);
  };
  rejected([](TransportParameters& t) { t.max_udp_payload_size = 1199; });
  rejected([](TransportParameters& t) { t.ack_delay_exponent = 21; });
  rejected([](TransportParameters& t) { t.max_ack_delay_ms = 1 << 14; });
  rejected([](TransportParameters& t) { t.active_connection_id_limit = 1; });
  rejected([](TransportParameters& t) { t.initial_max_streams_uni = kMaxStreamsLimit + 1; });
  rejected([](TransportParameters& t) { t.initial_max_data = kVarintMax + 1; });
  rejected([](TransportParameters& t) { t.preferred_address.connection_id = ConnectionId(); });
  rejected([](TransportParameters& t) { t.version_information.chosen_version = 0; });
  rejected([](TransportParameters& t) { t.min_ack_delay_us = 16383 * 1000 + 1; });
  // Values of absent parameters are not checked: they are not sent.
  TransportParameters absent;
  absent.ack_delay_exponent = 99;
  ByteWriter writer(buffer);
  EXPECT_TRUE(encode_transport_parameters(absent, Role::kClient, writer));
  EXPECT_EQ(writer.position(), 0u);
}

}  // namespace
}  // namespace dpquic::wire
