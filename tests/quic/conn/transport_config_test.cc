#include "quic/conn/transport_config.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "quic/wire/varint.h"

namespace dpquic::conn {
namespace {

using wire::ConnectionId;
using wire::Role;
using wire::TransportErrorCode;
using wire::TransportParameters;
using P = wire::TransportParameter;

ConnectionId cid(std::initializer_list<uint8_t> bytes) {
  const std::vector<uint8_t> v(bytes);
  return ConnectionId(v);
}

// The connection IDs of RFC 9000 Figure 8 (a handshake with a Retry).
const ConnectionId kS1 = cid({0x51, 0x51, 0x51, 0x51, 0x51, 0x51, 0x51, 0x51});
const ConnectionId kS2 = cid({0x52, 0x52, 0x52, 0x52});
const ConnectionId kS3 = cid({0x53, 0x53, 0x53, 0x53, 0x53});
const ConnectionId kC1 = cid({0xc1, 0xc1, 0xc1});

// Encodes and decodes: what the peer would see.
TransportParameters round_trip(const TransportParameters& tp, Role sender) {
  std::array<uint8_t, 512> buffer{};
  wire::ByteWriter writer(buffer);
  EXPECT_TRUE(wire::encode_transport_parameters(tp, sender, writer));
  TransportParameters decoded;
  EXPECT_EQ(wire::decode_transport_parameters(writer.written(), sender, decoded),
            wire::WireError::kOk);
  return decoded;
}

TEST(TransportConfigTest, DefaultsAreValid) {
  const TransportConfig config;
  EXPECT_EQ(transport_config_error(config), nullptr);
  EXPECT_GE(config.initial_max_streams_uni, 3u);
  EXPECT_LE(config.initial_max_data, config.max_connection_window);
  EXPECT_LE(config.initial_max_stream_data, config.max_stream_window);
}

TEST(TransportConfigTest, RejectsOutOfRangeConfigs) {
  const auto error_with = [](auto&& change) {
    TransportConfig config;
    change(config);
    return transport_config_error(config);
  };
  EXPECT_NE(error_with([](TransportConfig& c) { c.ack_delay_exponent = 21; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.max_ack_delay_ms = 1 << 14; }), nullptr);
  EXPECT_EQ(error_with([](TransportConfig& c) { c.max_ack_delay_ms = (1 << 14) - 1; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.active_connection_id_limit = 1; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.max_udp_payload_size = 1199; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.max_udp_payload_size = 65528; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.initial_max_streams_bidi = (1ull << 60) + 1; }),
            nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.initial_max_data = 1ull << 62; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.max_connection_window = 1000; }), nullptr);
  EXPECT_NE(error_with([](TransportConfig& c) { c.max_stream_window = 1000; }), nullptr);
}

