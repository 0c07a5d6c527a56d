// Dispatching the frames of an opened packet (RFC 9000 §12.4, §19): each
// frame checked against the packet type, then handled.

#include <algorithm>
#include <cstring>

#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/hot_path.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frame_validity.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::FrameType;
using wire::PacketNumberSpace;
using wire::PacketType;
using wire::TransportErrorCode;

namespace {

TransportError from_wire(wire::WireError error, const char* reason, uint64_t frame_type = 0) {
  const auto code = wire::transport_error_code(error);
  return transport_error(code ? *code : TransportErrorCode::kProtocolViolation, reason, frame_type);
}

}  // namespace

DPQUIC_HOT TransportError Connection::process_frames(const Arrival& arrival, PacketType type,
                                                     std::span<const uint8_t> payload,
                                                     bool& ack_eliciting, bool& probing_only) {
  wire::FrameDecoder decoder(payload);
  wire::Frame frame;
  bool acked = false;
  while (!decoder.done()) {
    const wire::WireError error = decoder.next(frame);
    if (error != wire::WireError::kOk) return from_wire(error, "malformed frame");
    if (wire::check_frame_allowed(frame.type, type, role_) != wire::WireError::kOk) {
      return transport_error(TransportErrorCode::kProtocolViolation,
                             "frame not allowed in this packet type",
                             static_cast<uint64_t>(frame.type));
    }
    if (frame.type == FrameType::kAck || frame.type == FrameType::kAckEcn) {
      // One ACK frame per packet is processed: each one composes the part
      // of the in-flight window it reaches, so a packet full of ACK frames
      // spanning the window would cost that many times the work. A peer
      // sends one; ignoring acknowledgments only delays them.
      if (acked) {
        ++stats_.ack_frames_ignored;
        continue;
      }
      acked = true;
    }
    if (wire::is_ack_eliciting(frame.type)) ack_eliciting = true;
    if (!wire::is_probing(frame.type)) probing_only = false;
    if (TransportError failure = on_frame(arrival, type, frame)) return failure;
    if (state_ == ConnectionState::kDraining || state_ == ConnectionState::kClosed ||
        state_ == ConnectionState::kClosing) {
      break;
    }
  }
  return {};
}

DPQUIC_HOT TransportError Connection::on_frame(const Arrival& arrival, PacketType type,
                                               const wire::Frame& frame) {
  const Instant now = arrival.now;
  const uint64_t frame_type = static_cast<uint64_t>(frame.type);
  switch (frame.type) {
    case FrameType::kPadding:
    case FrameType::kPing:
    case FrameType::kDataBlocked:
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni: return {};
    case FrameType::kAck:
    case FrameType::kAckEcn: return on_ack_frame(now, wire::packet_number_space(type), frame);
    case FrameType::kCrypto: {
      const EncryptionLevel level = type == PacketType::kInitial ? EncryptionLevel::kInitial
                                    : type == PacketType::kHandshake
                                        ? EncryptionLevel::kHandshake
                                        : EncryptionLevel::kApplication;
      return on_crypto_frame(now, level, frame.crypto);
    }
    case FrameType::kStream:
      if (type == PacketType::kZeroRtt) {
        zero_rtt_stream_limit_ = std::max(zero_rtt_stream_limit_, frame.stream.stream_id + 1);
      }
      return on_stream_frame(now, frame.stream);
    case FrameType::kResetStream: return on_reset_stream(frame.reset_stream);
    case FrameType::kStopSending: return on_stop_sending(frame.stop_sending);
    case FrameType::kMaxStreamData: return on_max_stream_data(frame.max_stream_data);
    case FrameType::kStreamDataBlocked: {
      Stream* stream = nullptr;
      return stream_for_frame(frame.stream_data_blocked.stream_id, false, true, stream);
    }
    case FrameType::kMaxData: on_max_data(frame.max_data.maximum_data); return {};
    case FrameType::kMaxStreamsBidi:
      return stream_limits_.on_max_streams(StreamDirection::kBidirectional,
                                           frame.max_streams.maximum_streams);
    case FrameType::kMaxStreamsUni:
      return stream_limits_.on_max_streams(StreamDirection::kUnidirectional,
                                           frame.max_streams.maximum_streams);
    case FrameType::kNewConnectionId: return on_new_connection_id(frame.new_connection_id);
    case FrameType::kRetireConnectionId:
      return local_cids_.on_retire(frame.retire_connection_id.sequence_number, arrival.dcid);
    case FrameType::kPathChallenge:
      paths_.on_path_challenge(arrival.path_id, frame.path_challenge.data);
      return {};
    case FrameType::kPathResponse: on_path_response(now, frame.path_response.data); return {};
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication:
      enter_draining(now, CloseReason::kPeerClose, frame.connection_close.error_code,
                     frame.type == FrameType::kConnectionCloseApplication);
      return {};
    case FrameType::kHandshakeDone: on_handshake_confirmed(now); return {};
    case FrameType::kNewToken: return on_new_token(frame.new_token);
    case FrameType::kDatagram: return on_datagram_frame(frame.datagram);
    case FrameType::kAckFrequency:
    case FrameType::kImmediateAck:
      // We never advertise min_ack_delay, so the peer must not send these.
      return transport_error(TransportErrorCode::kProtocolViolation,
                             "ack frequency was not negotiated", frame_type);
  }
  return transport_error(TransportErrorCode::kFrameEncodingError, "unknown frame", frame_type);
}

