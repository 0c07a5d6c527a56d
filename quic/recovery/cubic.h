#pragma once
// CUBIC congestion control (RFC 9438) in QUIC (RFC 9002 §7), with HyStart++
// (RFC 9406) in the first slow start.
//
// Windows are in bytes; the cubic curve is evaluated in segments of
// max_datagram_size and seconds, as RFC 9438 writes it, in double precision
// (a handful of flops per acknowledged packet; cbrt only once per
// congestion-avoidance epoch). The Reno-friendly estimate and the per-ACK
// growth keep integer remainders, so no byte of growth is lost to rounding.

#include <cstdint>

#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/hystart.h"

namespace dpquic::recovery {

class Cubic final : public CongestionController {
 public:
  // RFC 9438 §4.1 / §5: C = 0.4 segments/s^3, beta_cubic = 0.7.
  static constexpr double kC = 0.4;
  static constexpr uint64_t kBetaNumerator = 7;
  static constexpr uint64_t kBetaDenominator = 10;
  // alpha_cubic = 3 * (1 - beta) / (1 + beta) = 9/17 (§4.3).
  static constexpr uint64_t kAlphaNumerator = 9;
  static constexpr uint64_t kAlphaDenominator = 17;

  explicit Cubic(uint64_t max_datagram_size, bool hystart_enabled = true);

  void on_packet_sent(Instant now, uint64_t packet_number, uint64_t size,
                      uint64_t bytes_in_flight) override;
  void on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator& rtt,
                       uint64_t bytes_in_flight, bool app_limited) override;
  void on_ack_processed(Instant now, const RttEstimator& rtt, uint64_t bytes_in_flight) override;
  void on_congestion_event(Instant now, Instant time_sent) override;
  void on_persistent_congestion(Instant now) override;
  bool undo_congestion_event() override;

  uint64_t congestion_window() const override { return congestion_window_; }
  uint64_t slow_start_threshold() const override { return slow_start_threshold_; }
  bool in_slow_start() const override { return congestion_window_ < slow_start_threshold_; }
  void reset() override;
  void reset_for_new_path(Instant now) override;
  bool in_recovery(Instant time_sent) const override;
  CongestionControlAlgorithm algorithm() const override {
    return CongestionControlAlgorithm::kCubic;
  }

  // The curve, for inspection and tests. W_cubic(t) = C*(t-K)^3 + W_max in
  // bytes, t measured from the start of the congestion-avoidance epoch.
  double w_cubic(Duration since_epoch_start) const;
  bool epoch_started() const { return epoch_started_; }
  Instant epoch_start() const { return epoch_start_; }
  double w_max() const { return w_max_; }          // bytes; 0 until the first event
  double k_seconds() const { return k_seconds_; }  // K of the current epoch
  uint64_t cwnd_epoch() const { return cwnd_epoch_; }
  uint64_t cwnd_prior() const { return cwnd_prior_; }
  uint64_t w_est() const { return w_est_; }  // Reno-friendly estimate
  uint64_t max_datagram_size() const { return max_datagram_size_; }
  const HyStartPlusPlus& hystart() const { return hystart_; }
  bool hystart_active() const;

 private:
  void start_epoch(Instant now);
  void grow_in_congestion_avoidance(Instant now, uint64_t acked_bytes, Duration smoothed_rtt);

  uint64_t max_datagram_size_;
  uint64_t congestion_window_;
  uint64_t slow_start_threshold_ = UINT64_MAX;
  RecoveryPeriod recovery_;

  // §4.2: the current congestion-avoidance epoch, started by the first ACK
  // that may grow the window in congestion avoidance.
  bool epoch_started_ = false;
  Instant epoch_start_ = 0;
  double w_max_ = 0;
  double k_seconds_ = 0;
  uint64_t cwnd_epoch_ = 0;
  uint64_t cwnd_prior_ = 0;
  // §4.8/§4.10: after persistent congestion, or when slow start ends
  // without a congestion event, the next epoch starts the curve at its
  // inflection: W_max = cwnd_epoch, K = 0.
  bool w_max_from_epoch_ = true;
  uint64_t w_est_ = 0;
  uint64_t w_est_remainder_ = 0;  // in 1/(17*cwnd) bytes
  uint64_t cubic_remainder_ = 0;  // in 1/cwnd bytes

  // §4.9: what the latest reduction replaced, for undo_congestion_event():
  // the window and threshold, the recovery period, and the curve (W_max,
  // K, t_epoch, cwnd_epoch, W_est and their remainders).
  struct Saved {
    uint64_t congestion_window;
    uint64_t slow_start_threshold;
    RecoveryPeriod recovery;
    bool epoch_started;
    bool w_max_from_epoch;
    Instant epoch_start;
    double w_max;
    double k_seconds;
    uint64_t cwnd_epoch;
    uint64_t cwnd_prior;
    uint64_t w_est;
    uint64_t w_est_remainder;
    uint64_t cubic_remainder;
  };
  Saved saved_{};
  bool saved_valid_ = false;

  // Idle detection for the epoch shift (§5.8, as Linux does it).
  bool sent_any_ = false;
  Instant last_sent_time_ = 0;

  bool hystart_enabled_;
  HyStartPlusPlus hystart_;
  // The ACK frame in progress, for HyStart++.
  bool frame_acked_any_ = false;
  Instant frame_newest_time_sent_ = 0;
};

}  // namespace dpquic::recovery
