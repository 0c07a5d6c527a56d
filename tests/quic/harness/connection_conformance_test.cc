// Connection behaviour checked against RFC 9000, 9001 and 9002: paths and
// their validation, closes during and after the handshake, ACK-only
// packets. Each test drives
// real endpoints; where a hostile or unusual peer is needed, 1-RTT packets
// are forged with the real connection's keys (as the peer itself could send
// them) and the output is decrypted with the other side's keys.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/connection_keys.h"
#include "crypto/header_protection.h"
#include "quic/conn/packet_unprotect.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"
#include "tests/quic/harness/direct_drive.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using crypto::EncryptionLevel;

const SocketAddress kElsewhere = SocketAddress::ipv4(10, 0, 0, 9, 40000);

// One 1-RTT packet with the given frames, protected with `sender`'s current
// write keys: what the sender's peer could have sent itself.
class ForgedPacket final : public transmit::TransmitSource {
 public:
  ForgedPacket(const conn::Connection& sender, const wire::ConnectionId& dcid,
               uint64_t packet_number, std::span<const uint8_t> frames)
      : sender_(sender), dcid_(dcid), packet_number_(packet_number), frames_(frames) {}

  bool next_packet(EncryptionLevel level, const transmit::SendAllowance&,
                   transmit::PacketHeader& header) override {
    if (level != EncryptionLevel::kApplication || done_) return false;
    header.keys = sender_.keys().write_keys(EncryptionLevel::kApplication);
    header.long_header = false;
    wire::ShortHeaderFields fields;
    fields.dcid = dcid_.span();
    fields.packet_number = packet_number_;
    fields.packet_number_length = 4;
    fields.key_phase = sender_.keys().write_key_phase();
    header.short_fields = fields;
    return header.keys != nullptr;
  }
  transmit::PacketContents write_frames(EncryptionLevel, transmit::PacketPayloadWriter& writer,
                                        const transmit::SendAllowance&) override {
    done_ = true;
    EXPECT_TRUE(writer.frames().write_bytes(frames_));
    transmit::PacketContents contents;
    contents.ack_eliciting = true;
    contents.in_flight = true;
    return contents;
  }
  void on_packet_sent(const transmit::SentPacketInfo&) override {}

 private:
  const conn::Connection& sender_;
  wire::ConnectionId dcid_;
  uint64_t packet_number_;
  std::span<const uint8_t> frames_;
  bool done_ = false;
};

std::vector<uint8_t> forge(const crypto::MbManager& mb, const conn::Connection& sender,
                           const wire::ConnectionId& dcid, uint64_t packet_number,
                           std::span<const uint8_t> frames) {
  transmit::CryptoPacketSealer sealer(mb);
  auto builder = std::make_unique<transmit::BurstBuilder>(sealer);
  std::vector<uint8_t> storage(1500);
  std::array<uint8_t*, 1> slices = {storage.data()};
  transmit::BurstBuffers buffers;
  buffers.datagrams = slices;
  buffers.capacity = storage.size();
  buffers.segment_size = 1472;
  buffers.mode = transmit::BurstMode::kIndependent;
  ForgedPacket source(sender, dcid, packet_number, frames);
  transmit::BurstDescriptor out;
  EXPECT_EQ(builder->build(source, buffers, {}, out), transmit::BurstStatus::kOk);
  EXPECT_EQ(out.datagram_count, 1u);
  storage.resize(out.datagram_count == 1 ? out.lengths[0] : 0);
  return storage;
}

std::vector<uint8_t> encode_frames(std::initializer_list<wire::Frame> frames, size_t pad_to = 0) {
  std::vector<uint8_t> bytes(1400);
  wire::ByteWriter writer(bytes);
  for (const wire::Frame& frame : frames) EXPECT_TRUE(wire::encode_frame(writer, frame));
  if (pad_to > writer.position()) {
    EXPECT_TRUE(wire::encode_padding(writer, pad_to - writer.position()));
  }
  bytes.resize(writer.position());
  return bytes;
}

