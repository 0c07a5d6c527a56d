#pragma once
// Flow control, RFC 9000 §4: the receive window we advertise (per stream and
// per connection) and the connection-level send credit the peer gives us.

#include <cstdint>

#include "quic/time.h"

namespace dpquic::conn {

// The largest value a MAX_DATA / MAX_STREAM_DATA frame can carry (a varint).
inline constexpr uint64_t kMaxFlowLimit = (uint64_t{1} << 62) - 1;

// One per stream and one per connection. Tracks what we advertised (limit),
// what the peer sent (highest_received) and what the application consumed,
// and decides when a MAX_DATA / MAX_STREAM_DATA update is due.
//
// Auto-tuning (as in quinn and chromium): when an update becomes due less
// than two RTTs after the previous one became due, the window is the
// bottleneck (the application drains it faster than a round trip), so the
// window doubles, up to max_window.
class ReceiveWindow {
 public:
  // initial_window: what we advertised in the transport parameters
  // (initial_max_data / initial_max_stream_data_*). max_window: the
  // auto-tuning cap (raised to initial_window if below it).
  ReceiveWindow(uint64_t initial_window, uint64_t max_window);

  // The peer's highest offset (the sum over streams for the connection) rose
  // to `highest`. False: beyond the advertised limit (FLOW_CONTROL_ERROR);
  // nothing is recorded then.
  bool on_received(uint64_t highest);
  // The application has consumed up to `consumed` (monotonic; smaller values
  // are ignored).
  void on_consumed(uint64_t consumed, Instant now, Duration rtt);

  // Whether a limit update should be sent: consumed has passed half the
  // window since the last advertised limit, or the last update was lost.
  // Always false after stop_updates().
  bool update_due() const;
  uint64_t limit() const { return limit_; }  // the largest limit advertised so far
  // consumed + window (capped at 2^62 - 1, never below limit()).
  uint64_t next_limit() const;
  // A frame carrying `limit` (normally next_limit()) was sent.
  void on_update_sent(uint64_t limit);
  // The frame carrying `limit` was lost: due again if it is still the latest.
  void on_update_lost(uint64_t limit);
  // No more updates (the stream's final size is known, or it was stopped).
  void stop_updates() { updates_stopped_ = true; }
  bool updates_stopped() const { return updates_stopped_; }

  uint64_t window() const { return window_; }
  uint64_t max_window() const { return max_window_; }
  uint64_t consumed() const { return consumed_; }
  uint64_t highest_received() const { return highest_received_; }

 private:
  // consumed has moved half a window past the last advertised limit.
  bool threshold_reached() const;

  uint64_t window_;
  uint64_t max_window_;
  uint64_t limit_;
  uint64_t consumed_ = 0;
  uint64_t highest_received_ = 0;
  // When the previous update became due (for auto-tuning).
  Instant previous_due_time_ = 0;
  bool has_previous_due_ = false;
  // The current update has become due (and was considered for tuning).
  bool due_noted_ = false;
  bool resend_ = false;
  bool updates_stopped_ = false;
};

// Connection-level send credit: the peer's MAX_DATA.
class SendCredit {
 public:
  explicit SendCredit(uint64_t initial_limit = 0) : limit_(initial_limit) {}

  void on_max_data(uint64_t limit) {  // only ever raises
    if (limit > limit_) limit_ = limit;
  }
  uint64_t available() const { return limit_ > sent_ ? limit_ - sent_ : 0; }
  // New bytes (never retransmissions) were sent.
  void on_sent(uint64_t bytes) { sent_ += bytes; }
  uint64_t limit() const { return limit_; }
  uint64_t sent() const { return sent_; }

  // DATA_BLOCKED is sent once per limit: due when no credit is left and none
  // was sent for the current limit.
  bool blocked_frame_due() const {
    return available() == 0 && !(blocked_sent_ && blocked_limit_ == limit_);
  }
  void on_blocked_frame_sent() {
    blocked_sent_ = true;
    blocked_limit_ = limit_;
  }
  // The DATA_BLOCKED carrying `limit` was lost: due again if still blocked
  // at that limit.
  void on_blocked_frame_lost(uint64_t limit) {
    if (blocked_sent_ && blocked_limit_ == limit) blocked_sent_ = false;
  }

 private:
  uint64_t limit_;
  uint64_t sent_ = 0;
  uint64_t blocked_limit_ = 0;
  bool blocked_sent_ = false;
};

}  // namespace dpquic::conn
