#pragma once
// The receiving part of one stream: RFC 9000 §3.2 states, §4.5 final-size
// rules, stream-level flow control, reassembly, RESET_STREAM and
// STOP_SENDING.
//
// Connection-level flow control is the connection's: it adds
// `newly_received` from each frame to its ReceiveWindow, and feeds it
// connection_consumed() (read bytes, plus everything a reset or stopped
// stream will never deliver) as it rises.

#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/conn/block_pool.h"
#include "quic/conn/flow_control.h"
#include "quic/conn/receive_buffer.h"
#include "quic/conn/transport_error.h"
#include "quic/time.h"

namespace dpquic::conn {

enum class ReceiveStreamState : uint8_t {
  kRecv,
  kSizeKnown,
  kDataRecvd,
  kResetRecvd,
  kDataRead,
  kResetRead,
};

class ReceiveStream {
 public:
  // The frame types put in TransportError::frame_type (the STREAM type
  // without flag bits; the connection may substitute the exact type).
  static constexpr uint64_t kStreamFrameType = 0x08;
  static constexpr uint64_t kResetStreamFrameType = 0x04;

  ReceiveStream(BlockPool& pool, uint64_t initial_window, uint64_t max_window,
                size_t max_gaps = 1024);

  // Back to a fresh stream (offset 0, kRecv) with new windows, keeping the
  // buffer's grown capacity (up to ReceiveBuffer's caps): for stream objects
  // that are recycled. The first form keeps the gap bound.
  void reinitialize(uint64_t initial_window, uint64_t max_window);
  void reinitialize(uint64_t initial_window, uint64_t max_window, size_t max_gaps);
  // The connection freed the stream: gives every block back to the pool
  // now. The object is not used again before reinitialize().
  void retire() { buffer_.clear(); }

  // A STREAM frame. `newly_received` is how much the stream's highest
  // received offset rose (0 on error). Errors: FLOW_CONTROL_ERROR beyond the
  // stream limit; FINAL_SIZE_ERROR for data beyond a known final size, a FIN
  // that changes it, or a FIN below data already received; INTERNAL_ERROR when
  // the block pool is exhausted; PROTOCOL_VIOLATION for too many gaps. Data
  // after a reset or after stop_sending() is not delivered (the final-size
  // and flow-control checks still apply).
  TransportError on_stream_frame(uint64_t offset, std::span<const uint8_t> data, bool fin,
                                 uint64_t& newly_received);
  // RESET_STREAM: FINAL_SIZE_ERROR when inconsistent with a known final size
  // or below data already received, FLOW_CONTROL_ERROR beyond the limit.
  // Buffered data is dropped. Ignored (after the checks) once all data has
  // been received.
  TransportError on_reset_stream(uint64_t error_code, uint64_t final_size,
                                 uint64_t& newly_received);

  // Copies up to out.size() bytes; `fin` is true once every byte up to the
  // final size has been read. On a reset stream, returns 0 and marks the
  // reset as reported (kResetRead).
  size_t read(std::span<uint8_t> out, bool& fin, Instant now, Duration rtt);
  // Zero-copy reading: peek() is the next contiguous piece in place (it may
  // end at a block boundary), with `fin` true when reading all of it reads
  // the stream to its final size. consume(n) then marks up to n of its bytes
  // read and returns how many; `fin` and a reset's report as read() does.
  // The piece stays valid until consume() or the next frame.
  std::span<const uint8_t> peek(bool& fin) const;
  size_t consume(size_t n, bool& fin, Instant now, Duration rtt);
  // Data readable now, or a FIN / reset not yet reported (false once stopped).
  bool readable() const;

  // The application no longer wants data: buffered and future data are
  // discarded (no byte is stored from now on), and STOP_SENDING with
  // `error_code` is due unless the peer has already sent everything or reset.
  void stop_sending(uint64_t error_code);
  bool stop_sending_due() const;
  uint64_t stop_sending_error() const { return stop_error_; }
  bool stopped() const { return stopped_; }
  void on_stop_sending_sent() { stop_pending_ = false; }
  void on_stop_sending_lost();

  // MAX_STREAM_DATA decisions; update_due() is false once the final size is
  // known or the stream was stopped.
  ReceiveWindow& window() { return window_; }
  const ReceiveWindow& window() const { return window_; }

  ReceiveStreamState state() const { return state_; }
  bool reset_received() const {
    return state_ == ReceiveStreamState::kResetRecvd || state_ == ReceiveStreamState::kResetRead;
  }
  uint64_t reset_error_code() const { return reset_error_; }
  // kDataRead or kResetRead, or stopped and the peer reset or sent
  // everything: the stream can be freed.
  bool finished() const;
  bool final_size_known() const { return final_size_known_; }
  uint64_t final_size() const { return final_size_; }  // valid once known
  uint64_t highest_received() const { return window_.highest_received(); }
  uint64_t read_offset() const { return buffer_.read_offset(); }
  // Bytes that count as consumed for connection-level flow control
  // (monotonic): bytes read, or all received bytes / the final size once
  // the stream was stopped / reset.
  uint64_t connection_consumed() const;
  const ReceiveBuffer& buffer() const { return buffer_; }

 private:
  // Applies the final-size checks (RFC 9000 §4.5) for a frame ending at `end`.
  TransportError check_final_size(uint64_t end, bool fin, uint64_t frame_type) const;
  // read() and consume()'s start: false (and reports a reset, once) when
  // nothing can be read.
  bool begin_read(bool& fin);
  // Their end: the window follows the read offset; `fin` once all is read.
  void end_read(bool& fin, Instant now, Duration rtt);

  ReceiveBuffer buffer_;
  ReceiveWindow window_;
  ReceiveStreamState state_ = ReceiveStreamState::kRecv;
  uint64_t final_size_ = 0;
  uint64_t reset_error_ = 0;
  uint64_t stop_error_ = 0;
  bool final_size_known_ = false;
  bool stopped_ = false;
  bool stop_pending_ = false;
};

}  // namespace dpquic::conn