wire::Frame path_challenge(uint8_t seed) {
  wire::Frame frame;
  frame.type = wire::FrameType::kPathChallenge;
  frame.path_challenge = wire::PathDataFrame{};
  for (size_t i = 0; i < 8; ++i) frame.path_challenge.data[i] = static_cast<uint8_t>(seed + i);
  return frame;
}

wire::Frame ping() {
  wire::Frame frame;
  frame.type = wire::FrameType::kPing;
  return frame;
}

// Decrypts 1-RTT packets sent to `receiver` with a copy of its read keys.
class Opener {
 public:
  Opener(const crypto::MbManager& mb, const conn::Connection& receiver)
      : mb_(mb),
        keys_(mb, receiver.role(), receiver.version()),
        cid_length_(receiver.role() == wire::Role::kClient
                        ? receiver.peer_parameters().initial_source_connection_id.size()
                        : 0) {
    EXPECT_TRUE(keys_.install_secret(
        EncryptionLevel::kApplication, crypto::Direction::kRead, *receiver.tls()->cipher_suite(),
        receiver.keys().secret(EncryptionLevel::kApplication, crypto::Direction::kRead)));
  }
  void set_cid_length(size_t length) { cid_length_ = length; }

  // The frame types of the datagram's 1-RTT packet (empty if it has none or
  // it does not open); PATH_RESPONSE data goes to `responses`.
  std::vector<wire::FrameType> open(std::vector<uint8_t> datagram,
                                    std::vector<std::array<uint8_t, 8>>* responses = nullptr,
                                    std::optional<uint64_t>* packet_number = nullptr) {
    std::vector<wire::FrameType> types;
    std::span<uint8_t> rest(datagram);
    while (!rest.empty()) {
      wire::ParsedHeader header;
      if (wire::parse_packet_header(rest, cid_length_, header) != wire::WireError::kOk) break;
      std::span<uint8_t> packet = rest.first(header.packet_size);
      rest = rest.subspan(header.packet_size);
      if (header.long_header) continue;
      const auto* hp = keys_.read_header_protection(EncryptionLevel::kApplication);
      wire::PacketNumberFields fields;
      if (hp == nullptr ||
          conn::remove_packet_header_protection(mb_, *hp, packet, header, largest_, fields) ==
              wire::WireError::kDrop) {
        break;
      }
      const auto selection = keys_.select_read_key(EncryptionLevel::kApplication, fields.key_phase,
                                                   fields.packet_number, 0);
      std::span<const uint8_t> frames;
      if (selection.key == nullptr ||
          conn::open_packet_payload(mb_, *selection.key, packet, fields, frames) !=
              crypto::PacketStatus::kOk) {
        break;
      }
      if (!largest_ || fields.packet_number > *largest_) largest_ = fields.packet_number;
      if (packet_number != nullptr) *packet_number = fields.packet_number;
      wire::FrameDecoder decoder(frames);
      wire::Frame frame;
      while (!decoder.done() && decoder.next(frame) == wire::WireError::kOk) {
        types.push_back(frame.type);
        if (frame.type == wire::FrameType::kPathResponse && responses != nullptr) {
          responses->push_back(frame.path_response.data);
        }
      }
    }
    return types;
  }

 private:
  const crypto::MbManager& mb_;
  crypto::ConnectionKeys keys_;
  size_t cid_length_;
  std::optional<uint64_t> largest_;
};

// An ACK frame for every packet number in `received`.
void write_ack(wire::ByteWriter& writer, std::vector<uint64_t> received) {
  std::sort(received.begin(), received.end(), std::greater<>());
  std::vector<wire::AckRange> ranges;
  for (const uint64_t pn : received) {
    if (!ranges.empty() && ranges.back().smallest == pn) continue;
    if (!ranges.empty() && ranges.back().smallest == pn + 1) {
      ranges.back().smallest = pn;
    } else {
      ranges.push_back({pn, pn});
    }
  }
  EXPECT_TRUE(wire::encode_ack_frame(writer, ranges, 0));
}

