// The two halves of crypto/ and the wire layer working together: a TLS 1.3
// handshake between our client and server where every CRYPTO byte travels in
// a protected QUIC packet. Each side's TlsSession installs its secrets into a
// ConnectionKeys; packets are built with quic/wire's header and frame
// encoders, protected with ConnectionKeys' write keys, and on receipt split,
// unprotected, opened and decoded before the CRYPTO data reaches TLS. Then
// 1-RTT data flows both ways, across a key update.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/certificates.h"
#include "crypto/connection_keys.h"
#include "crypto/header_protection.h"
#include "crypto/tls_context.h"
#include "crypto/tls_session.h"
#include "quic/wire/coalesced.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frame_validity.h"
#include "quic/wire/header.h"
#include "quic/wire/version.h"

namespace dpquic::crypto {
namespace {

using Bytes = std::vector<uint8_t>;
using wire::PacketType;
using wire::Role;

constexpr size_t kCidLength = 8;
constexpr size_t kMaxDatagram = 1200;
constexpr uint64_t kPto = 100'000;  // microseconds; only relative values matter

PacketType packet_type(EncryptionLevel level) {
  switch (level) {
    case EncryptionLevel::kInitial: return PacketType::kInitial;
    case EncryptionLevel::kHandshake: return PacketType::kHandshake;
    case EncryptionLevel::kEarlyData: return PacketType::kZeroRtt;
    case EncryptionLevel::kApplication: break;
  }
  return PacketType::kOneRtt;
}

EncryptionLevel encryption_level(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return EncryptionLevel::kInitial;
    case PacketType::kHandshake: return EncryptionLevel::kHandshake;
    case PacketType::kZeroRtt: return EncryptionLevel::kEarlyData;
    default: return EncryptionLevel::kApplication;
  }
}

size_t space_index(EncryptionLevel level) {
  return static_cast<size_t>(wire::packet_number_space(packet_type(level)));
}

// One end of the connection: its TLS session, its keys, and the little
// per-space state a connection keeps (next packet number, largest received,
// how much CRYPTO data arrived).
struct Peer {
  Peer(const MbManager& mb, Role role, uint32_t version, Bytes own_cid)
      : keys(mb, role, version), cid(std::move(own_cid)) {}

  ConnectionKeys keys;
  std::unique_ptr<TlsSession> tls;
  Bytes cid;       // the CID this peer issued: packets to it carry it as DCID
  Bytes peer_cid;  // the DCID this peer writes
  std::array<uint64_t, 3> next_packet_number{};
  std::array<std::optional<uint64_t>, 3> largest_received{};
  std::array<uint64_t, kEncryptionLevelCount> crypto_received{};
  std::vector<Bytes> application_data;  // payloads of received 1-RTT packets
  size_t packets_opened = 0;
  size_t packets_dropped = 0;
};

class HandshakeOverPacketsTest : public ::testing::Test {
 protected:
  void SetUp() override { run_setup(wire::kVersion1); }

  void run_setup(uint32_t version) {
    version_ = version;
    certificate_ = std::make_unique<CertificateChain>(CertificateChain::generate_self_signed());
    TlsServerConfig server_config;
    server_config.certificate = certificate_.get();
    server_context_ = TlsContext::create_server(server_config);
    TlsClientConfig client_config;
    client_config.trusted_certificates_pem = certificate_->leaf_pem();
    client_context_ = TlsContext::create_client(client_config);

    client_ = std::make_unique<Peer>(mb_, Role::kClient, version,
                                     Bytes{0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8});
    server_ = std::make_unique<Peer>(mb_, Role::kServer, version,
                                     Bytes{0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58});
    // The client's first DCID is random; Initial keys come from it on both
    // sides (RFC 9001 §5.2). The client switches to the server's CID once it
    // has seen it; the server answers to the client's SCID.
    const Bytes original_dcid = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
    client_->peer_cid = original_dcid;
    server_->peer_cid = client_->cid;
    ASSERT_TRUE(client_->keys.install_initial_keys(original_dcid));
    ASSERT_TRUE(server_->keys.install_initial_keys(original_dcid));

    client_->tls = TlsSession::create_client(*client_context_, client_->keys, "localhost");
    server_->tls = TlsSession::create_server(*server_context_, server_->keys);
    const Bytes client_params = {0x04, 0x04, 0x80, 0x10, 0x00, 0x00};
    const Bytes server_params = {0x04, 0x04, 0x80, 0x20, 0x00, 0x00};
    ASSERT_TRUE(client_->tls->set_local_transport_parameters(client_params));
    ASSERT_TRUE(server_->tls->set_local_transport_parameters(server_params));
    ASSERT_TRUE(server_->tls->set_early_data_context(server_params));
  }

