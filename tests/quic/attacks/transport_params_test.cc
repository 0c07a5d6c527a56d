// Attack: malformed quic_transport_parameters (RFC 9000 §7.4, §18): a
// duplicated parameter, a value longer than its type allows, a length
// running past the extension, a server-only parameter from a client, an
// out-of-range limit, a missing initial_source_connection_id. Each must end
// the handshake with TRANSPORT_PARAMETER_ERROR (0x08) and leave nothing
// behind on the server.
//
// The attacker is a real TLS client (crypto::TlsSession) whose ClientHello
// carries the crafted extension, sealed into a client Initial with the
// Initial keys of its DCID (RFC 9001 §5.2) and sent to our server endpoint;
// the server's Initials are opened with the same keys and their
// CONNECTION_CLOSE read.

#include "quic/wire/transport_params.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tests/quic/attacks/forged_initial.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::attacks {
namespace {

using conn::SocketAddress;
using wire::TransportErrorCode;

constexpr std::array<uint8_t, 8> kScid = {0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7};

std::vector<uint8_t> valid_parameters(bool with_scid = true) {
  return client_transport_parameters(wire::ConnectionId(kScid), with_scid);
}

// Appends one raw parameter: id, length, value (no checks).
void append_raw(std::vector<uint8_t>& bytes, uint64_t id, uint64_t length,
                std::span<const uint8_t> value) {
  std::vector<uint8_t> out(32 + value.size());
  wire::ByteWriter writer(out);
  EXPECT_TRUE(writer.write_varint(id));
  EXPECT_TRUE(writer.write_varint(length));
  EXPECT_TRUE(writer.write_bytes(value));
  bytes.insert(bytes.end(), out.begin(),
               out.begin() + static_cast<std::ptrdiff_t>(writer.position()));
}

std::vector<uint8_t> varint(uint64_t value) {
  std::vector<uint8_t> out(8);
  wire::ByteWriter writer(out);
  EXPECT_TRUE(writer.write_varint(value));
  out.resize(writer.position());
  return out;
}

class TransportParamsTest : public ::testing::Test {
 protected:
  // One connection attempt from a fresh address and DCID whose ClientHello
  // carries `parameters`; returns what the server sent back at once.
  InitialContents attempt(const std::vector<uint8_t>& parameters) {
    ++attempts_;
    const std::array<uint8_t, 8> dcid = {0xd0, 0xd1, 0xd2, 0xd3,
                                         0xd4, 0xd5, 0xd6, static_cast<uint8_t>(attempts_)};
    client_address_ = SocketAddress::ipv4(10, 0, 0, 1, static_cast<uint16_t>(40000 + attempts_));
    ForgedInitial initial =
        forge_client_initial(pair_.mb, *pair_.client_tls, wire::ConnectionId(dcid),
                             wire::ConnectionId(kScid), parameters);
    InitialContents contents;
    if (initial.datagram.empty()) return contents;
    const conn::PathAddresses path{pair_.options.server_address, client_address_};
    pair_.server->handle_datagram(now_, path, transmit::EcnCodepoint::kNotEct, initial.datagram);
    for (harness::SentDatagram& sent : harness::collect_transmit(*pair_.server, now_)) {
      open_server_initials(pair_.mb, *initial.keys, kScid.size(), sent.bytes, contents);
    }
    drain_events();
    return contents;
  }

  void drain_events() {
    endpoint::EndpointEvent event;
    while (pair_.server->poll_event(event)) {
    }
  }

  // Lets every closing connection run out its closing period.
  void let_time_pass(Duration duration) {
    const Instant end = now_ + duration;
    while (pair_.server->poll_timeout() <= end) {
      now_ = std::max(now_, pair_.server->poll_timeout());
      pair_.server->handle_timeout(now_);
      (void)harness::collect_transmit(*pair_.server, now_);
      drain_events();
    }
    now_ = end;
  }