// A pair whose handshake is confirmed on both sides and whose traffic has
// settled; the tests then drive the endpoints by hand.
class ConnectionConformanceTest : public ::testing::Test {
 protected:
  void establish() {
    handle_ = pair_.connect();
    ASSERT_TRUE(pair_.run_until([&] {
      conn::Connection* c = pair_.client_connection(handle_);
      conn::Connection* s = pair_.server_connection();
      return c != nullptr && s != nullptr && c->handshake_confirmed() && s->handshake_confirmed();
    }));
    (void)pair_.run_until([] { return false; }, 500 * kMillisecond);
    client_ = pair_.client_connection(handle_);
    server_ = pair_.server_connection();
    ASSERT_NE(client_, nullptr);
    ASSERT_NE(server_, nullptr);
    now_ = pair_.simulator->now();
    client_pn_ = client_->stats().packets_sent + 100;
  }

  endpoint::ConnectionHandle server_handle() {
    for (endpoint::ConnectionHandle h = 0; h < pair_.options.server.max_connections; ++h) {
      if (pair_.server->connection(h) != nullptr) return h;
    }
    ADD_FAILURE() << "no server connection";
    return 0;
  }

  // A 1-RTT datagram from the client (forged with its keys) to the server,
  // arriving from `from`.
  void client_sends(std::span<const uint8_t> frames, const SocketAddress& from) {
    std::vector<uint8_t> datagram =
        forge(pair_.mb, *client_, client_->peer_parameters().initial_source_connection_id,
              client_pn_++, frames);
    pair_.server->handle_datagram(now_, conn::PathAddresses{pair_.options.server_address, from},
                                  transmit::EcnCodepoint::kNotEct, datagram);
  }

  // Runs the server alone (its output is lost) for `duration`.
  void run_server_alone(Duration duration, Duration step = 5 * kMillisecond) {
    const Instant end = now_ + duration;
    while (now_ < end) {
      now_ += step;
      if (pair_.server->poll_timeout() <= now_) pair_.server->handle_timeout(now_);
      (void)collect_transmit(*pair_.server, now_);
    }
  }

  transmit::ChunkPool pool_{4096, 4};  // outlives the connections holding its chunks
  QuicPair pair_;
  endpoint::ConnectionHandle handle_ = 0;
  conn::Connection* client_ = nullptr;
  conn::Connection* server_ = nullptr;
  Instant now_ = 0;
  uint64_t client_pn_ = 0;
};

// RFC 9000 §9: "If a client receives packets from an unknown server address,
// the client MUST discard these packets."
TEST_F(ConnectionConformanceTest, ClientDiscardsPacketsFromAnUnknownServerAddress) {
  establish();
  wire::Frame close;
  close.type = wire::FrameType::kConnectionCloseApplication;
  close.connection_close = wire::ConnectionCloseFrame{};
  close.connection_close.error_code = 7;
  const std::vector<uint8_t> frames = encode_frames({close});
  const wire::ConnectionId client_cid = server_->peer_parameters().initial_source_connection_id;
  uint64_t server_pn = server_->stats().packets_sent + 100;

  std::vector<uint8_t> from_elsewhere = forge(pair_.mb, *server_, client_cid, server_pn++, frames);
  pair_.client->handle_datagram(now_, conn::PathAddresses{pair_.options.client_address, kElsewhere},
                                transmit::EcnCodepoint::kNotEct, from_elsewhere);
  EXPECT_EQ(client_->state(), conn::ConnectionState::kEstablished);

  // The same packet from the server's address is processed: the forgery is
  // sound, only the address made the difference.
  std::vector<uint8_t> from_server = forge(pair_.mb, *server_, client_cid, server_pn++, frames);
  pair_.client->handle_datagram(
      now_, conn::PathAddresses{pair_.options.client_address, pair_.options.server_address},
      transmit::EcnCodepoint::kNotEct, from_server);
  EXPECT_EQ(client_->state(), conn::ConnectionState::kDraining);
  EXPECT_EQ(client_->close_reason(), conn::CloseReason::kPeerClose);
  EXPECT_EQ(client_->close_error_code(), 7u);
}