TEST(TransportConfigTest, ClientParametersCarryOnlyItsInitialScid) {
  TransportConfig config;
  config.disable_active_migration = true;
  config.max_datagram_frame_size = 1200;
  const wire::StatelessResetToken token{1, 2, 3};
  wire::PreferredAddress preferred;
  preferred.connection_id = kS2;
  // Server-only arguments are ignored for a client.
  const TransportParameters tp =
      make_local_transport_parameters(config, Role::kClient, kC1, &kS1, &kS2, &token, &preferred);
  EXPECT_EQ(tp.initial_source_connection_id, kC1);
  EXPECT_TRUE(tp.has(P::kInitialSourceConnectionId));
  EXPECT_FALSE(tp.has(P::kOriginalDestinationConnectionId));
  EXPECT_FALSE(tp.has(P::kRetrySourceConnectionId));
  EXPECT_FALSE(tp.has(P::kStatelessResetToken));
  EXPECT_FALSE(tp.has(P::kPreferredAddress));
  EXPECT_TRUE(tp.has(P::kDisableActiveMigration));
  EXPECT_EQ(tp.max_idle_timeout_ms, 30'000u);
  EXPECT_EQ(tp.initial_max_data, 1u << 20);
  EXPECT_EQ(tp.initial_max_stream_data_bidi_local, 256u * 1024);
  EXPECT_EQ(tp.initial_max_stream_data_bidi_remote, 256u * 1024);
  EXPECT_EQ(tp.initial_max_stream_data_uni, 256u * 1024);
  EXPECT_EQ(tp.initial_max_streams_bidi, 100u);
  EXPECT_EQ(tp.initial_max_streams_uni, 3u);
  EXPECT_EQ(tp.ack_delay_exponent, 3u);
  EXPECT_EQ(tp.max_ack_delay_ms, 25u);
  EXPECT_EQ(tp.active_connection_id_limit, 4u);
  EXPECT_EQ(tp.max_udp_payload_size, 1472u);
  EXPECT_TRUE(tp.has(P::kMaxDatagramFrameSize));
  EXPECT_EQ(tp.max_datagram_frame_size, 1200u);
  EXPECT_EQ(round_trip(tp, Role::kClient), tp);

  // What a server checking it expects.
  HandshakeCids cids;
  cids.peer_initial_scid = kC1;
  EXPECT_TRUE(check_peer_transport_parameters(tp, Role::kServer, cids).ok());
}

TEST(TransportConfigTest, ServerParametersAuthenticateTheHandshakeCids) {
  const TransportConfig config;
  const wire::StatelessResetToken token{0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0,
                                        0,    0,    0,    0,    0, 0, 0, 0x11};
  wire::PreferredAddress preferred;
  preferred.ipv4_address = {192, 0, 2, 1};
  preferred.ipv4_port = 4433;
  preferred.connection_id = cid({9, 9, 9, 9});
  const TransportParameters tp =
      make_local_transport_parameters(config, Role::kServer, kS3, &kS1, &kS2, &token, &preferred);
  EXPECT_EQ(tp.initial_source_connection_id, kS3);
  EXPECT_EQ(tp.original_destination_connection_id, kS1);
  EXPECT_EQ(tp.retry_source_connection_id, kS2);
  EXPECT_EQ(tp.stateless_reset_token, token);
  EXPECT_EQ(tp.preferred_address, preferred);
  EXPECT_FALSE(tp.has(P::kDisableActiveMigration));
  EXPECT_FALSE(tp.has(P::kMaxDatagramFrameSize));  // 0: DATAGRAM not offered
  EXPECT_EQ(round_trip(tp, Role::kServer), tp);

  HandshakeCids cids;
  cids.peer_initial_scid = kS3;
  cids.original_dcid = kS1;
  cids.retry_scid = kS2;
  EXPECT_TRUE(check_peer_transport_parameters(tp, Role::kClient, cids).ok());

  // Without a Retry the server sends no retry_source_connection_id.
  const TransportParameters no_retry =
      make_local_transport_parameters(config, Role::kServer, kS3, &kS1, nullptr, nullptr, nullptr);
  EXPECT_FALSE(no_retry.has(P::kRetrySourceConnectionId));
  EXPECT_FALSE(no_retry.has(P::kStatelessResetToken));
  EXPECT_FALSE(no_retry.has(P::kPreferredAddress));
  cids.retry_scid.reset();
  EXPECT_TRUE(check_peer_transport_parameters(no_retry, Role::kClient, cids).ok());
}

// --- Client checking the server's parameters (RFC 9000 §7.3) ---------------

class ClientChecksServer : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = make_local_transport_parameters(TransportConfig{}, Role::kServer, kS3, &kS1, &kS2,
                                              nullptr, nullptr);
    cids_.peer_initial_scid = kS3;
    cids_.original_dcid = kS1;
    cids_.retry_scid = kS2;
  }
  TransportError check() const {
    return check_peer_transport_parameters(server_, Role::kClient, cids_);
  }

  TransportParameters server_;
  HandshakeCids cids_;
};

TEST_F(ClientChecksServer, AcceptsMatchingCids) { EXPECT_TRUE(check().ok()); }

TEST_F(ClientChecksServer, MissingInitialSourceCidIsTransportParameterError) {
  server_.present &= ~(1u << static_cast<unsigned>(P::kInitialSourceConnectionId));
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
  EXPECT_STREQ(check().reason, "missing initial_source_connection_id");
}

TEST_F(ClientChecksServer, MissingOriginalDestinationCidIsTransportParameterError) {
  server_.present &= ~(1u << static_cast<unsigned>(P::kOriginalDestinationConnectionId));
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
  EXPECT_STREQ(check().reason, "missing original_destination_connection_id");
}

TEST_F(ClientChecksServer, InitialSourceCidMismatchIsProtocolViolation) {
  server_.initial_source_connection_id = cid({0x53, 0x53, 0x53, 0x53, 0x54});
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "initial_source_connection_id does not match the Initial's SCID");
  // A prefix of the right bytes is a mismatch too.
  server_.initial_source_connection_id = cid({0x53, 0x53, 0x53, 0x53});
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
}