void Connection::on_max_data(uint64_t maximum_data) {
  const uint64_t before = send_credit_.available();
  send_credit_.on_max_data(maximum_data);
  if (before != 0 || send_credit_.available() == 0) return;
  for (auto& slot : stream_slots_) {
    if (slot && slot->send && slot->send->wants_to_send(send_credit_.available())) {
      schedule_stream(*slot);
    }
  }
}

TransportError Connection::on_new_connection_id(const wire::NewConnectionIdFrame& frame) {
  if (peer_cids_.active().empty()) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "NEW_CONNECTION_ID to a zero-length CID user",
                           static_cast<uint64_t>(FrameType::kNewConnectionId));
  }
  if (TransportError error = peer_cids_.on_new_connection_id(frame)) return error;
  reassign_path_cids();
  return {};
}

void Connection::on_path_response(Instant now, const std::array<uint8_t, 8>& data) {
  const auto validated = paths_.on_path_response(data);
  if (!validated) return;
  if (role_ == wire::Role::kServer && *validated == active_path_) {
    peer_address_validated_ = true;
    loss_.set_amplification_blocked(now, false);
  }
  // A client whose move (migration, preferred address) is validated does
  // not need the paths it left: their CIDs are retired (§9.5).
  if (role_ == wire::Role::kClient && *validated == active_path_) {
    for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) abandon_path(id);
  }
  // RFC 9000 §8.2.1: a validation whose challenge the amplification limit
  // kept below 1200 bytes is followed by one with a padded challenge, now
  // that the path is not limited, to check its MTU.
  if (!paths_.path(*validated).challenge_padded) {
    paths_.start_validation(*validated, now, loss_.pto_duration(PacketNumberSpace::kApplication));
  }
}

TransportError Connection::on_new_token(const wire::NewTokenFrame& frame) {
  if (frame.token.empty()) {
    return transport_error(TransportErrorCode::kFrameEncodingError, "empty NEW_TOKEN",
                           static_cast<uint64_t>(FrameType::kNewToken));
  }
  if (core_.client_tokens != nullptr) core_.client_tokens->store(server_name_, frame.token);
  received_new_token_ = true;
  return {};
}

