#include "quic/conn/receive_stream.h"

#include "quic/hot_path.h"

namespace dpquic::conn {

using wire::TransportErrorCode;

ReceiveStream::ReceiveStream(BlockPool& pool, uint64_t initial_window, uint64_t max_window,
                             size_t max_gaps)
    : buffer_(pool, max_gaps), window_(initial_window, max_window) {}

void ReceiveStream::reinitialize(uint64_t initial_window, uint64_t max_window) {
  reinitialize(initial_window, max_window, buffer_.max_gaps());
}

void ReceiveStream::reinitialize(uint64_t initial_window, uint64_t max_window, size_t max_gaps) {
  buffer_.reinitialize(max_gaps);
  window_ = ReceiveWindow(initial_window, max_window);
  state_ = ReceiveStreamState::kRecv;
  final_size_ = 0;
  reset_error_ = 0;
  stop_error_ = 0;
  final_size_known_ = false;
  stopped_ = false;
  stop_pending_ = false;
}

TransportError ReceiveStream::check_final_size(uint64_t end, bool fin, uint64_t frame_type) const {
  if (final_size_known_) {
    if (end > final_size_)
      return transport_error(TransportErrorCode::kFinalSizeError, "data beyond the final size",
                             frame_type);
    if (fin && end != final_size_)
      return transport_error(TransportErrorCode::kFinalSizeError, "final size changed", frame_type);
  } else if (fin && end < window_.highest_received()) {
    return transport_error(TransportErrorCode::kFinalSizeError,
                           "final size below data already received", frame_type);
  }
  return {};
}

DPQUIC_HOT TransportError ReceiveStream::on_stream_frame(uint64_t offset,
                                                         std::span<const uint8_t> data, bool fin,
                                                         uint64_t& newly_received) {
  newly_received = 0;
  const uint64_t length = data.size();
  // RFC 9000 §19.8: offset + length must fit in 62 bits; no limit can be
  // that large, so this is a flow-control violation as well.
  if (length > kMaxFlowLimit || offset > kMaxFlowLimit - length)
    return transport_error(TransportErrorCode::kFlowControlError, "stream offset beyond 2^62-1",
                           kStreamFrameType);
  const uint64_t end = offset + length;
  if (TransportError error = check_final_size(end, fin, kStreamFrameType)) return error;
  if (end > window_.limit())
    return transport_error(TransportErrorCode::kFlowControlError,
                           "stream data beyond the stream limit", kStreamFrameType);

  const bool receiving =
      state_ == ReceiveStreamState::kRecv || state_ == ReceiveStreamState::kSizeKnown;
  if (receiving && length > 0) {
    switch (buffer_.insert(offset, data, window_.limit())) {
      case ReceiveResult::kOk: break;
      case ReceiveResult::kExceedsLimit:  // checked above; kept for completeness
        return transport_error(TransportErrorCode::kFlowControlError,
                               "stream data beyond the stream limit", kStreamFrameType);
      case ReceiveResult::kOutOfMemory:
        return transport_error(TransportErrorCode::kInternalError,
                               "receive buffer memory exhausted", kStreamFrameType);
      case ReceiveResult::kTooFragmented:
        return transport_error(TransportErrorCode::kProtocolViolation,
                               "too many gaps in received stream data", kStreamFrameType);
    }
  }

  const uint64_t previous_highest = window_.highest_received();
  window_.on_received(end);  // cannot fail: end <= limit
  newly_received = window_.highest_received() - previous_highest;

  if (fin && !final_size_known_) {
    final_size_known_ = true;
    final_size_ = end;
    window_.stop_updates();  // RFC 9000 §4.2: no MAX_STREAM_DATA once the size is known
    if (state_ == ReceiveStreamState::kRecv) state_ = ReceiveStreamState::kSizeKnown;
  }
  if (state_ == ReceiveStreamState::kSizeKnown && buffer_.contiguous_end() == final_size_)
    state_ = ReceiveStreamState::kDataRecvd;
  return {};
}

TransportError ReceiveStream::on_reset_stream(uint64_t error_code, uint64_t final_size,
                                              uint64_t& newly_received) {
  newly_received = 0;
  if (TransportError error = check_final_size(final_size, true, kResetStreamFrameType))
    return error;
  if (final_size > window_.limit())
    return transport_error(TransportErrorCode::kFlowControlError,
                           "final size beyond the stream limit", kResetStreamFrameType);
  const uint64_t previous_highest = window_.highest_received();
  window_.on_received(final_size);
  newly_received = window_.highest_received() - previous_highest;
  final_size_known_ = true;
  final_size_ = final_size;
  window_.stop_updates();

  // RFC 9000 §3.2: once all data has arrived (Data Recvd) the reset may be
  // ignored; we keep delivering the data. Repeats change nothing.
  if (state_ == ReceiveStreamState::kRecv || state_ == ReceiveStreamState::kSizeKnown) {
    state_ = ReceiveStreamState::kResetRecvd;
    reset_error_ = error_code;
    buffer_.clear();
  }
  return {};
}

bool ReceiveStream::begin_read(bool& fin) {
  fin = false;
  if (state_ == ReceiveStreamState::kResetRecvd) {
    state_ = ReceiveStreamState::kResetRead;  // the application now knows
    return false;
  }
  return !stopped_ && state_ != ReceiveStreamState::kResetRead;
}

void ReceiveStream::end_read(bool& fin, Instant now, Duration rtt) {
  window_.on_consumed(buffer_.read_offset(), now, rtt);
  if (state_ == ReceiveStreamState::kDataRecvd && buffer_.read_offset() == final_size_)
    state_ = ReceiveStreamState::kDataRead;
  fin = state_ == ReceiveStreamState::kDataRead;
}

size_t ReceiveStream::read(std::span<uint8_t> out, bool& fin, Instant now, Duration rtt) {
  if (!begin_read(fin)) return 0;
  const size_t n = buffer_.read(out);
  end_read(fin, now, rtt);
  return n;
}

std::span<const uint8_t> ReceiveStream::peek(bool& fin) const {
  fin = false;
  if (stopped_ || reset_received()) return {};
  const std::span<const uint8_t> piece = buffer_.readable();
  fin = state_ == ReceiveStreamState::kDataRead ||
        (state_ == ReceiveStreamState::kDataRecvd &&
         buffer_.read_offset() + piece.size() == final_size_);
  return piece;
}

size_t ReceiveStream::consume(size_t n, bool& fin, Instant now, Duration rtt) {
  if (!begin_read(fin)) return 0;
  const uint64_t before = buffer_.read_offset();
  buffer_.consume(n);
  end_read(fin, now, rtt);
  return static_cast<size_t>(buffer_.read_offset() - before);
}

bool ReceiveStream::readable() const {
  if (stopped_) return false;
  switch (state_) {
    case ReceiveStreamState::kRecv:
    case ReceiveStreamState::kSizeKnown: return !buffer_.readable().empty();
    case ReceiveStreamState::kDataRecvd:   // data left, or the FIN not yet reported
    case ReceiveStreamState::kResetRecvd:  // the reset not yet reported
      return true;
    case ReceiveStreamState::kDataRead:
    case ReceiveStreamState::kResetRead: return false;
  }
  return false;
}

void ReceiveStream::stop_sending(uint64_t error_code) {
  if (stopped_) return;
  stopped_ = true;
  stop_error_ = error_code;
  window_.stop_updates();
  // RFC 9000 §3.5: STOP_SENDING only makes sense while the peer may still
  // be sending (Recv or Size Known).
  stop_pending_ = state_ == ReceiveStreamState::kRecv || state_ == ReceiveStreamState::kSizeKnown;
  // Every byte goes now and none is stored from here on; the ranges that
  // arrive are still recorded, so the stream can tell when the peer has sent
  // everything. Only that makes it safe for connection_consumed() to count
  // everything received as consumed: the connection window keeps opening
  // for a stopped stream, and its data must not hold memory.
  buffer_.discard();
}

bool ReceiveStream::stop_sending_due() const {
  return stop_pending_ &&
         (state_ == ReceiveStreamState::kRecv || state_ == ReceiveStreamState::kSizeKnown);
}

void ReceiveStream::on_stop_sending_lost() {
  if (stopped_ && (state_ == ReceiveStreamState::kRecv || state_ == ReceiveStreamState::kSizeKnown))
    stop_pending_ = true;
}

bool ReceiveStream::finished() const {
  switch (state_) {
    case ReceiveStreamState::kDataRead:
    case ReceiveStreamState::kResetRead: return true;
    case ReceiveStreamState::kDataRecvd:
    case ReceiveStreamState::kResetRecvd: return stopped_;
    case ReceiveStreamState::kRecv:
    case ReceiveStreamState::kSizeKnown: return false;
  }
  return false;
}

uint64_t ReceiveStream::connection_consumed() const {
  if (reset_received()) return final_size_;
  if (stopped_) return window_.highest_received();
  return buffer_.read_offset();
}

}  // namespace dpquic::conn
