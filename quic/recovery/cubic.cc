#include "quic/recovery/cubic.h"

#include <algorithm>
#include <cmath>

namespace dpquic::recovery {

Cubic::Cubic(uint64_t max_datagram_size, bool hystart_enabled)
    : max_datagram_size_(max_datagram_size),
      congestion_window_(initial_window(max_datagram_size)),
      hystart_enabled_(hystart_enabled) {}

bool Cubic::in_recovery(Instant time_sent) const { return recovery_.contains(time_sent); }

bool Cubic::hystart_active() const {
  // RFC 9406 §4.3: only the first slow start, while ssthresh is unset.
  return hystart_enabled_ && slow_start_threshold_ == UINT64_MAX;
}

double Cubic::w_cubic(Duration since_epoch_start) const {
  const double t = static_cast<double>(since_epoch_start) / static_cast<double>(kSecond);
  const double x = t - k_seconds_;
  return kC * x * x * x * static_cast<double>(max_datagram_size_) + w_max_;
}

void Cubic::on_packet_sent(Instant now, uint64_t, uint64_t size, uint64_t bytes_in_flight) {
  // RFC 9438 §5.8: time spent idle is not time on the curve. When this is
  // the only packet in flight, the sender sat idle since its previous send,
  // so the epoch moves forward by that gap (as Linux CUBIC does).
  if (bytes_in_flight <= size && sent_any_ && epoch_started_ && now > last_sent_time_) {
    epoch_start_ += now - last_sent_time_;
    if (epoch_start_ > now) epoch_start_ = now;
  }
  sent_any_ = true;
  last_sent_time_ = now;
}

void Cubic::on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator& rtt,
                            uint64_t, bool app_limited) {
  // Every newly acknowledged packet is an RTT observation for HyStart++.
  if (!frame_acked_any_ || packet.time_sent > frame_newest_time_sent_) {
    frame_newest_time_sent_ = packet.time_sent;
  }
  frame_acked_any_ = true;

  // RFC 9002 §7.8 and §7.3.2: no growth while under-using the window or for
  // packets sent before the current recovery period began.
  if (app_limited || in_recovery(packet.time_sent)) return;

  uint64_t avoidance_bytes = packet.size;
  if (in_slow_start()) {
    const uint64_t increase =
        hystart_active() ? hystart_.window_increase(packet.size) : packet.size;
    const uint64_t growth = std::min(increase, slow_start_threshold_ - congestion_window_);
    congestion_window_ += growth;
    // Bytes beyond ssthresh count toward congestion avoidance. (HyStart++
    // runs only while ssthresh is unset, so its quarter-rate growth never
    // reaches here.)
    if (growth == increase) return;
    avoidance_bytes = packet.size - growth;
  }
  grow_in_congestion_avoidance(now, avoidance_bytes, rtt.smoothed_rtt());
}

void Cubic::start_epoch(Instant now) {
  epoch_started_ = true;
  epoch_start_ = now;
  cwnd_epoch_ = congestion_window_;
  if (w_max_from_epoch_) {
    // §4.8 and §4.10: no congestion event defines the plateau, so the
    // curve starts at its inflection point, in the convex region.
    w_max_from_epoch_ = false;
    w_max_ = static_cast<double>(cwnd_epoch_);
    cwnd_prior_ = cwnd_epoch_;
    k_seconds_ = 0;
  } else {
    // §4.2: K = cbrt((W_max - cwnd_epoch) / C), in segments.
    const double segments =
        (w_max_ - static_cast<double>(cwnd_epoch_)) / static_cast<double>(max_datagram_size_);
    k_seconds_ = std::cbrt(segments / kC);
  }
  // §4.3: the Reno-friendly estimate starts from the epoch's window.
  w_est_ = cwnd_epoch_;
  w_est_remainder_ = 0;
  cubic_remainder_ = 0;
}

void Cubic::grow_in_congestion_avoidance(Instant now, uint64_t acked_bytes, Duration smoothed_rtt) {
  if (!epoch_started_) start_epoch(now);
  const Duration t = now > epoch_start_ ? now - epoch_start_ : 0;
  const uint64_t cwnd = congestion_window_;

  // §4.3: W_est += alpha_cubic * segments_acked / cwnd, in bytes
  // alpha * acked * mds / cwnd; alpha becomes 1 once W_est reaches
  // cwnd_prior. Kept exact in units of 1/(17 * cwnd) bytes.
  const uint64_t alpha_numerator = w_est_ >= cwnd_prior_ ? kAlphaDenominator : kAlphaNumerator;
  const uint64_t w_est_denominator = kAlphaDenominator * cwnd;
  w_est_remainder_ += alpha_numerator * acked_bytes * max_datagram_size_;
  w_est_ += w_est_remainder_ / w_est_denominator;
  w_est_remainder_ %= w_est_denominator;

  if (w_cubic(t) < static_cast<double>(w_est_)) {
    // Reno-friendly region: the window follows W_est (never shrinking on
    // an ACK).
    congestion_window_ = std::max(cwnd, w_est_);
    cubic_remainder_ = 0;
    return;
  }

  // §4.4/§4.5: aim at W_cubic one smoothed RTT ahead, clamped to
  // [cwnd, 1.5 * cwnd], and close (target - cwnd) / cwnd of the gap per
  // segment acknowledged.
  const double upper = 1.5 * static_cast<double>(cwnd);
  const double ahead = std::clamp(w_cubic(t + smoothed_rtt), static_cast<double>(cwnd), upper);
  const uint64_t target = static_cast<uint64_t>(ahead);
  cubic_remainder_ += (target - cwnd) * acked_bytes;
  congestion_window_ = cwnd + cubic_remainder_ / cwnd;
  cubic_remainder_ %= cwnd;
}