TransportError Connection::on_datagram_frame(const wire::DatagramFrame& frame) {
  // RFC 9221 §3: the limit covers the whole frame, type and length too.
  const uint64_t limit = config_.transport.max_datagram_frame_size;
  const uint64_t length = frame.data.size();
  const uint64_t frame_size = 1 + length + (frame.has_length ? wire::varint_length(length) : 0);
  if (limit == 0 || frame_size > limit) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "DATAGRAM not negotiated or too large",
                           static_cast<uint64_t>(FrameType::kDatagram));
  }
  if (datagrams_in_.full() || length > sizeof(QueuedDatagram::bytes)) {
    ++stats_.datagrams_dropped;  // unreliable by definition (RFC 9221 §5)
    return {};
  }
  QueuedDatagram& slot = datagrams_in_.next_slot();
  std::memcpy(slot.bytes.data(), frame.data.data(), length);
  slot.length = static_cast<uint16_t>(length);
  datagrams_in_.commit();
  ConnectionEvent event;
  event.type = ConnectionEventType::kDatagram;
  push_event(event);
  return {};
}

TransportError Connection::on_ack_frame(Instant now, PacketNumberSpace space_id,
                                        const wire::Frame& frame) {
  acked_in_frame_ = 0;
  ecn_marked_in_frame_ = 0;
  const bool has_ecn = frame.type == FrameType::kAckEcn;
  const std::optional<uint64_t> largest_before = loss_.largest_acked(space_id);
  const wire::WireError error = loss_.on_ack_received(now, space_id, frame.ack, has_ecn, *this);
  if (error != wire::WireError::kOk) {
    return from_wire(error, "ACK of a packet never sent", static_cast<uint64_t>(frame.type));
  }
  if (acked_in_frame_ != 0) {
    // RFC 9000 §13.4.2.1: only an ACK that raises the largest acknowledged
    // may fail validation. CE marks are a congestion signal loss detection
    // already acted on (RFC 9002 §B.7).
    const std::optional<uint64_t> largest_after = loss_.largest_acked(space_id);
    const bool increased = largest_after && (!largest_before || *largest_after > *largest_before);
    (void)ecn_.on_ack(space_id, ecn_marked_in_frame_, has_ecn ? &frame.ack.ecn : nullptr,
                      increased);
  }
  ecn_marked_in_frame_ = 0;
  if (tracer_) trace_metrics(now);
  return {};
}

TransportError Connection::on_crypto_frame(Instant now, EncryptionLevel level,
                                           const wire::CryptoFrame& frame) {
  Space& sp = space(space_of_level(level));
  if (sp.discarded || tls_ == nullptr) return {};
  const uint64_t limit = sp.crypto_receive->read_offset() + config_.max_crypto_buffer;
  switch (sp.crypto_receive->insert(frame.offset, frame.data, limit)) {
    case ReceiveResult::kOk: break;
    case ReceiveResult::kExceedsLimit:
    case ReceiveResult::kTooFragmented:
      // quiche CVE-2024-1765: CRYPTO data far ahead is refused, not stored.
      return transport_error(TransportErrorCode::kCryptoBufferExceeded,
                             "CRYPTO data beyond the buffer", 0x06);
    case ReceiveResult::kOutOfMemory:
      return transport_error(TransportErrorCode::kInternalError, "receive buffers exhausted", 0x06);
  }
  bool provided = false;
  for (std::span<const uint8_t> piece = sp.crypto_receive->readable(); !piece.empty();
       piece = sp.crypto_receive->readable()) {
    if (!tls_->provide_handshake_data(level, piece)) {
      return transport_error(static_cast<TransportErrorCode>(tls_->error_code()),
                             "TLS refused handshake data", 0x06);
    }
    sp.crypto_receive->consume(piece.size());
    provided = true;
  }
  if (provided) advance_tls(now);
  return {};
}

