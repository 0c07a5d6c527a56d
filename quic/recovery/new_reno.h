#pragma once
// NewReno congestion control as RFC 9002 §7 and Appendix B describe it:
// slow start, congestion avoidance, one window reduction per recovery period,
// persistent congestion, and no growth while the window is under-used (§7.8).

#include <cstdint>

#include "quic/recovery/congestion_controller.h"

namespace dpquic::recovery {

class NewReno final : public CongestionController {
 public:
  // §B.2: kLossReductionFactor = 0.5.
  static constexpr uint64_t kLossReductionNumerator = 1;
  static constexpr uint64_t kLossReductionDenominator = 2;

  explicit NewReno(uint64_t max_datagram_size);

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
    return CongestionControlAlgorithm::kNewReno;
  }

  uint64_t max_datagram_size() const { return max_datagram_size_; }

 private:
  uint64_t max_datagram_size_;
  uint64_t congestion_window_;
  uint64_t slow_start_threshold_ = UINT64_MAX;
  // Bytes acknowledged in congestion avoidance since the window last grew:
  // the window grows by one datagram per window acknowledged (§7.3.3)
  // without the rounding loss of Appendix B's per-packet division.
  uint64_t avoidance_bytes_acked_ = 0;
  RecoveryPeriod recovery_;

  // What the latest reduction replaced, for undo_congestion_event().
  struct Saved {
    uint64_t congestion_window;
    uint64_t slow_start_threshold;
    uint64_t avoidance_bytes_acked;
    RecoveryPeriod recovery;
  };
  Saved saved_{};
  bool saved_valid_ = false;
};

}  // namespace dpquic::recovery
