// The application's side of a connection: events, streams (opening,
// sending, reading, resets, the frames that carry them) and DATAGRAM frames.

#include <algorithm>
#include <cstring>

#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::conn {

namespace {

// The largest DATAGRAM frame that fits alone in a 1-RTT packet of the
// smallest datagram a peer may limit us to (1200 bytes): short header with a
// 20-byte CID and a 4-byte packet number, and the AEAD tag. A larger one
// could never be sent.
constexpr uint64_t kMaxDatagramFrameInPacket =
    wire::kMinInitialDatagramSize - (1 + wire::kMaxConnectionIdLength + 4) - crypto::kAeadTagLength;

}  // namespace

// --- Events ---------------------------------------------------------------------------------

void Connection::push_event(const ConnectionEvent& event) { events_.push(event); }

void Connection::push_stream_event(Stream& stream, ConnectionEventType type) {
  if (type == ConnectionEventType::kStreamReadable) {
    if (stream.readable_event_pending) return;
    stream.readable_event_pending = true;
  }
  ConnectionEvent event;
  event.type = type;
  event.stream_id = stream.id;
  push_event(event);
}

bool Connection::poll_event(ConnectionEvent& event) {
  if (events_.empty()) return false;
  event = events_.front();
  events_.pop();
  if (event.type == ConnectionEventType::kStreamReadable) {
    if (Stream* stream = find_stream(event.stream_id)) stream->readable_event_pending = false;
  }
  return true;
}

// --- Streams ----------------------------------------------------------------------------------

Connection::Stream* Connection::find_stream(uint64_t id) const {
  const uint32_t slot = stream_index_.slot_of(id);
  if (slot == IdIndex::kNoSlot) return nullptr;
  return stream_slots_[slot].get();
}

const ReceiveWindow* Connection::stream_receive_window(uint64_t stream_id) const {
  const Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->receive) return nullptr;
  return &stream->receive->window();
}

Connection::Stream& Connection::create_stream(uint64_t id) {
  uint32_t slot;
  if (!free_stream_slots_.empty()) {
    slot = free_stream_slots_.back();
    free_stream_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(stream_slots_.size());
    stream_slots_.emplace_back();
    // Every slot may come back to the free list: room for it now, so that
    // freeing a stream never allocates.
    free_stream_slots_.reserve(stream_slots_.capacity());
    send_queue_.reserve(stream_slots_.capacity());
  }
  if (!stream_slots_[slot]) stream_slots_[slot] = std::make_unique<Stream>();
  Stream& stream = *stream_slots_[slot];
  stream.send.reset();
  stream.receive.reset();
  stream.in_control_queue = false;
  stream.readable_event_pending = false;
  stream.write_blocked = false;
  stream.reset_reported = false;
  stream.highest_received = 0;
  stream.consumed_counted = 0;
  stream.id = id;
  stream.slot = slot;
  send_queue_.assign(slot, id);
  const TransportConfig& local = config_.transport;
  if (local_can_send(id, role_)) {
    const uint64_t peer_limit = is_unidirectional(id) ? peer_params_.initial_max_stream_data_uni
                                : is_local(id, role_)
                                    ? peer_params_.initial_max_stream_data_bidi_remote
                                    : peer_params_.initial_max_stream_data_bidi_local;
    const uint64_t max_buffered = config_.max_stream_send_buffer;
    if (!stream.send.reuse(id, peer_limit, max_buffered)) {
      stream.send.emplace(id, peer_limit, max_buffered);
    }
  }
  if (local_can_receive(id, role_)) {
    // Holes allowed in one stream's reassembly (RFC 9000 §21.9): enough for
    // an honest peer's losses across a large auto-tuned window. Each costs a
    // 24-byte tree node (at most 96 KiB a stream); a frame's range work is
    // O(log gaps) node visits and moves no range, however many there are.
    const size_t max_gaps =
        std::clamp<size_t>(static_cast<size_t>(local.max_stream_window / 4096), 1024, 4096);
    if (!stream.receive.reuse(local.initial_max_stream_data, local.max_stream_window, max_gaps)) {
      stream.receive.emplace(*core_.blocks, local.initial_max_stream_data, local.max_stream_window,
                             max_gaps);
    }
  }
  stream_index_.insert(id, slot);
  ++stream_count_;
  return stream;
}

void Connection::free_stream_if_done(Stream& stream) {
  const bool send_done = !stream.send || stream.send->finished();
  const bool receive_done = !stream.receive || stream.receive->finished();
  if (!send_done || !receive_done || stream.in_control_queue || send_queue_.queued(stream.slot)) {
    return;
  }
  if (!is_local(stream.id, role_)) {
    stream_limits_.on_peer_stream_closed(is_unidirectional(stream.id)
                                             ? StreamDirection::kUnidirectional
                                             : StreamDirection::kBidirectional);
  }
  stream_index_.erase(stream.id);
  ConnectionEvent event;
  event.type = ConnectionEventType::kStreamClosed;
  event.stream_id = stream.id;
  push_event(event);
  // Retired, not destroyed: the slot's next stream reuses both objects.
  stream.send.reset();
  stream.receive.reset();
  free_stream_slots_.push_back(stream.slot);
  --stream_count_;
}

