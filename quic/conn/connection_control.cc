// The frames a connection owes besides stream data and ACKs: CRYPTO,
// connection-level control frames (flow control, stream limits, CIDs,
// tokens, DATAGRAMs) and CONNECTION_CLOSE. The send path
// (connection_transmit.cc) calls these while it fills a packet.

#include <algorithm>
#include <array>
#include <cstring>

#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/hot_path.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;

namespace {

bool encode(wire::ByteWriter& writer, const wire::Frame& frame) {
  return wire::encode_frame(writer, frame);
}

}  // namespace

void Connection::write_crypto_frames(EncryptionLevel level, transmit::PacketPayloadWriter& writer,
                                     transmit::PacketContents&) {
  if (tls_ == nullptr || level == EncryptionLevel::kEarlyData) return;
  Space& sp = space(space_of_level(level));
  wire::ByteWriter& frames = writer.frames();
  // Lost (or probed) ranges first.
  while (!sp.crypto_lost.empty()) {
    const RangeSet::Range range = sp.crypto_lost.front();
    const uint64_t room = wire::max_crypto_data_length(frames.remaining(), range.begin);
    if (room == 0) return;
    const uint64_t length = std::min(room, range.end - range.begin);
    const auto data = tls_->sent_handshake_data(level, range.begin, static_cast<size_t>(length));
    if (data.empty()) {  // already acknowledged and released
      sp.crypto_lost.remove(range.begin, range.begin + length);
      continue;
    }
    if (!wire::encode_crypto_frame(frames, wire::CryptoFrame{range.begin, data})) return;
    sp.crypto_lost.remove(range.begin, range.begin + length);
    sp.crypto_in_flight.insert(range.begin, range.begin + length);
    sent_frames_.add(SentFrame{.stream_id = static_cast<uint64_t>(level),
                               .offset = range.begin,
                               .length = static_cast<uint32_t>(length),
                               .type = SentFrameType::kCrypto});
  }
  for (;;) {
    const auto pending = tls_->pending_handshake_data(level);
    if (pending.empty()) return;
    const uint64_t offset = tls_->pending_offset(level);
    const uint64_t room = wire::max_crypto_data_length(frames.remaining(), offset);
    if (room == 0) return;
    const size_t length = static_cast<size_t>(std::min<uint64_t>(room, pending.size()));
    if (!wire::encode_crypto_frame(frames, wire::CryptoFrame{offset, pending.first(length)})) {
      return;
    }
    tls_->consume(level, length);
    sp.crypto_in_flight.insert(offset, offset + length);
    sent_frames_.add(SentFrame{.stream_id = static_cast<uint64_t>(level),
                               .offset = offset,
                               .length = static_cast<uint32_t>(length),
                               .type = SentFrameType::kCrypto});
  }
}

void Connection::write_control_frames(transmit::PacketPayloadWriter& writer,
                                      transmit::PacketContents&) {
  wire::ByteWriter& frames = writer.frames();
  wire::Frame frame;
  if (keep_alive_pending_) {
    frame.type = wire::FrameType::kPing;
    if (encode(frames, frame)) keep_alive_pending_ = false;
  }
  if (handshake_done_pending_) {
    frame.type = wire::FrameType::kHandshakeDone;
    if (encode(frames, frame)) {
      handshake_done_pending_ = false;
      sent_frames_.add(SentFrame{.type = SentFrameType::kHandshakeDone});
    }
  }
  if (new_token_pending_ && core_.address_tokens != nullptr) write_new_token(frames);
  if (max_data_pending_ || receive_window_.update_due()) {
    const uint64_t limit = receive_window_.next_limit();
    frame.type = wire::FrameType::kMaxData;
    frame.max_data.maximum_data = limit;
    if (encode(frames, frame)) {
      receive_window_.on_update_sent(limit);
      max_data_pending_ = false;
      sent_frames_.add(SentFrame{.offset = limit, .type = SentFrameType::kMaxData});
    }
  }
  write_stream_limit_frames(frames, StreamDirection::kBidirectional);
  write_stream_limit_frames(frames, StreamDirection::kUnidirectional);
  uint64_t sequence = 0;
  while (local_cids_.new_cid_frame_due() && local_cids_.write_new_cid_frame(frames, sequence)) {
    sent_frames_.add(SentFrame{.offset = sequence, .type = SentFrameType::kNewConnectionId});
  }
  while (peer_cids_.retire_frame_due() && peer_cids_.write_retire_frame(frames, sequence)) {
    sent_frames_.add(SentFrame{.offset = sequence, .type = SentFrameType::kRetireConnectionId});
  }
  if (send_credit_.blocked_frame_due()) {
    frame.type = wire::FrameType::kDataBlocked;
    frame.data_blocked.maximum_data = send_credit_.limit();
    if (encode(frames, frame)) send_credit_.on_blocked_frame_sent();
  }
  while (!datagrams_out_.empty()) {
    const QueuedDatagram& queued = datagrams_out_.front();
    frame.type = wire::FrameType::kDatagram;
    frame.datagram.data = {queued.bytes.data(), queued.length};
    frame.datagram.has_length = true;
    if (!encode(frames, frame)) break;  // next packet
    datagrams_out_.pop();
  }
}