void Cubic::on_ack_processed(Instant now, const RttEstimator&, uint64_t) {
  if (frame_acked_any_ && hystart_active()) {
    const Duration sample = now > frame_newest_time_sent_ ? now - frame_newest_time_sent_ : 0;
    if (hystart_.on_ack(now, frame_newest_time_sent_, sample) ==
        HyStartPlusPlus::Outcome::kExitToCongestionAvoidance) {
      slow_start_threshold_ = congestion_window_;
    }
  }
  frame_acked_any_ = false;
  frame_newest_time_sent_ = 0;
}

void Cubic::on_congestion_event(Instant now, Instant time_sent) {
  if (in_recovery(time_sent)) return;  // RFC 9002 §7.3.2: one reduction per period
  saved_ = Saved{congestion_window_, slow_start_threshold_, recovery_, epoch_started_,
                 w_max_from_epoch_,  epoch_start_,          w_max_,    k_seconds_,
                 cwnd_epoch_,        cwnd_prior_,           w_est_,    w_est_remainder_,
                 cubic_remainder_};
  saved_valid_ = true;
  recovery_.begin(now);

  const uint64_t cwnd = congestion_window_;
  // §4.7 fast convergence: below the last plateau, release bandwidth by
  // lowering W_max to cwnd * (1 + beta) / 2.
  const double cwnd_bytes = static_cast<double>(cwnd);
  constexpr double kFastConvergence =
      static_cast<double>(kBetaDenominator + kBetaNumerator) / (2.0 * kBetaDenominator);
  w_max_ = cwnd_bytes < w_max_ ? cwnd_bytes * kFastConvergence : cwnd_bytes;
  w_max_from_epoch_ = false;
  cwnd_prior_ = cwnd;
  // §4.6: ssthresh = cwnd * beta_cubic, at least two segments (RFC 9002's
  // minimum window).
  slow_start_threshold_ =
      std::max(cwnd * kBetaNumerator / kBetaDenominator, minimum_window(max_datagram_size_));
  congestion_window_ = slow_start_threshold_;
  epoch_started_ = false;
  w_est_remainder_ = 0;
  cubic_remainder_ = 0;
}

void Cubic::on_persistent_congestion(Instant) {
  // RFC 9002 §7.6.2: the minimum window, and out of recovery. RFC 9438
  // §4.8: the next epoch restarts the curve from its own window.
  congestion_window_ = minimum_window(max_datagram_size_);
  recovery_.end();
  epoch_started_ = false;
  w_max_from_epoch_ = true;
  w_est_remainder_ = 0;
  cubic_remainder_ = 0;
  saved_valid_ = false;  // never undone
}

bool Cubic::undo_congestion_event() {
  if (!saved_valid_) return false;
  saved_valid_ = false;
  slow_start_threshold_ = std::max(slow_start_threshold_, saved_.slow_start_threshold);
  recovery_ = saved_.recovery;
  // A window that already grew past the saved one keeps its own curve;
  // otherwise the curve continues as if the reduction never happened (the
  // epoch's start stays where it was, so the time since counts).
  if (saved_.congestion_window <= congestion_window_) return true;
  congestion_window_ = saved_.congestion_window;
  epoch_started_ = saved_.epoch_started;
  w_max_from_epoch_ = saved_.w_max_from_epoch;
  epoch_start_ = saved_.epoch_start;
  w_max_ = saved_.w_max;
  k_seconds_ = saved_.k_seconds;
  cwnd_epoch_ = saved_.cwnd_epoch;
  cwnd_prior_ = saved_.cwnd_prior;
  w_est_ = saved_.w_est;
  w_est_remainder_ = saved_.w_est_remainder;
  cubic_remainder_ = saved_.cubic_remainder;
  return true;
}

void Cubic::reset() { *this = Cubic(max_datagram_size_, hystart_enabled_); }

void Cubic::reset_for_new_path(Instant now) {
  reset();
  recovery_.begin(now);  // in_recovery(): ignored for growth and reduction
}

}  // namespace dpquic::recovery