// RFC 9000 §8.2.2: "The PATH_RESPONSE frame MUST be sent on the network path
// where the PATH_CHALLENGE frame was received", also when that path is new
// to the server.
TEST_F(ConnectionConformanceTest, PathResponseGoesOutOnThePathTheChallengeCameFrom) {
  establish();
  const std::vector<uint8_t> frames = encode_frames({path_challenge(0x30)}, 1200);
  client_sends(frames, kElsewhere);

  Opener opener(pair_.mb, *client_);
  bool answered_on_new_path = false;
  for (const SentDatagram& d : collect_transmit(*pair_.server, now_)) {
    std::vector<std::array<uint8_t, 8>> responses;
    (void)opener.open(d.bytes, &responses);
    for (const auto& data : responses) {
      EXPECT_EQ(data, path_challenge(0x30).path_challenge.data);
      EXPECT_EQ(d.path.remote, kElsewhere) << "PATH_RESPONSE sent to the old address";
      if (d.path.remote == kElsewhere) {
        answered_on_new_path = true;
        EXPECT_GE(d.bytes.size(), 1200u);  // §8.2.2: expanded to 1200 bytes
      }
    }
  }
  EXPECT_TRUE(answered_on_new_path);
  // A probe does not move the connection (§9.1).
  EXPECT_EQ(server_->active_path().remote, pair_.options.client_address);
}

// RFC 9000 §9.3.2: "an endpoint MUST revert to using the last validated peer
// address when validation of a new peer address fails". A single forwarded
// (or spoofed) non-probing packet must not be able to close the connection.
TEST_F(ConnectionConformanceTest, FailedValidationOfANewPeerAddressRevertsToTheValidatedOne) {
  establish();
  const std::vector<uint8_t> frames = encode_frames({ping()}, 1200);
  client_sends(frames, kElsewhere);
  EXPECT_EQ(server_->active_path().remote, kElsewhere);  // §9.3: it migrates at once
  // Nobody answers on the new address; the old path's answers are lost too.
  run_server_alone(2 * kSecond);
  EXPECT_EQ(server_->state(), conn::ConnectionState::kEstablished)
      << "closed with error " << server_->close_error_code();
  EXPECT_EQ(server_->active_path().remote, pair_.options.client_address);
}

// RFC 9000 §8.1 limits what a server sends to an unvalidated address; being
// at that limit on a probed second path must not stop loss recovery on the
// validated active path (RFC 9002 §6.2.2.1 only suspends the PTO for a
// server blocked on the path it sends on).
TEST_F(ConnectionConformanceTest, ProbeOnASecondPathDoesNotStopTheActivePathsLossTimer) {
  establish();
  const std::vector<uint8_t> probe = encode_frames({path_challenge(0x50)});
  client_sends(probe, kElsewhere);
  const auto to_new_path = collect_transmit(*pair_.server, now_);
  ASSERT_FALSE(to_new_path.empty());
  // Its output to the new path used up that path's 3x budget.
  size_t sent_to_new_path = 0;
  for (const auto& d : to_new_path) {
    if (d.path.remote == kElsewhere) sent_to_new_path += d.bytes.size();
  }
  EXPECT_GT(sent_to_new_path, 0u);

  // Now data on the (validated) active path, all lost.
  const auto handle = server_handle();
  const auto stream = pair_.server->open_stream(handle, conn::StreamDirection::kUnidirectional);
  ASSERT_TRUE(stream.has_value());
  std::vector<uint8_t> bytes(1000, 0x5a);
  ASSERT_EQ(pair_.server->send(handle, *stream, pool_.copy_from(bytes), true),
            conn::SendResult::kOk);
  bool sent_on_active = false;
  for (const auto& d : collect_transmit(*pair_.server, now_)) {
    if (d.path.remote == pair_.options.client_address) sent_on_active = true;
  }
  ASSERT_TRUE(sent_on_active);
  EXPECT_GT(server_->recovery().bytes_in_flight(), 0u);
  EXPECT_NE(server_->recovery().timer(), kNever) << "no PTO armed for lost data";
}