void Connection::write_new_token(wire::ByteWriter& frames) {
  std::array<uint8_t, crypto::kMaxAddressTokenLength> token;
  std::array<uint8_t, SocketAddress::kEncodedIpMax> address;
  // Bound to the client's IP only: the connection that presents it comes
  // from another socket (RFC 9000 §8.1.3).
  const size_t address_length = paths_.path(active_path_).addresses.remote.encode_ip(address);
  const size_t length = core_.address_tokens->issue(
      crypto::AddressTokenType::kNewToken, {address.data(), address_length}, original_dcid_,
      core_.token_time_us(now_), token);
  if (length == 0) {
    new_token_pending_ = false;
    return;
  }
  wire::Frame frame;
  frame.type = wire::FrameType::kNewToken;
  frame.new_token.token = {token.data(), length};
  if (encode(frames, frame)) {
    new_token_pending_ = false;
    sent_frames_.add(SentFrame{.type = SentFrameType::kNewToken});
  }
}

DPQUIC_INLINE_STEP void Connection::write_stream_limit_frames(wire::ByteWriter& frames,
                                                              StreamDirection direction) {
  const bool bidi = direction == StreamDirection::kBidirectional;
  wire::Frame frame;
  if (stream_limits_.max_streams_due(direction)) {
    const uint64_t value = stream_limits_.next_max_streams(direction);
    frame.type = bidi ? wire::FrameType::kMaxStreamsBidi : wire::FrameType::kMaxStreamsUni;
    frame.max_streams.maximum_streams = value;
    if (encode(frames, frame)) {
      const uint64_t before = stream_limits_.advertised_max_streams(direction);
      stream_limits_.on_max_streams_sent(direction, value);
      if (stream_limits_.advertised_max_streams(direction) > before) {
        push_event({ConnectionEventType::kPeerStreamLimit});
      }
      sent_frames_.add(
          SentFrame{.offset = value,
                    .type = bidi ? SentFrameType::kMaxStreamsBidi : SentFrameType::kMaxStreamsUni});
    }
  }
  if (stream_limits_.streams_blocked_due(direction)) {
    frame.type = bidi ? wire::FrameType::kStreamsBlockedBidi : wire::FrameType::kStreamsBlockedUni;
    frame.streams_blocked.maximum_streams = stream_limits_.streams_blocked_value(direction);
    if (encode(frames, frame)) stream_limits_.on_streams_blocked_sent(direction);
  }
}

bool Connection::write_close_frame(EncryptionLevel level, wire::ByteWriter& writer) {
  wire::Frame frame;
  // Frame's union starts as PADDING: make every close field defined (the
  // encoder refuses an application close with a non-zero frame type).
  frame.connection_close = wire::ConnectionCloseFrame{};
  // RFC 9000 §10.2.3: an application close in Initial or Handshake packets
  // becomes a transport close with APPLICATION_ERROR and no reason.
  const bool application_visible = level == EncryptionLevel::kApplication;
  if (close_application_ && application_visible) {
    frame.type = wire::FrameType::kConnectionCloseApplication;
    frame.connection_close.error_code = close_application_code_;
  } else {
    frame.type = wire::FrameType::kConnectionCloseTransport;
    frame.connection_close.error_code =
        close_application_ ? static_cast<uint64_t>(wire::TransportErrorCode::kApplicationError)
                           : static_cast<uint64_t>(close_error_.code);
    frame.connection_close.frame_type = close_application_ ? 0 : close_error_.frame_type;
  }
  const char* reason = close_error_.reason != nullptr ? close_error_.reason : "";
  size_t reason_length = std::strlen(reason);
  if (close_application_ && !application_visible) reason_length = 0;
  reason_length = std::min<size_t>(reason_length, 64);
  frame.connection_close.reason_phrase = {reinterpret_cast<const uint8_t*>(reason), reason_length};
  if (encode(writer, frame)) return true;
  frame.connection_close.reason_phrase = {};
  return encode(writer, frame);
}

}  // namespace dpquic::conn