TEST_F(ClientChecksServer, OriginalDestinationCidMismatchIsProtocolViolation) {
  // The server must echo the DCID of the first Initial (S1), not the one
  // after the Retry (S2).
  server_.original_destination_connection_id = kS2;
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "original_destination_connection_id does not match our first DCID");
}

TEST_F(ClientChecksServer, MissingRetrySourceCidAfterRetryIsProtocolViolation) {
  server_.present &= ~(1u << static_cast<unsigned>(P::kRetrySourceConnectionId));
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "missing retry_source_connection_id after a Retry");
}

TEST_F(ClientChecksServer, RetrySourceCidMismatchIsProtocolViolation) {
  server_.retry_source_connection_id = kS3;
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "retry_source_connection_id does not match the Retry's SCID");
}

TEST_F(ClientChecksServer, RetrySourceCidWithoutRetryIsProtocolViolation) {
  cids_.retry_scid.reset();
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "retry_source_connection_id without a Retry");
}

TEST_F(ClientChecksServer, InvalidValueIsTransportParameterError) {
  server_.ack_delay_exponent = 21;
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
  EXPECT_STREQ(check().reason, "invalid transport parameter value");
}

TEST_F(ClientChecksServer, ZeroLengthCidsArePresentAndCompared) {
  // A zero-length SCID is sent as a present, empty parameter (§7.3).
  server_.initial_source_connection_id = ConnectionId();
  cids_.peer_initial_scid = ConnectionId();
  EXPECT_TRUE(check().ok());
  cids_.peer_initial_scid = kS3;
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  // Present-but-empty retry_source_connection_id is still "present".
  cids_.peer_initial_scid = ConnectionId();
  cids_.retry_scid.reset();
  server_.retry_source_connection_id = ConnectionId();
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
}

// --- Server checking the client's parameters --------------------------------

class ServerChecksClient : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = make_local_transport_parameters(TransportConfig{}, Role::kClient, kC1, nullptr,
                                              nullptr, nullptr, nullptr);
    cids_.peer_initial_scid = kC1;
  }
  TransportError check() const {
    return check_peer_transport_parameters(client_, Role::kServer, cids_);
  }

  TransportParameters client_;
  HandshakeCids cids_;
};

TEST_F(ServerChecksClient, AcceptsMatchingCid) { EXPECT_TRUE(check().ok()); }

TEST_F(ServerChecksClient, MissingInitialSourceCidIsTransportParameterError) {
  client_.present &= ~(1u << static_cast<unsigned>(P::kInitialSourceConnectionId));
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
  EXPECT_STREQ(check().reason, "missing initial_source_connection_id");
}

TEST_F(ServerChecksClient, InitialSourceCidMismatchIsProtocolViolation) {
  client_.initial_source_connection_id = kS1;
  EXPECT_EQ(check().code, TransportErrorCode::kProtocolViolation);
  EXPECT_STREQ(check().reason, "initial_source_connection_id does not match the Initial's SCID");
}

TEST_F(ServerChecksClient, ServerOnlyParametersAreTransportParameterErrors) {
  const struct {
    P parameter;
    const char* reason;
  } cases[] = {
      {P::kOriginalDestinationConnectionId, "client sent original_destination_connection_id"},
      {P::kStatelessResetToken, "client sent stateless_reset_token"},
      {P::kPreferredAddress, "client sent preferred_address"},
      {P::kRetrySourceConnectionId, "client sent retry_source_connection_id"},
  };
  for (const auto& c : cases) {
    TransportParameters tp = client_;
    tp.preferred_address.connection_id = kS2;
    tp.mark_present(c.parameter);
    const TransportError error = check_peer_transport_parameters(tp, Role::kServer, cids_);
    EXPECT_EQ(error.code, TransportErrorCode::kTransportParameterError) << c.reason;
    EXPECT_STREQ(error.reason, c.reason);
  }
}

TEST_F(ServerChecksClient, InvalidValueIsTransportParameterError) {
  client_.active_connection_id_limit = 1;
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
  client_.active_connection_id_limit = 2;
  client_.initial_max_streams_uni = (uint64_t{1} << 60) + 1;
  EXPECT_EQ(check().code, TransportErrorCode::kTransportParameterError);
}

