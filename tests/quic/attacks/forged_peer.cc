#include "tests/quic/attacks/forged_peer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::attacks {

using crypto::Direction;
using crypto::EncryptionLevel;

namespace {

constexpr size_t kSegment = 1472;
constexpr size_t kBurst = 16;

}  // namespace

// --- Frames ------------------------------------------------------------------------

std::vector<wire::Frame> VictimPacket::frames() const {
  std::vector<wire::Frame> out;
  wire::FrameDecoder decoder(payload);
  wire::Frame frame;
  while (!decoder.done() && decoder.next(frame) == wire::WireError::kOk) out.push_back(frame);
  return out;
}

size_t VictimPacket::count(wire::FrameType type) const {
  size_t n = 0;
  for (const wire::Frame& frame : frames()) n += frame.type == type ? 1 : 0;
  return n;
}

bool FrameBuffer::add(const wire::Frame& frame) { return wire::encode_frame(writer_, frame); }

bool FrameBuffer::add_ack(std::span<const wire::AckRange> ranges, uint64_t ack_delay) {
  return wire::encode_ack_frame(writer_, ranges, ack_delay);
}

bool FrameBuffer::pad_to(size_t size) {
  return size <= writer_.position() || wire::encode_padding(writer_, size - writer_.position());
}

wire::Frame ping_frame() {
  wire::Frame frame;
  frame.type = wire::FrameType::kPing;
  return frame;
}

wire::Frame path_challenge_frame(uint64_t value) {
  wire::Frame frame;
  frame.type = wire::FrameType::kPathChallenge;
  frame.path_challenge = wire::PathDataFrame{};
  for (size_t i = 0; i < 8; ++i) {
    frame.path_challenge.data[i] = static_cast<uint8_t>(value >> (56 - 8 * i));
  }
  return frame;
}

wire::Frame new_connection_id_frame(uint64_t sequence, uint64_t retire_prior_to,
                                    std::span<const uint8_t> cid) {
  wire::Frame frame;
  frame.type = wire::FrameType::kNewConnectionId;
  frame.new_connection_id = wire::NewConnectionIdFrame{};
  frame.new_connection_id.sequence_number = sequence;
  frame.new_connection_id.retire_prior_to = retire_prior_to;
  frame.new_connection_id.connection_id = cid;
  for (size_t i = 0; i < frame.new_connection_id.stateless_reset_token.size(); ++i) {
    frame.new_connection_id.stateless_reset_token[i] = static_cast<uint8_t>(sequence * 31 + i);
  }
  return frame;
}

wire::Frame crypto_frame(uint64_t offset, std::span<const uint8_t> data) {
  wire::Frame frame;
  frame.type = wire::FrameType::kCrypto;
  frame.crypto = wire::CryptoFrame{offset, data};
  return frame;
}

wire::Frame stream_frame(uint64_t stream_id, uint64_t offset, std::span<const uint8_t> data,
                         bool fin) {
  wire::Frame frame;
  frame.type = wire::FrameType::kStream;
  frame.stream = wire::StreamFrame{};
  frame.stream.stream_id = stream_id;
  frame.stream.offset = offset;
  frame.stream.data = data;
  frame.stream.fin = fin;
  frame.stream.has_length = true;
  return frame;
}

// --- ForgedPeer ----------------------------------------------------------------------

ForgedPeer::ForgedPeer(Side impersonated, harness::PairOptions options)
    : pair_(std::move(options)),
      impersonated_(impersonated),
      datagram_(1500),
      transmit_(kBurst, kSegment) {}

void ForgedPeer::establish_download(harness::PerfServer& server, harness::PerfClient& client,
                                    uint64_t bytes) {
  harness::attach(pair_, server, client);
  ASSERT_NO_FATAL_FAILURE(
      establish([&](endpoint::ConnectionHandle handle) { client.request(handle, bytes); }));
  set_victim_application([&server](Instant now) { server.run(now); });
}

void ForgedPeer::establish(const std::function<void(endpoint::ConnectionHandle)>& after_connect) {
  client_handle_ = pair_.connect();
  if (after_connect) after_connect(client_handle_);
  ASSERT_TRUE(pair_.run_until([&] {
    conn::Connection* c = pair_.client_connection(client_handle_);
    conn::Connection* s = pair_.server_connection();
    return c != nullptr && s != nullptr && c->handshake_confirmed() && s->handshake_confirmed();
  }));
  // Let the last ACKs and NEW_CONNECTION_IDs cross.
  (void)pair_.run_until([] { return false; }, 300 * kMillisecond);
  take_over();
}

endpoint::Endpoint& ForgedPeer::victim_endpoint() {
  return impersonated_ == Side::kClient ? *pair_.server : *pair_.client;
}

conn::Connection* ForgedPeer::victim() { return victim_endpoint().connection(victim_handle_); }