  // Writes one protected packet at `level` carrying `payload` frames, padded
  // so the header protection sample fits (and, for a client Initial, so the
  // datagram reaches 1200 bytes). Returns the datagram.
  Bytes build_packet(Peer& from, EncryptionLevel level, const Bytes& frames) {
    Bytes datagram(kMaxDatagram + 64);
    wire::ByteWriter writer(datagram);
    const size_t space = space_index(level);
    const uint64_t packet_number = from.next_packet_number[space]++;
    wire::EncodedHeader header;
    if (level == EncryptionLevel::kApplication) {
      wire::ShortHeaderFields fields;
      fields.dcid = from.peer_cid;
      fields.packet_number = packet_number;
      fields.key_phase = from.keys.write_key_phase();
      EXPECT_TRUE(wire::encode_short_header(writer, fields, header));
    } else {
      wire::LongHeaderFields fields;
      fields.version = version_;
      fields.type = packet_type(level);
      fields.dcid = from.peer_cid;
      fields.scid = from.cid;
      fields.packet_number = packet_number;
      EXPECT_TRUE(wire::encode_long_header(writer, fields, header));
    }
    Bytes payload = frames;
    // RFC 9001 §5.4.2: 4 bytes of packet number plus payload cover the sample.
    const size_t min_payload =
        4 + kHeaderProtectionSampleLength - header.packet_number_length - kAeadTagLength;
    size_t target = std::max(payload.size(), min_payload);
    if (level == EncryptionLevel::kInitial && &from == client_.get()) {
      target = std::max(target, kMaxDatagram - header.header_size - kAeadTagLength);
    }
    payload.resize(target, 0x00);  // PADDING frames
    const size_t packet_size = header.header_size + payload.size() + kAeadTagLength;
    if (header.length_width != 0) {
      EXPECT_TRUE(
          wire::patch_long_header_length(datagram, header, payload.size() + kAeadTagLength));
    }
    const PacketKeys* keys = from.keys.write_keys(level);
    EXPECT_NE(keys, nullptr);
    ProtectOp op;
    op.keys = keys;
    op.packet_number = packet_number;
    op.packet = std::span(datagram).first(packet_size);
    op.header_length = header.header_size;
    op.payload = payload;  // out of place: straight from the frame buffer
    EXPECT_EQ(protect(mb_, op), PacketStatus::kOk);
    datagram.resize(packet_size);
    return datagram;
  }

  // Sends everything TLS has queued, one packet per CRYPTO chunk.
  size_t send_handshake_data(Peer& from, Peer& to, uint64_t now) {
    size_t packets = 0;
    for (EncryptionLevel level :
         {EncryptionLevel::kInitial, EncryptionLevel::kHandshake, EncryptionLevel::kApplication}) {
      while (!from.tls->pending_handshake_data(level).empty()) {
        const std::span<const uint8_t> pending = from.tls->pending_handshake_data(level);
        const uint64_t offset = from.tls->pending_offset(level);
        const size_t room = 1000;  // leaves space for header, tag and padding
        const size_t chunk =
            std::min<size_t>(pending.size(), wire::max_crypto_data_length(room, offset));
        Bytes frames(room);
        wire::ByteWriter writer(frames);
        EXPECT_TRUE(wire::encode_crypto_frame(writer, {offset, pending.first(chunk)}));
        frames.resize(writer.position());
        from.tls->consume(level, chunk);
        Bytes datagram = build_packet(from, level, frames);
        receive_datagram(to, datagram, now);
        ++packets;
      }
    }
    return packets;
  }