std::optional<uint64_t> Connection::open_stream(StreamDirection direction) {
  if (state_ != ConnectionState::kEstablished && state_ != ConnectionState::kHandshake) {
    return std::nullopt;
  }
  // Before 1-RTT keys a client may open streams only for 0-RTT.
  const auto id = stream_limits_.open_local(direction);
  if (!id) return std::nullopt;
  create_stream(*id);
  return id;
}

void Connection::account_consumed(Stream& stream) {
  // Connection-level credit comes back for bytes read, and for bytes a
  // reset or STOP_SENDING made unreadable (RFC 9000 §4.5).
  const uint64_t consumed = stream.receive->connection_consumed();
  if (consumed == stream.consumed_counted) return;
  consumed_total_ += consumed - stream.consumed_counted;
  stream.consumed_counted = consumed;
  receive_window_.on_consumed(consumed_total_, now_, loss_.rtt().smoothed_rtt());
  if (receive_window_.update_due()) max_data_pending_ = true;
}

bool Connection::stream_control_due(const Stream& stream) const {
  if (stream.send && stream.send->control_due()) return true;
  return stream.receive &&
         (stream.receive->window().update_due() || stream.receive->stop_sending_due());
}

void Connection::schedule_stream(Stream& stream) {
  if (!stream.in_control_queue && stream_control_due(stream)) {
    stream.in_control_queue = true;
    control_queue_.push(stream.slot);
  }
  if (stream.send && stream.send->data_due(send_credit_.available())) {
    send_queue_.push(stream.slot);
  }
}

std::optional<StreamPriority> Connection::stream_priority(uint64_t stream_id) const {
  const Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->send) return std::nullopt;
  return send_queue_.priority(stream->slot);
}

bool Connection::set_stream_priority(uint64_t stream_id, const StreamPriority& priority) {
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->send) return false;
  send_queue_.set_priority(stream->slot, priority);
  return true;
}

SendResult Connection::send(uint64_t stream_id, transmit::Chunk chunk, bool fin) {
  if (state_ != ConnectionState::kEstablished && state_ != ConnectionState::kHandshake) {
    return SendResult::kClosed;
  }
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->send) return SendResult::kInvalidStream;
  const SendStreamState send_state = stream->send->state();
  if (send_state == SendStreamState::kResetSent || send_state == SendStreamState::kResetRecvd) {
    return SendResult::kInvalidStream;
  }
  if (!stream->send->write(std::move(chunk), fin)) {
    if (send_state == SendStreamState::kDataSent || send_state == SendStreamState::kDataRecvd) {
      return SendResult::kInvalidStream;
    }
    stream->write_blocked = true;
    return SendResult::kBlocked;
  }
  schedule_stream(*stream);
  return SendResult::kOk;
}

uint64_t Connection::stream_writable_bytes(uint64_t stream_id) const {
  const Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->send) return 0;
  return stream->send->writable_bytes();
}

size_t Connection::read(uint64_t stream_id, std::span<uint8_t> out, bool& fin) {
  fin = false;
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->receive) return 0;
  const size_t n = stream->receive->read(out, fin, now_, loss_.rtt().smoothed_rtt());
  after_read(*stream, n, fin);
  return n;
}

std::span<const uint8_t> Connection::peek(uint64_t stream_id, bool& fin) {
  fin = false;
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->receive) return {};
  return stream->receive->peek(fin);
}

size_t Connection::consume(uint64_t stream_id, size_t n, bool& fin) {
  fin = false;
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->receive) return 0;
  const size_t consumed = stream->receive->consume(n, fin, now_, loss_.rtt().smoothed_rtt());
  after_read(*stream, consumed, fin);
  return consumed;
}

void Connection::after_read(Stream& stream, size_t n, bool fin) {
  account_consumed(stream);
  if (n != 0 && stream.receive->window().update_due()) schedule_stream(stream);
  if (fin || stream.receive->finished()) free_stream_if_done(stream);
}

bool Connection::reset_stream(uint64_t stream_id, uint64_t error_code) {
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->send) return false;
  stream->send->reset(error_code);
  schedule_stream(*stream);
  return true;
}

bool Connection::stop_sending(uint64_t stream_id, uint64_t error_code) {
  Stream* stream = find_stream(stream_id);
  if (stream == nullptr || !stream->receive) return false;
  stream->receive->stop_sending(error_code);
  account_consumed(*stream);
  schedule_stream(*stream);
  return true;
}

// --- Stream frames in packets ------------------------------------------------------------

