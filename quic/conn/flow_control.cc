#include "quic/conn/flow_control.h"

#include <algorithm>

#include "quic/hot_path.h"

namespace dpquic::conn {

ReceiveWindow::ReceiveWindow(uint64_t initial_window, uint64_t max_window)
    : window_(std::min(initial_window, kMaxFlowLimit)),
      max_window_(std::min(std::max(max_window, initial_window), kMaxFlowLimit)),
      limit_(window_) {}

DPQUIC_HOT bool ReceiveWindow::on_received(uint64_t highest) {
  if (highest > limit_) return false;
  highest_received_ = std::max(highest_received_, highest);
  return true;
}

uint64_t ReceiveWindow::next_limit() const {
  const uint64_t next = consumed_ > kMaxFlowLimit - window_ ? kMaxFlowLimit : consumed_ + window_;
  return std::max(next, limit_);
}

void ReceiveWindow::on_consumed(uint64_t consumed, Instant now, Duration rtt) {
  if (consumed <= consumed_) return;
  consumed_ = consumed;
  if (due_noted_ || updates_stopped_ || !threshold_reached()) return;
  // An update just became due: if the previous one was due less than two
  // RTTs ago, the window, not the path, limits the transfer.
  due_noted_ = true;
  if (has_previous_due_ && now - previous_due_time_ < 2 * rtt && window_ < max_window_)
    window_ = std::min(window_ * 2, max_window_);
  previous_due_time_ = now;
  has_previous_due_ = true;
}

bool ReceiveWindow::threshold_reached() const {
  const uint64_t next = next_limit();
  return next > limit_ && next - limit_ >= window_ / 2;
}

bool ReceiveWindow::update_due() const {
  return !updates_stopped_ && (resend_ || threshold_reached());
}

void ReceiveWindow::on_update_sent(uint64_t limit) {
  if (limit >= limit_) {
    limit_ = limit;
    resend_ = false;
    due_noted_ = false;
  }
}

void ReceiveWindow::on_update_lost(uint64_t limit) {
  if (limit == limit_ && !updates_stopped_) resend_ = true;
}

}  // namespace dpquic::conn