// RFC 9000 §10.2.3: a server that closes before it knows the client has
// Handshake keys sends CONNECTION_CLOSE in an Initial packet too, so the
// client can read it.
TEST_F(ConnectionConformanceTest, ServerCloseDuringTheHandshakeReachesAClientWithoutHandshakeKeys) {
  handle_ = pair_.connect();
  now_ = pair_.simulator->now();
  for (const SentDatagram& d : collect_transmit(*pair_.client, now_)) {
    deliver(*pair_.server, now_, d, pair_.options.client_address);
  }
  server_ = pair_.server_connection();
  ASSERT_NE(server_, nullptr);
  ASSERT_TRUE(server_->keys().has_keys(EncryptionLevel::kHandshake, crypto::Direction::kWrite));
  pair_.server->close(now_, server_handle(), 0x55, "refused");
  ASSERT_EQ(server_->state(), conn::ConnectionState::kClosing);

  client_ = pair_.client_connection(handle_);
  ASSERT_FALSE(client_->keys().has_keys(EncryptionLevel::kHandshake, crypto::Direction::kRead));
  for (const SentDatagram& d : collect_transmit(*pair_.server, now_)) {
    deliver(*pair_.client, now_, d, pair_.options.server_address);
  }
  EXPECT_EQ(client_->state(), conn::ConnectionState::kDraining);
  EXPECT_EQ(client_->close_reason(), conn::CloseReason::kPeerClose);
  // An application close outside 1-RTT becomes APPLICATION_ERROR.
  EXPECT_EQ(client_->close_error_code(),
            static_cast<uint64_t>(wire::TransportErrorCode::kApplicationError));
}

// RFC 9000 §13.2.4: a peer MAY leave ACK-only packets unacknowledged as long
// as it only receives those. Each stays in the sent-packet ring until a later
// packet is acknowledged, so a peer that only sends PINGs would grow the
// server's ring for the rest of the connection (up to its bound, which then
// closes the connection); an occasional PING makes the server's ACKs
// acknowledged.
TEST_F(ConnectionConformanceTest, AckOnlyPacketsAreAcknowledgedEventuallyByAPeerThatMayIgnoreThem) {
  establish();
  Opener opener(pair_.mb, *client_);
  std::vector<uint64_t> received;
  bool ack_owed = false;  // an ack-eliciting server packet arrived
  size_t server_packets = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> frames(256);
    wire::ByteWriter writer(frames);
    if (ack_owed) write_ack(writer, received);
    ack_owed = false;
    wire::Frame frame = ping();
    EXPECT_TRUE(wire::encode_frame(writer, frame));
    frames.resize(writer.position());
    client_sends(frames, pair_.options.client_address);
    now_ += 30 * kMillisecond;
    if (pair_.server->poll_timeout() <= now_) pair_.server->handle_timeout(now_);
    for (const SentDatagram& d : collect_transmit(*pair_.server, now_)) {
      std::optional<uint64_t> pn;
      const auto types = opener.open(d.bytes, nullptr, &pn);
      ASSERT_TRUE(pn.has_value());
      ++server_packets;
      received.push_back(*pn);
      for (const wire::FrameType type : types) {
        if (type != wire::FrameType::kAck && type != wire::FrameType::kAckEcn &&
            type != wire::FrameType::kPadding) {
          ack_owed = true;
        }
      }
    }
  }
  EXPECT_GE(server_packets, 300u);  // every PING was acknowledged
  EXPECT_EQ(server_->state(), conn::ConnectionState::kEstablished);
  EXPECT_LT(server_->recovery().sent(wire::PacketNumberSpace::kApplication).size(), 64u);
}

// A close by the application of a connection the peer already closed
// changes nothing: the peer's close stays the reason reported.
TEST_F(ConnectionConformanceTest, LocalCloseAfterThePeerClosedKeepsThePeersReason) {
  establish();
  pair_.client->close(now_, handle_, 0x21, "bye");
  for (const SentDatagram& d : collect_transmit(*pair_.client, now_)) {
    deliver(*pair_.server, now_, d, pair_.options.client_address);
  }
  ASSERT_EQ(server_->state(), conn::ConnectionState::kDraining);
  ASSERT_EQ(server_->close_reason(), conn::CloseReason::kPeerClose);
  pair_.server->close(now_, server_handle(), 0x33, "late");
  EXPECT_EQ(server_->state(), conn::ConnectionState::kDraining);
  EXPECT_EQ(server_->close_reason(), conn::CloseReason::kPeerClose);
  EXPECT_EQ(server_->close_error_code(), 0x21u);
}

}  // namespace
}  // namespace dpquic::harness