uint32_t Connection::write_stream_frames(transmit::PacketPayloadWriter& writer,
                                         transmit::PacketContents&) {
  wire::ByteWriter& frames = writer.frames();
  // Control frames first, whatever the stream's priority: flow-control
  // updates and resets must not wait behind another stream's data.
  size_t visits = control_queue_.size();
  while (visits-- != 0 && !control_queue_.empty() && writer.remaining() > 8) {
    const uint32_t slot = control_queue_.front();
    control_queue_.pop();
    Stream* stream = stream_slots_[slot].get();
    if (stream == nullptr) continue;
    stream->in_control_queue = false;
    write_stream_control_frames(*stream, frames);
    schedule_stream(*stream);
    free_stream_if_done(*stream);
  }
  // Then data in the scheduler's order: the front stream gets the rest of
  // the packet; an incremental one then goes to the back of its level.
  uint32_t last = Burst::kNoSlot;
  visits = send_queue_.size();
  while (visits-- != 0 && !send_queue_.empty() && writer.remaining() > 8) {
    const uint32_t slot = send_queue_.front();
    send_queue_.pop();
    Stream* stream = stream_slots_[slot].get();
    if (stream == nullptr || !stream->send) continue;
    const size_t before = writer.written();
    write_stream_data(*stream, writer);
    if (writer.written() != before) last = slot;
    schedule_stream(*stream);
    free_stream_if_done(*stream);
  }
  return last;
}

void Connection::write_stream_control_frames(Stream& stream, wire::ByteWriter& frames) {
  wire::Frame frame;
  if (stream.receive) {
    ReceiveStream& receive = *stream.receive;
    if (receive.window().update_due()) {
      const uint64_t limit = receive.window().next_limit();
      frame.type = wire::FrameType::kMaxStreamData;
      frame.max_stream_data = {stream.id, limit};
      if (wire::encode_frame(frames, frame)) {
        receive.window().on_update_sent(limit);
        sent_frames_.add(SentFrame{
            .stream_id = stream.id, .offset = limit, .type = SentFrameType::kMaxStreamData});
      }
    }
    if (receive.stop_sending_due()) {
      frame.type = wire::FrameType::kStopSending;
      frame.stop_sending = {stream.id, receive.stop_sending_error()};
      if (wire::encode_frame(frames, frame)) {
        receive.on_stop_sending_sent();
        sent_frames_.add(SentFrame{.stream_id = stream.id, .type = SentFrameType::kStopSending});
      }
    }
  }
  if (stream.send) {
    SendStream& send = *stream.send;
    if (send.reset_frame_due() && send.write_reset_frame(frames)) {
      sent_frames_.add(SentFrame{.stream_id = stream.id, .type = SentFrameType::kResetStream});
    }
    if (send.blocked_frame_due() && send.write_blocked_frame(frames)) {
      sent_frames_.add(
          SentFrame{.stream_id = stream.id, .type = SentFrameType::kStreamDataBlocked});
    }
  }
}

void Connection::write_stream_data(Stream& stream, transmit::PacketPayloadWriter& writer) {
  SendStream& send = *stream.send;
  StreamFrameRecord record;
  uint64_t new_bytes = 0;
  while (send.write_stream_frame(writer, send_credit_.available(), record, new_bytes)) {
    send_credit_.on_sent(new_bytes);
    stats_.stream_bytes_sent += new_bytes;
    sent_frames_.add(SentFrame{.stream_id = stream.id,
                               .offset = record.offset,
                               .length = record.length,
                               .type = SentFrameType::kStream,
                               .fin = record.fin});
    if (writer.remaining() <= 8) break;
  }
  if (stream.write_blocked && send.writable_bytes() != 0) {
    stream.write_blocked = false;
    push_stream_event(stream, ConnectionEventType::kStreamWritable);
  }
}

// --- DATAGRAM frames --------------------------------------------------------------------------

bool Connection::send_datagram(std::span<const uint8_t> payload) {
  // RFC 9221 §3: the peer's limit covers the whole frame; ours always
  // carries a length.
  const uint64_t frame_size = 1 + wire::varint_length(payload.size()) + payload.size();
  if (datagrams_out_.capacity() == 0 ||
      !peer_params_.has(wire::TransportParameter::kMaxDatagramFrameSize) ||
      frame_size > peer_params_.max_datagram_frame_size || frame_size > kMaxDatagramFrameInPacket ||
      datagrams_out_.full()) {
    return false;
  }
  QueuedDatagram& slot = datagrams_out_.next_slot();
  std::memcpy(slot.bytes.data(), payload.data(), payload.size());
  slot.length = static_cast<uint16_t>(payload.size());
  datagrams_out_.commit();
  return true;
}

size_t Connection::read_datagram(std::span<uint8_t> out) {
  if (datagrams_in_.empty()) return 0;
  const QueuedDatagram& slot = datagrams_in_.front();
  const size_t n = std::min<size_t>(out.size(), slot.length);
  std::memcpy(out.data(), slot.bytes.data(), n);
  datagrams_in_.pop();
  return n;
}

}  // namespace dpquic::conn