void ForgedPeer::take_over() {
  conn::Connection* client = pair_.client_connection(client_handle_);
  conn::Connection* server = pair_.server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  conn::Connection* own = impersonated_ == Side::kClient ? client : server;
  conn::Connection* victim_connection = impersonated_ == Side::kClient ? server : client;
  if (impersonated_ == Side::kClient) {
    bool found = false;
    for (endpoint::ConnectionHandle h = 0; h < pair_.options.server.max_connections; ++h) {
      if (pair_.server->connection(h) == server) {
        victim_handle_ = h;
        found = true;
        break;
      }
    }
    ASSERT_TRUE(found);
  } else {
    victim_handle_ = client_handle_;
  }
  const auto suite = own->tls()->cipher_suite();
  ASSERT_TRUE(suite.has_value());
  ASSERT_TRUE(
      write_keys_.derive(pair_.mb, *suite, own->version(),
                         own->keys().secret(EncryptionLevel::kApplication, Direction::kWrite)));
  ASSERT_TRUE(
      read_keys_.derive(pair_.mb, *suite, own->version(),
                        own->keys().secret(EncryptionLevel::kApplication, Direction::kRead)));
  key_phase_ = own->keys().write_key_phase();
  // The victim's first CID (sequence 0) still routes to it, and the victim
  // sends to the impersonated side's first CID.
  dcid_ = own->peer_parameters().initial_source_connection_id;
  own_cid_length_ = victim_connection->peer_parameters().initial_source_connection_id.size();
  victim_path_ = victim_connection->active_path();
  // Above any number the real side used (its skips included).
  next_packet_number_ = own->stats().packets_sent + 64;
  now_ = pair_.simulator->now();
  taken_over_ = true;
}

void ForgedPeer::send(std::span<const uint8_t> frames) {
  ASSERT_TRUE(taken_over_);
  payload_.clear();
  if (auto_ack_ && !received_.empty()) {
    const std::vector<wire::AckRange> ranges = victim_packet_ranges();
    ASSERT_TRUE(payload_.add_ack(ranges));
  }
  wire::ByteWriter header_writer(datagram_);
  wire::ShortHeaderFields fields;
  fields.dcid = dcid_.span();
  fields.packet_number = next_packet_number_;
  fields.packet_number_length = 4;
  fields.key_phase = key_phase_;
  wire::EncodedHeader header;
  ASSERT_TRUE(wire::encode_short_header(header_writer, fields, header));
  const size_t payload_size = payload_.size() + frames.size();
  const size_t total = header.header_size + payload_size + crypto::kAeadTagLength;
  ASSERT_LE(total, datagram_.size()) << "forged payload too large";
  std::copy(payload_.bytes().begin(), payload_.bytes().end(),
            datagram_.begin() + static_cast<std::ptrdiff_t>(header.header_size));
  std::copy(frames.begin(), frames.end(),
            datagram_.begin() + static_cast<std::ptrdiff_t>(header.header_size + payload_.size()));
  crypto::ProtectOp op;
  op.keys = &write_keys_;
  op.packet_number = next_packet_number_;
  op.packet = std::span<uint8_t>(datagram_).first(total);
  op.header_length = header.header_size;
  op.payload = std::span<const uint8_t>(datagram_).subspan(header.header_size, payload_size);
  ASSERT_EQ(crypto::protect(pair_.mb, op), crypto::PacketStatus::kOk);
  ++next_packet_number_;
  deliver(std::span<const uint8_t>(datagram_).first(total));
}

void ForgedPeer::deliver(std::span<const uint8_t> datagram) {
  std::vector<uint8_t> copy(datagram.begin(), datagram.end());
  {
    testing::AllocationWindow window;
    victim_endpoint().handle_datagram(now_, victim_path_, transmit::EcnCodepoint::kNotEct, copy);
    victim_allocations_ += window.count();
  }
  if (collect_) collect();
}

void ForgedPeer::advance(Duration duration) {
  const Instant end = now_ + duration;
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    const Instant next = victim_endpoint().poll_timeout();
    if (next > end) break;
    if (next > now_) now_ = next;
    {
      testing::AllocationWindow window;
      victim_endpoint().handle_timeout(now_);
      victim_allocations_ += window.count();
    }
    collect();
  }
  now_ = end;
  collect();
}

void ForgedPeer::collect() {
  if (application_) application_(now_);
  const transmit::BurstBuffers buffers = transmit_.buffers();
  for (int bursts = 0; bursts < 4096; ++bursts) {
    transmit::BurstDescriptor out;
    conn::PathAddresses path;
    bool more = false;
    {
      testing::AllocationWindow window;
      more = victim_endpoint().poll_transmit(now_, buffers, out, path);
      victim_allocations_ += window.count();
    }
    if (!more) break;
    for (size_t i = 0; i < out.datagram_count; ++i) {
      ++victim_datagrams_;
      victim_bytes_ += out.lengths[i];
      open({transmit_.datagram(i), out.lengths[i]});
    }
  }
  if (application_) return;  // it reads the events
  // The endpoint frees finished connections while their events drain.
  endpoint::EndpointEvent event;
  for (;;) {
    bool more = false;
    {
      testing::AllocationWindow window;
      more = victim_endpoint().poll_event(event);
      victim_allocations_ += window.count();
    }
    if (!more) break;
    events_.push_back(event);
  }
}

