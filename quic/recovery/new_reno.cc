#include "quic/recovery/new_reno.h"

#include <algorithm>

namespace dpquic::recovery {

NewReno::NewReno(uint64_t max_datagram_size)
    : max_datagram_size_(max_datagram_size),
      congestion_window_(initial_window(max_datagram_size)) {}

void NewReno::on_packet_sent(Instant, uint64_t, uint64_t, uint64_t) {}

bool NewReno::in_recovery(Instant time_sent) const { return recovery_.contains(time_sent); }

void NewReno::on_packet_acked(Instant, const AckedPacket& packet, const RttEstimator&, uint64_t,
                              bool app_limited) {
  // §7.8: an under-used window says nothing about the path; §7.3.2: packets
  // sent before the recovery period began do not grow the window.
  if (app_limited || in_recovery(packet.time_sent)) return;

  uint64_t avoidance_bytes = packet.size;
  if (in_slow_start()) {
    // §7.3.1: one byte of window per byte acknowledged, up to ssthresh; the
    // rest of this packet counts toward congestion avoidance.
    const uint64_t growth = std::min(packet.size, slow_start_threshold_ - congestion_window_);
    congestion_window_ += growth;
    avoidance_bytes -= growth;
    if (avoidance_bytes == 0) return;
  }
  // §7.3.3: one maximum datagram size per congestion window acknowledged.
  avoidance_bytes_acked_ += avoidance_bytes;
  while (avoidance_bytes_acked_ >= congestion_window_) {
    avoidance_bytes_acked_ -= congestion_window_;
    congestion_window_ += max_datagram_size_;
  }
}

void NewReno::on_ack_processed(Instant, const RttEstimator&, uint64_t) {}

void NewReno::on_congestion_event(Instant now, Instant time_sent) {
  // §7.3.2: one reduction per round trip; losses of packets sent before the
  // current recovery period began are part of the same event.
  if (in_recovery(time_sent)) return;
  saved_ = Saved{congestion_window_, slow_start_threshold_, avoidance_bytes_acked_, recovery_};
  saved_valid_ = true;
  recovery_.begin(now);
  slow_start_threshold_ = congestion_window_ * kLossReductionNumerator / kLossReductionDenominator;
  congestion_window_ = std::max(slow_start_threshold_, minimum_window(max_datagram_size_));
  avoidance_bytes_acked_ = 0;
}

void NewReno::on_persistent_congestion(Instant) {
  // §7.6.2 and §B.8: collapse to the minimum window and leave recovery, so
  // the next loss reduces the window again.
  congestion_window_ = minimum_window(max_datagram_size_);
  recovery_.end();
  avoidance_bytes_acked_ = 0;
  saved_valid_ = false;  // never undone
}

bool NewReno::undo_congestion_event() {
  if (!saved_valid_) return false;
  saved_valid_ = false;
  // As if the reduction never happened; growth since it is kept when the
  // window has already passed the saved one.
  if (saved_.congestion_window > congestion_window_) {
    congestion_window_ = saved_.congestion_window;
    avoidance_bytes_acked_ = saved_.avoidance_bytes_acked;
  }
  slow_start_threshold_ = std::max(slow_start_threshold_, saved_.slow_start_threshold);
  recovery_ = saved_.recovery;
  return true;
}

void NewReno::reset() { *this = NewReno(max_datagram_size_); }

void NewReno::reset_for_new_path(Instant now) {
  reset();
  recovery_.begin(now);  // in_recovery(): ignored for growth and reduction
}

}  // namespace dpquic::recovery