// --- 0-RTT (RFC 9000 §7.4.1, RFC 9221 §3) -----------------------------------

TransportParameters remembered_parameters() {
  TransportConfig config;
  config.max_datagram_frame_size = 1200;
  return make_local_transport_parameters(config, Role::kServer, kS3, &kS1, nullptr, nullptr,
                                         nullptr);
}

TEST(ZeroRttParametersTest, EqualOrLargerLimitsAreAccepted) {
  const TransportParameters remembered = remembered_parameters();
  EXPECT_TRUE(check_zero_rtt_parameters(remembered, remembered).ok());
  TransportParameters larger = remembered;
  larger.initial_max_data *= 2;
  larger.initial_max_streams_bidi += 1;
  larger.max_datagram_frame_size = 65535;
  EXPECT_TRUE(check_zero_rtt_parameters(remembered, larger).ok());
  // Parameters a client must not remember may change freely.
  TransportParameters other = remembered;
  other.max_idle_timeout_ms = 1;
  other.ack_delay_exponent = 0;
  other.max_ack_delay_ms = 1;
  other.initial_source_connection_id = kS2;
  EXPECT_TRUE(check_zero_rtt_parameters(remembered, other).ok());
}

TEST(ZeroRttParametersTest, EachReducedLimitIsProtocolViolation) {
  const TransportParameters remembered = remembered_parameters();
  const struct {
    uint64_t TransportParameters::*field;
    const char* reason;
  } cases[] = {
      {&TransportParameters::active_connection_id_limit,
       "0-RTT accepted but active_connection_id_limit was reduced"},
      {&TransportParameters::initial_max_data, "0-RTT accepted but initial_max_data was reduced"},
      {&TransportParameters::initial_max_stream_data_bidi_local,
       "0-RTT accepted but initial_max_stream_data_bidi_local was reduced"},
      {&TransportParameters::initial_max_stream_data_bidi_remote,
       "0-RTT accepted but initial_max_stream_data_bidi_remote was reduced"},
      {&TransportParameters::initial_max_stream_data_uni,
       "0-RTT accepted but initial_max_stream_data_uni was reduced"},
      {&TransportParameters::initial_max_streams_bidi,
       "0-RTT accepted but initial_max_streams_bidi was reduced"},
      {&TransportParameters::initial_max_streams_uni,
       "0-RTT accepted but initial_max_streams_uni was reduced"},
      {&TransportParameters::max_datagram_frame_size,
       "0-RTT accepted but max_datagram_frame_size was reduced"},
  };
  for (const auto& c : cases) {
    TransportParameters current = remembered;
    current.*(c.field) -= 1;
    const TransportError error = check_zero_rtt_parameters(remembered, current);
    EXPECT_EQ(error.code, TransportErrorCode::kProtocolViolation) << c.reason;
    EXPECT_STREQ(error.reason, c.reason);
  }
}

TEST(ZeroRttParametersTest, DroppingDatagramSupportIsAReduction) {
  const TransportParameters remembered = remembered_parameters();
  TransportParameters current = remembered;
  current.present &= ~(1u << static_cast<unsigned>(P::kMaxDatagramFrameSize));
  EXPECT_EQ(check_zero_rtt_parameters(remembered, current).code,
            TransportErrorCode::kProtocolViolation);
  // Never offered before: absent now is fine, and offering it now is too.
  TransportParameters no_datagram = current;
  EXPECT_TRUE(check_zero_rtt_parameters(no_datagram, current).ok());
  EXPECT_TRUE(check_zero_rtt_parameters(no_datagram, remembered).ok());
}

TEST(ZeroRttParametersTest, AbsentParametersCompareByTheirDefaults) {
  // Remembered active_connection_id_limit absent (default 2), current 2: fine.
  TransportParameters remembered;
  TransportParameters current;
  current.active_connection_id_limit = 2;
  current.mark_present(P::kActiveConnectionIdLimit);
  EXPECT_TRUE(check_zero_rtt_parameters(remembered, current).ok());
  // Remembered 8, current absent (2): reduced.
  remembered.active_connection_id_limit = 8;
  remembered.mark_present(P::kActiveConnectionIdLimit);
  EXPECT_EQ(check_zero_rtt_parameters(remembered, TransportParameters{}).code,
            TransportErrorCode::kProtocolViolation);
}

}  // namespace
}  // namespace dpquic::conn