  // The receive path: split, remove header protection, recover the packet
  // number, pick the key, open, decode frames.
  void receive_datagram(Peer& to, Bytes& datagram, uint64_t now) {
    wire::DatagramSplitter splitter(datagram, kCidLength);
    wire::CoalescedPacket packet;
    while (splitter.next(packet)) {
      const wire::ParsedHeader& parsed = packet.header;
      ASSERT_TRUE(parsed.has_packet_number());
      const EncryptionLevel level = encryption_level(parsed.type);
      const HeaderProtectionKey* hp = to.keys.read_header_protection(level);
      if (hp == nullptr) {
        ++to.packets_dropped;  // keys not yet available or already discarded
        continue;
      }
      std::span<uint8_t> bytes = std::span(datagram).subspan(packet.offset, parsed.packet_size);
      HeaderProtectionMask mask;
      ASSERT_TRUE(
          compute_mask(mb_, *hp, bytes.data() + sample_offset(parsed.packet_number_offset), mask));
      ASSERT_NE(remove_header_protection(bytes, parsed.packet_number_offset, mask), 0u);
      const size_t space = space_index(level);
      wire::PacketNumberFields fields;
      ASSERT_EQ(
          wire::decode_packet_number_fields(bytes, parsed, to.largest_received[space], fields),
          wire::WireError::kOk);
      const ReadKeySelection selection =
          to.keys.select_read_key(level, fields.key_phase, fields.packet_number, now);
      ASSERT_NE(selection.key, nullptr);
      OpenOp open_op;
      open_op.key = selection.key;
      open_op.packet_number = fields.packet_number;
      open_op.header = bytes.first(fields.payload_offset);
      open_op.ciphertext = bytes.subspan(fields.payload_offset, fields.payload_size);
      open_op.out = bytes.subspan(fields.payload_offset, fields.payload_size - kAeadTagLength);
      if (open(mb_, open_op) != PacketStatus::kOk) {
        ++to.packets_dropped;
        continue;
      }
      ++to.packets_opened;
      ASSERT_TRUE(
          to.keys.on_packet_opened(level, selection.generation, fields.packet_number, now, kPto));
      to.largest_received[space] =
          std::max(to.largest_received[space].value_or(0), fields.packet_number);
      if (parsed.long_header && parsed.type == PacketType::kInitial && &to == client_.get()) {
        to.peer_cid.assign(parsed.scid.begin(), parsed.scid.end());
      }
      handle_frames(to, level, open_op.out);
    }
    EXPECT_EQ(splitter.error(), wire::WireError::kOk);
  }

  void handle_frames(Peer& to, EncryptionLevel level, std::span<const uint8_t> plaintext) {
    wire::FrameDecoder decoder(plaintext);
    wire::Frame frame;
    while (!decoder.done()) {
      ASSERT_EQ(decoder.next(frame), wire::WireError::kOk);
      ASSERT_EQ(wire::check_frame_allowed(frame.type, packet_type(level)), wire::WireError::kOk);
      if (frame.type == wire::FrameType::kCrypto) {
        // No loss or reordering here, so data arrives in order.
        const size_t index = static_cast<size_t>(level);
        ASSERT_EQ(frame.crypto.offset, to.crypto_received[index]);
        to.crypto_received[index] += frame.crypto.data.size();
        ASSERT_TRUE(to.tls->provide_handshake_data(level, frame.crypto.data));
        to.tls->advance();
      } else if (frame.type == wire::FrameType::kStream) {
        to.application_data.emplace_back(frame.stream.data.begin(), frame.stream.data.end());
      } else {
        ASSERT_EQ(frame.type, wire::FrameType::kPadding);
      }
    }
  }

  void run_handshake(uint64_t now) {
    client_->tls->advance();
    for (int round = 0; round < 8; ++round) {
      size_t packets = send_handshake_data(*client_, *server_, now);
      packets += send_handshake_data(*server_, *client_, now);
      if (packets == 0) break;
    }
  }

  Bytes stream_packet(Peer& from, uint64_t stream_id, const std::string& text) {
    Bytes frames(text.size() + 32);
    wire::ByteWriter writer(frames);
    wire::StreamFrame stream;
    stream.stream_id = stream_id;
    stream.has_length = true;
    stream.data = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    EXPECT_TRUE(wire::encode_stream_frame(writer, stream));
    frames.resize(writer.position());
    return build_packet(from, EncryptionLevel::kApplication, frames);
  }

  std::string last_text(const Peer& peer) {
    if (peer.application_data.empty()) return "";
    const Bytes& last = peer.application_data.back();
    return std::string(last.begin(), last.end());
  }