TransportError Connection::stream_for_frame(uint64_t id, bool needs_send, bool needs_receive,
                                            Stream*& stream) {
  stream = nullptr;
  if ((needs_send && !local_can_send(id, role_)) ||
      (needs_receive && !local_can_receive(id, role_))) {
    return transport_error(TransportErrorCode::kStreamStateError,
                           "frame for the wrong direction of a stream");
  }
  stream = find_stream(id);
  if (stream != nullptr) return {};
  if (is_local(id, role_)) {
    if (!stream_limits_.local_stream_opened(id)) {
      return transport_error(TransportErrorCode::kStreamStateError,
                             "frame for a stream we never opened");
    }
    return {};  // finished and freed: late frames are ignored
  }
  std::optional<uint64_t> first_new;
  if (TransportError error = stream_limits_.on_peer_stream(id, first_new)) return error;
  if (!first_new) return {};  // opened earlier and already freed
  for (uint64_t opened = *first_new; opened <= id; opened += 4) {
    Stream& created = create_stream(opened);
    push_stream_event(created, ConnectionEventType::kStreamOpened);
  }
  stream = find_stream(id);
  return {};
}

// Bytes a STREAM frame (0x08) or RESET_STREAM (0x04) newly counted against
// the connection's receive window (RFC 9000 §4.1).
DPQUIC_INLINE_STEP TransportError Connection::count_connection_bytes(uint64_t newly,
                                                                     uint64_t frame_type) {
  if (newly == 0) return {};
  received_total_ += newly;
  if (!receive_window_.on_received(received_total_)) {
    return transport_error(TransportErrorCode::kFlowControlError,
                           "connection flow control limit exceeded", frame_type);
  }
  return {};
}

DPQUIC_HOT TransportError Connection::on_stream_frame(Instant, const wire::StreamFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, false, true, stream)) {
    error.frame_type = 0x08;
    return error;
  }
  if (stream == nullptr) return {};
  uint64_t newly = 0;
  if (TransportError error =
          stream->receive->on_stream_frame(frame.offset, frame.data, frame.fin, newly)) {
    return error;
  }
  stats_.stream_bytes_received += newly;
  if (TransportError error = count_connection_bytes(newly, 0x08)) return error;
  account_consumed(*stream);  // data discarded after STOP_SENDING
  if (stream->receive->readable()) push_stream_event(*stream, ConnectionEventType::kStreamReadable);
  // A stopped stream is never read: it ends here once the peer sent all.
  if (stream->receive->finished()) free_stream_if_done(*stream);
  return {};
}

TransportError Connection::on_reset_stream(const wire::ResetStreamFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, false, true, stream)) return error;
  if (stream == nullptr) return {};
  uint64_t newly = 0;
  if (TransportError error =
          stream->receive->on_reset_stream(frame.application_error_code, frame.final_size, newly)) {
    return error;
  }
  if (TransportError error = count_connection_bytes(newly, 0x04)) return error;
  account_consumed(*stream);
  if (stream->receive->reset_received() && !stream->reset_reported) {
    stream->reset_reported = true;
    ConnectionEvent event;
    event.type = ConnectionEventType::kStreamReset;
    event.stream_id = stream->id;
    event.error_code = frame.application_error_code;
    push_event(event);
  }
  push_stream_event(*stream, ConnectionEventType::kStreamReadable);
  // A stopped stream is never read: the reset ends it here.
  if (stream->receive->finished()) free_stream_if_done(*stream);
  return {};
}

TransportError Connection::on_stop_sending(const wire::StopSendingFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, true, false, stream)) return error;
  if (stream == nullptr) return {};
  if (!stream->send->stop_sending_received()) {
    stream->send->on_stop_sending(frame.application_error_code);
    schedule_stream(*stream);
    ConnectionEvent event;
    event.type = ConnectionEventType::kStreamStopped;
    event.stream_id = stream->id;
    event.error_code = frame.application_error_code;
    push_event(event);
  }
  return {};
}

TransportError Connection::on_max_stream_data(const wire::StreamDataLimitFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, true, false, stream)) return error;
  if (stream == nullptr) return {};
  stream->send->on_max_stream_data(frame.maximum_stream_data);
  if (stream->send->wants_to_send(send_credit_.available())) schedule_stream(*stream);
  if (stream->write_blocked && stream->send->writable_bytes() != 0) {
    stream->write_blocked = false;
    push_stream_event(*stream, ConnectionEventType::kStreamWritable);
  }
  return {};
}

}  // namespace dpquic::conn