  void expect_transport_parameter_error(const std::vector<uint8_t>& parameters) {
    const size_t blocks_before = pair_.server->core().blocks->blocks_in_use();
    const InitialContents answer = attempt(parameters);
    ASSERT_TRUE(answer.close_error.has_value()) << "no CONNECTION_CLOSE in the server's Initials";
    EXPECT_EQ(*answer.close_error,
              static_cast<uint64_t>(TransportErrorCode::kTransportParameterError));
    // Nothing survives the closing period.
    let_time_pass(5 * kSecond);
    EXPECT_EQ(pair_.server->connection_count(), 0u);
    EXPECT_EQ(pair_.server->half_open_count(), 0u);
    EXPECT_EQ(pair_.server->core().blocks->blocks_in_use(), blocks_before);
  }

  harness::QuicPair pair_;
  Instant now_ = harness::kSimulationStart;
  SocketAddress client_address_;
  int attempts_ = 0;
};

TEST_F(TransportParamsTest, ValidParametersGetAServerHello) {
  const InitialContents answer = attempt(valid_parameters());
  EXPECT_FALSE(answer.close_error.has_value());
  EXPECT_TRUE(answer.crypto);
  EXPECT_EQ(pair_.server->connection_count(), 1u);
}

TEST_F(TransportParamsTest, DuplicateParameter) {
  std::vector<uint8_t> params = valid_parameters();
  const std::vector<uint8_t> value = varint(1 << 20);
  append_raw(params, 0x04, value.size(), value);  // initial_max_data again
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, IntegerValueLongerThanItsVarint) {
  // max_ack_delay (0x0b) as a 1-byte varint followed by 8 more bytes.
  std::vector<uint8_t> params = valid_parameters();
  std::vector<uint8_t> value = varint(25);
  value.resize(9, 0xee);
  append_raw(params, 0x0b, value.size(), value);
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, ConnectionIdLongerThanTwentyBytes) {
  std::vector<uint8_t> params = valid_parameters(false);
  const std::vector<uint8_t> cid(21, 0xc0);
  append_raw(params, 0x0f, cid.size(), cid);  // initial_source_connection_id
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, LengthRunningPastTheExtension) {
  std::vector<uint8_t> params = valid_parameters();
  const std::vector<uint8_t> value(4, 0x11);
  append_raw(params, 0x2a5c, 4000, value);  // a reserved id claiming 4000 bytes
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, ServerOnlyParameterFromAClient) {
  std::vector<uint8_t> params = valid_parameters();
  const std::vector<uint8_t> token(16, 0x77);
  append_raw(params, 0x02, token.size(), token);  // stateless_reset_token
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, StreamLimitAboveTwoToTheSixty) {
  std::vector<uint8_t> params = valid_parameters();
  const std::vector<uint8_t> value = varint((uint64_t{1} << 60) + 1);
  append_raw(params, 0x09, value.size(), value);  // initial_max_streams_uni
  expect_transport_parameter_error(params);
}

TEST_F(TransportParamsTest, MissingInitialSourceConnectionId) {
  expect_transport_parameter_error(valid_parameters(false));
}

TEST_F(TransportParamsTest, RepeatedAttemptsLeaveNothingBehind) {
  std::vector<uint8_t> params = valid_parameters();
  const std::vector<uint8_t> value = varint(1 << 20);
  append_raw(params, 0x04, value.size(), value);
  for (int i = 0; i < 20; ++i) {
    const InitialContents answer = attempt(params);
    ASSERT_TRUE(answer.close_error.has_value());
    EXPECT_EQ(*answer.close_error,
              static_cast<uint64_t>(TransportErrorCode::kTransportParameterError));
    EXPECT_LE(pair_.server->connection_count(), static_cast<size_t>(i + 1));
  }
  let_time_pass(5 * kSecond);
  EXPECT_EQ(pair_.server->connection_count(), 0u);
  EXPECT_EQ(pair_.server->stats().connections_accepted, 20u);
}

}  // namespace
}  // namespace dpquic::attacks