  MbManager mb_;
  uint32_t version_ = wire::kVersion1;
  std::unique_ptr<CertificateChain> certificate_;
  std::unique_ptr<TlsContext> server_context_;
  std::unique_ptr<TlsContext> client_context_;
  std::unique_ptr<Peer> client_;
  std::unique_ptr<Peer> server_;
};

TEST_F(HandshakeOverPacketsTest, HandshakeCompletesOverProtectedPackets) {
  run_handshake(0);
  ASSERT_TRUE(client_->tls->handshake_complete()) << client_->tls->error_reason();
  ASSERT_TRUE(server_->tls->handshake_complete()) << server_->tls->error_reason();
  EXPECT_EQ(client_->tls->alpn(), "h3");
  EXPECT_EQ(server_->tls->alpn(), "h3");
  EXPECT_EQ(client_->packets_dropped + server_->packets_dropped, 0u);
  // CRYPTO data went at Initial and Handshake levels in both directions.
  for (Peer* peer : {client_.get(), server_.get()}) {
    EXPECT_GT(peer->crypto_received[static_cast<size_t>(EncryptionLevel::kInitial)], 0u);
    EXPECT_GT(peer->crypto_received[static_cast<size_t>(EncryptionLevel::kHandshake)], 0u);
    EXPECT_TRUE(peer->keys.has_keys(EncryptionLevel::kApplication, Direction::kRead));
    EXPECT_TRUE(peer->keys.has_keys(EncryptionLevel::kApplication, Direction::kWrite));
  }
  EXPECT_EQ(client_->peer_cid, server_->cid);
}

TEST_F(HandshakeOverPacketsTest, ApplicationDataFlowsBothWaysAndSurvivesKeyUpdate) {
  run_handshake(0);
  ASSERT_TRUE(client_->tls->handshake_complete() && server_->tls->handshake_complete());

  Bytes request = stream_packet(*client_, 0, "GET /index.html");
  receive_datagram(*server_, request, 1000);
  EXPECT_EQ(last_text(*server_), "GET /index.html");
  Bytes response = stream_packet(*server_, 0, "200 OK: hello");
  receive_datagram(*client_, response, 1000);
  EXPECT_EQ(last_text(*client_), "200 OK: hello");

  // The client updates its keys; the server follows on the first packet in
  // the new phase and answers in it (RFC 9001 §6.1-6.2).
  ASSERT_TRUE(client_->keys.initiate_key_update());
  EXPECT_TRUE(client_->keys.write_key_phase());
  Bytes updated = stream_packet(*client_, 4, "after update");
  receive_datagram(*server_, updated, 2000);
  EXPECT_EQ(last_text(*server_), "after update");
  EXPECT_TRUE(server_->keys.read_key_phase());
  EXPECT_TRUE(server_->keys.write_key_phase());
  Bytes answer = stream_packet(*server_, 4, "answered in phase 1");
  receive_datagram(*client_, answer, 2000);
  EXPECT_EQ(last_text(*client_), "answered in phase 1");
  EXPECT_EQ(client_->packets_dropped + server_->packets_dropped, 0u);
}

TEST_F(HandshakeOverPacketsTest, DiscardedInitialKeysDropLateInitialPackets) {
  run_handshake(0);
  ASSERT_TRUE(server_->tls->handshake_complete());
  // A late client Initial built before the client discards its keys.
  Bytes late = build_packet(*client_, EncryptionLevel::kInitial, Bytes{0x01});  // PING
  server_->keys.discard(EncryptionLevel::kInitial);
  EXPECT_FALSE(server_->keys.has_keys(EncryptionLevel::kInitial, Direction::kRead));
  EXPECT_TRUE(server_->keys.secret(EncryptionLevel::kInitial, Direction::kRead).empty());
  const size_t dropped = server_->packets_dropped;
  receive_datagram(*server_, late, 0);
  EXPECT_EQ(server_->packets_dropped, dropped + 1);
}

TEST_F(HandshakeOverPacketsTest, CorruptedPacketIsDroppedAndTheNextOneOpens) {
  run_handshake(0);
  ASSERT_TRUE(server_->tls->handshake_complete());
  Bytes corrupted = stream_packet(*client_, 0, "corrupted on the way");
  corrupted[corrupted.size() - 20] ^= 0x01;
  const size_t opened = server_->packets_opened;
  receive_datagram(*server_, corrupted, 0);
  EXPECT_EQ(server_->packets_opened, opened);
  Bytes intact = stream_packet(*client_, 0, "intact");
  receive_datagram(*server_, intact, 0);
  EXPECT_EQ(server_->packets_opened, opened + 1);
  EXPECT_EQ(last_text(*server_), "intact");
}

TEST_F(HandshakeOverPacketsTest, Version2HandshakeCompletes) {
  client_.reset();
  server_.reset();
  run_setup(wire::kVersion2);
  run_handshake(0);
  EXPECT_TRUE(client_->tls->handshake_complete());
  EXPECT_TRUE(server_->tls->handshake_complete());
  Bytes request = stream_packet(*client_, 0, "v2 data");
  receive_datagram(*server_, request, 0);
  EXPECT_EQ(last_text(*server_), "v2 data");
}

}  // namespace
}  // namespace dpquic::crypto