void ForgedPeer::open(std::span<uint8_t> datagram) {
  std::span<uint8_t> rest = datagram;
  while (!rest.empty()) {
    wire::ParsedHeader header;
    if (wire::parse_packet_header(rest, own_cid_length_, header) != wire::WireError::kOk) {
      ++undecryptable_;
      return;
    }
    std::span<uint8_t> packet = rest.first(header.packet_size);
    rest = rest.subspan(header.packet_size);
    if (header.long_header) {
      ++undecryptable_;  // no long-header keys after the handshake
      continue;
    }
    std::span<const uint8_t> sample;
    crypto::HeaderProtectionMask mask;
    if (wire::header_protection_sample(packet, header, sample) != wire::WireError::kOk ||
        !crypto::compute_mask(pair_.mb, read_keys_.header_protection(), sample.data(), mask) ||
        crypto::remove_header_protection(packet, header.packet_number_offset, mask) == 0) {
      ++undecryptable_;
      return;
    }
    wire::PacketNumberFields fields;
    if (wire::decode_packet_number_fields(packet, header, largest_received_, fields) ==
        wire::WireError::kDrop) {
      ++undecryptable_;
      return;
    }
    std::span<uint8_t> body = packet.subspan(fields.payload_offset, fields.payload_size);
    if (body.size() < crypto::kAeadTagLength) {
      ++undecryptable_;
      return;
    }
    crypto::OpenOp op;
    op.key = &read_keys_.aead();
    op.packet_number = fields.packet_number;
    op.header = packet.first(fields.payload_offset);
    op.ciphertext = body;
    op.out = body.first(body.size() - crypto::kAeadTagLength);
    if (crypto::open(pair_.mb, op) != crypto::PacketStatus::kOk) {
      ++undecryptable_;  // e.g. a stateless reset
      return;
    }
    if (!largest_received_ || fields.packet_number > *largest_received_) {
      largest_received_ = fields.packet_number;
    }
    received_.push_back(
        VictimPacket{fields.packet_number, std::vector<uint8_t>(op.out.begin(), op.out.end())});
  }
}

std::vector<wire::AckRange> ForgedPeer::victim_packet_ranges() const {
  std::vector<uint64_t> numbers;
  numbers.reserve(received_.size());
  for (const VictimPacket& packet : received_) numbers.push_back(packet.packet_number);
  std::sort(numbers.begin(), numbers.end(), std::greater<>());
  std::vector<wire::AckRange> ranges;
  for (const uint64_t pn : numbers) {
    if (!ranges.empty() && ranges.back().smallest <= pn) continue;  // duplicate
    if (!ranges.empty() && ranges.back().smallest == pn + 1) {
      ranges.back().smallest = pn;
    } else {
      ranges.push_back({pn, pn});
    }
  }
  return ranges;
}

std::optional<ObservedClose> ForgedPeer::close() const {
  for (const VictimPacket& packet : received_) {
    for (const wire::Frame& frame : packet.frames()) {
      if (frame.type == wire::FrameType::kConnectionCloseTransport ||
          frame.type == wire::FrameType::kConnectionCloseApplication) {
        return ObservedClose{frame.connection_close.error_code, frame.connection_close.frame_type,
                             frame.type == wire::FrameType::kConnectionCloseApplication};
      }
    }
  }
  return std::nullopt;
}

size_t ForgedPeer::count_frames(wire::FrameType type) const {
  size_t n = 0;
  for (const VictimPacket& packet : received_) n += packet.count(type);
  return n;
}

::testing::AssertionResult closed_with(const std::optional<ObservedClose>& close,
                                       wire::TransportErrorCode code, uint64_t frame_type) {
  if (!close) return ::testing::AssertionFailure() << "the victim sent no CONNECTION_CLOSE";
  if (close->application || close->error_code != static_cast<uint64_t>(code) ||
      close->frame_type != frame_type) {
    return ::testing::AssertionFailure()
           << "the victim closed with " << (close->application ? "application" : "transport")
           << " error 0x" << std::hex << close->error_code << " frame type 0x" << close->frame_type
           << ", expected transport error 0x" << static_cast<uint64_t>(code) << " frame type 0x"
           << frame_type;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult freed_after_closing(ForgedPeer& peer, size_t blocks_before) {
  peer.advance(10 * kSecond);
  if (peer.victim() != nullptr) return ::testing::AssertionFailure() << "the victim still exists";
  if (const size_t count = peer.victim_endpoint().connection_count(); count != 0) {
    return ::testing::AssertionFailure()
           << "the victim endpoint still holds " << count << " connections";
  }
  if (const size_t blocks = peer.victim_blocks_in_use(); blocks != blocks_before) {
    return ::testing::AssertionFailure()
           << blocks << " blocks in use, " << blocks_before << " before the attack";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dpquic::attacks
