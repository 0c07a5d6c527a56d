#pragma once
// BBR congestion control, version 3, as draft-ietf-ccwg-bbr-06 specifies it
// ("BBR Congestion Control", N. Cardwell, I. Swett, J. Beshay, July 2026).
//
// A model of the path, not a reaction to loss: the maximum delivery rate of
// the last two ProbeBW cycles (BBR.max_bw, a windowed max filter of the
// delivery-rate samples of delivery_rate.h) and the minimum RTT of the last
// 10 s (BBR.min_rtt, a min filter integrated with ProbeRTT as §5.3.4.3
// describes). Their product is the BDP; the pacing rate is a gain times the
// bandwidth, and the window a gain times the BDP, bounded by what loss says
// is too much: inflight_longterm (the draft's former inflight_hi) over
// ProbeBW cycles, bw_shortterm and inflight_shortterm (inflight_lo) within
// one. The state machine (§5.1) is STARTUP, DRAIN, PROBE_BW's DOWN, CRUISE,
// REFILL and UP, and PROBE_RTT.
//
// Functions carry the draft's names in comments; bbr.cc holds the model
// and the per-ACK and per-loss steps, bbr_cycle.cc the ProbeBW and ProbeRTT
// state machine. Rates are bytes per second in double precision (a few
// dozen flops per ACK), volumes bytes, times nanoseconds.
//
// Where QUIC differs from the draft's TCP framing:
// - Only Application-space packets give rate samples (delivery_rate.h).
// - A congestion event (RFC 9002 §7.3.2) is BBR's fast recovery: it saves
//   the window (OnEnterFastRecovery), and the first ACK of a packet sent
//   after it ends recovery and restores the window (RestoreCwnd).
// - Persistent congestion (RFC 9002 §7.6) is the RTO of §5.6.4.4.
// - ECN-CE counts as a congestion event, like a loss, for recovery. The
//   draft's model responds to loss only; CE marks bound it as BBRv2's
//   design does (bbr_ecn.h): a round with marks cuts inflight_shortterm by
//   kEcnFactor * alpha, and a round with more than kEcnThresh of its
//   packets marked ends Startup or a bandwidth probe as high loss does.

#include <algorithm>
#include <cstdint>

#include "quic/recovery/bbr_ecn.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/delivery_rate.h"
#include "quic/recovery/windowed_filter.h"

namespace dpquic::recovery {

class Bbr final : public CongestionController {
 public:
  enum class State : uint8_t {
    kStartup,
    kDrain,
    kProbeBwDown,
    kProbeBwCruise,
    kProbeBwRefill,
    kProbeBwUp,
    kProbeRtt,
  };
  // BBR.ack_phase (§2.14).
  enum class AckPhase : uint8_t {
    kInit,
    kRefilling,
    kProbeStarting,
    kProbeFeedback,
    kProbeStopping
  };

  // §2.5, §2.6: gains.
  static constexpr double kStartupPacingGain = 2.77;  // 4 * ln(2)
  static constexpr double kDrainPacingGain = 0.5;
  static constexpr double kPacingMarginPercent = 1;
  static constexpr double kDefaultCwndGain = 2;
  static constexpr double kProbeUpCwndGain = 2.25;  // §5.3.3.5
  static constexpr double kProbeDownPacingGain = 0.9;
  static constexpr double kProbeUpPacingGain = 1.25;
  // §2.8: loss tolerance and responses.
  static constexpr double kLossThresh = 0.02;
  static constexpr double kBeta = 0.7;
  static constexpr double kHeadroom = 0.15;
  static constexpr uint64_t kMinPipeCwndSegments = 4;
  // §2.12, §5.3.1.3: filters and Startup's loss exit.
  static constexpr uint64_t kExtraAckedFilterLen = 10;  // rounds
  static constexpr uint64_t kStartupFullLossCount = 6;
  static constexpr uint32_t kFullBwRounds = 3;
  static constexpr double kFullBwGrowth = 1.25;
  // §2.16: min_rtt and ProbeRTT.
  static constexpr Duration kMinRttFilterLen = 10 * kSecond;
  static constexpr double kProbeRttCwndGain = 0.5;
  static constexpr Duration kProbeRttDuration = 200 * kMillisecond;
  static constexpr Duration kProbeRttInterval = 5 * kSecond;
  // §5.3.3.8: Reno-coexistence bound on rounds between probes, and
  // §5.3.3.9: bound on the doubling of inflight_longterm's growth.
  static constexpr uint64_t kMaxRenoRounds = 63;
  static constexpr uint32_t kMaxProbeUpRounds = 30;
  // ECN (bbr_ecn.h): the fraction of a round's packets marked above which
  // inflight is too high, and the cut per marked round at alpha = 1.
  static constexpr double kEcnThresh = 0.5;
  static constexpr double kEcnFactor = 1.0 / 3;

  // `seed` drives the randomized probe timing (§5.3.3.8: PickProbeWait).
  explicit Bbr(uint64_t max_datagram_size, uint64_t seed = 1);

  void on_packet_sent(Instant now, uint64_t packet_number, uint64_t size,
                      uint64_t bytes_in_flight) override;
  void on_packet_sent_in_space(Instant now, bool application_space, uint64_t packet_number,
                               uint64_t size, uint64_t bytes_in_flight) override;
  void on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator& rtt,
                       uint64_t bytes_in_flight, bool app_limited) override;
  void on_ack_processed(Instant now, const RttEstimator& rtt, uint64_t bytes_in_flight) override;
  void on_packet_lost(Instant now, const AckedPacket& packet) override;
  void on_packet_discarded(const AckedPacket& packet) override;
  void on_app_limited(uint64_t bytes_in_flight) override;
  void on_ce_marks(Instant now, uint64_t count) override;
  void on_congestion_event(Instant now, Instant time_sent) override;
  void on_persistent_congestion(Instant now) override;
  bool undo_congestion_event() override;

  uint64_t congestion_window() const override { return cwnd_; }
  uint64_t slow_start_threshold() const override { return UINT64_MAX; }
  bool in_slow_start() const override { return state_ == State::kStartup; }
  bool in_recovery(Instant time_sent) const override { return recovery_.contains(time_sent); }
  CongestionControlAlgorithm algorithm() const override { return CongestionControlAlgorithm::kBbr; }
  uint64_t pacing_rate() const override { return static_cast<uint64_t>(pacing_rate_); }
  const char* state_name() const override { return state_name(state_); }
  uint64_t bandwidth_estimate() const override { return static_cast<uint64_t>(bw_); }
  Duration model_min_rtt() const override { return min_rtt_ == kNever ? 0 : min_rtt_; }
  void reset() override;
  void reset_for_new_path(Instant now) override;

  // The model, for tests and qlog.
  State state() const { return state_; }
  double max_bw() const { return max_bw_; }  // bytes per second
  double bw() const { return bw_; }
  Duration min_rtt() const { return min_rtt_; }  // kNever before a sample
  uint64_t bdp() const;
  uint64_t inflight_longterm() const { return inflight_longterm_; }
  uint64_t inflight_shortterm() const { return inflight_shortterm_; }
  double bw_shortterm() const { return bw_shortterm_; }
  uint64_t extra_acked() const { return extra_acked_; }
  double pacing_gain() const { return pacing_gain_; }
  double cwnd_gain() const { return cwnd_gain_; }
  bool full_bw_reached() const { return full_bw_reached_; }
  uint64_t round_count() const { return round_count_; }
  uint64_t probe_rtt_rounds_entered() const { return probe_rtt_entries_; }
  const DeliveryRateSampler& sampler() const { return sampler_; }
  const CeRounds& ce_rounds() const { return ce_rounds_; }
  uint64_t max_datagram_size() const { return smss_; }
  static const char* state_name(State state);

 private:
  static constexpr uint64_t kInfinite = UINT64_MAX;
  static constexpr double kInfiniteBw = 1e300;

  // --- bbr.cc: initialization, the model, control parameters ---
  void on_init();                   // OnInit()
  void initialize_at(Instant now);  // the stamps OnInit() takes from Now()
  void open_ack();                  // InitRateSample() once per ACK
  const RateSample& rs() const { return sampler_.sample(); }
  bool is_cwnd_limited() const { return cwnd_limited_this_round_ || cwnd_limited_last_round_; }
  void reset_full_bw();  // ResetFullBW()
  void init_lower_bounds();
  void loss_lower_bounds();
  void check_ecn_too_high(Instant now);
  void update_on_ack(Instant now);  // UpdateOnACK() after GenerateRateSample()
  void update_model_and_state(Instant now);
  void update_control_parameters();
  void update_latest_delivery_signals();  // UpdateLatestDeliverySignals()
  void advance_latest_delivery_signals();
  void update_congestion_signals(Instant now);  // UpdateCongestionSignals()
  void update_max_bw();                         // UpdateMaxBw() and UpdateRound()
  void update_ack_aggregation(Instant now);
  void adapt_lower_bounds_from_congestion();
  void reset_congestion_signals();
  void reset_short_term_model();
  void bound_bw_for_model() { bw_ = std::min(max_bw_, bw_shortterm_); }
  void check_full_bw_reached();    // CheckFullBWReached()
  void check_startup_high_loss();  // CheckStartupHighLoss()
  void check_startup_done();
  void check_drain_done(Instant now);
  void update_min_rtt(Instant now);  // UpdateMinRTT()
  void handle_restart_from_idle(Instant now, uint64_t bytes_in_flight_before);
  void note_loss();  // NoteLoss()
  void save_state_upon_loss();
  void handle_inflight_too_high(Instant now, bool app_limited, uint64_t tx_in_flight);
  uint64_t inflight_at_loss(uint64_t size, const LostPacketSnapshot& p) const;
  bool is_inflight_too_high(uint64_t lost, uint64_t tx_in_flight) const;
  void set_pacing_rate_with_gain(double gain);
  void init_pacing_rate(Duration srtt);
  void set_cwnd();  // SetCwnd()
  void bound_cwnd_for_model();
  void save_cwnd();
  void restore_cwnd() { cwnd_ = std::max(cwnd_, prior_cwnd_); }
  uint64_t bdp_multiple(double bw, double gain) const;
  uint64_t quantization_budget(uint64_t inflight_cap) const;
  uint64_t inflight(double bw, double gain) const {
    return quantization_budget(bdp_multiple(bw, gain));
  }
  uint64_t inflight_with_headroom() const;
  uint64_t target_inflight() const;
  uint64_t min_pipe_cwnd() const { return kMinPipeCwndSegments * smss_; }
  uint64_t send_quantum() const;
  void start_round() { next_round_delivered_ = sampler_.delivered(); }

  // --- bbr_cycle.cc: ProbeBW and ProbeRTT ---
  void enter_startup();
  void enter_drain();
  void enter_probe_bw(Instant now);
  void start_probe_bw_down(Instant now);
  void start_probe_bw_cruise();
  void start_probe_bw_refill();
  void start_probe_bw_up();
  void update_probe_bw_cycle_phase(Instant now);
  bool adapt_long_term_model(Instant now);
  bool is_time_to_probe_bw(Instant now);
  bool is_time_to_cruise() const;
  bool is_time_to_go_down();
  bool has_elapsed_in_phase(Instant now, Duration interval) const;
  bool is_reno_coexistence_probe_time() const;
  void pick_probe_wait();
  void raise_inflight_longterm_slope();
  void probe_inflight_longterm_upward();
  bool is_in_probe_bw_state() const;
  bool is_probing_bw() const;
  void check_probe_rtt(Instant now);
  void enter_probe_rtt();
  void handle_probe_rtt(Instant now);
  void check_probe_rtt_done(Instant now);
  void exit_probe_rtt(Instant now);
  uint64_t probe_rtt_cwnd() const;
  uint64_t random();

  uint64_t smss_;
  uint64_t initial_cwnd_;
  uint64_t seed_;
  uint64_t rng_;
  DeliveryRateSampler sampler_;
  bool ack_open_ = false;
  bool initialized_ = false;
  Instant ignore_sent_until_ = 0;  // packets sent on an old path (RFC 9000 §9.4)
  bool has_ignore_cutoff_ = false;

  // C.*: the window, the pacing rate, flight, recovery.
  uint64_t cwnd_;
  double pacing_rate_ = 0;
  uint64_t inflight_ = 0;
  bool cwnd_limited_this_round_ = false;
  bool cwnd_limited_last_round_ = false;
  RecoveryPeriod recovery_;
  bool in_loss_recovery_ = false;

  // BBR.* (§2.5-§2.16).
  State state_ = State::kStartup;
  double pacing_gain_ = kStartupPacingGain;
  double cwnd_gain_ = kDefaultCwndGain;
  uint64_t round_count_ = 0;
  bool round_start_ = false;
  uint64_t next_round_delivered_ = 0;
  bool idle_restart_ = false;
  uint64_t drain_start_round_ = 0;
  double max_bw_ = 0;
  double bw_shortterm_ = kInfiniteBw;
  double bw_ = 0;
  Duration min_rtt_ = kNever;
  Instant min_rtt_stamp_ = 0;
  uint64_t extra_acked_ = 0;
  uint64_t max_inflight_ = 0;
  uint64_t inflight_longterm_ = kInfinite;
  uint64_t inflight_shortterm_ = kInfinite;
  double bw_latest_ = 0;
  uint64_t inflight_latest_ = 0;
  TwoCycleMaxFilter<double> max_bw_filter_;
  WindowedMaxFilter<uint64_t> extra_acked_filter_;
  Instant extra_acked_interval_start_ = 0;
  uint64_t extra_acked_delivered_ = 0;
  bool full_bw_reached_ = false;
  bool full_bw_now_ = false;
  double full_bw_ = 0;
  uint32_t full_bw_count_ = 0;
  AckPhase ack_phase_ = AckPhase::kInit;
  bool is_bw_probe_sample_ = false;
  bool is_loss_in_round_ = false;
  CeRounds ce_rounds_;
  bool loss_round_start_ = false;
  uint64_t loss_round_delivered_ = 0;
  uint64_t bw_probe_up_acked_ = 0;
  uint64_t probe_up_acked_per_inc_ = kInfinite;
  uint32_t bw_probe_up_rounds_ = 0;
  uint64_t rounds_since_probe_up_ = 0;
  Duration bw_probe_wait_ = 0;
  Instant cycle_stamp_ = 0;
  bool prev_probe_too_high_ = false;
  bool prev_probe_precautionary_ = false;
  // Startup's loss exit (§5.3.1.3): this round's losses.
  uint64_t lost_in_round_ = 0;
  uint64_t loss_ranges_in_round_ = 0;
  uint64_t last_lost_packet_ = UINT64_MAX;
  // The same, for the round that ended at the latest loss round start.
  uint64_t lost_last_round_ = 0;
  uint64_t loss_ranges_last_round_ = 0;
  uint64_t delivered_last_round_ = 0;
  uint64_t delivered_at_loss_round_start_ = 0;
  // Undo (§2.15).
  State undo_state_ = State::kStartup;
  bool has_undo_state_ = false;
  double undo_bw_shortterm_ = 0;
  uint64_t undo_inflight_shortterm_ = 0;
  uint64_t undo_inflight_longterm_ = 0;
  uint64_t prior_cwnd_ = 0;
  // ProbeRTT (§2.16).
  Duration probe_rtt_min_delay_ = kNever;
  Instant probe_rtt_min_stamp_ = 0;
  bool probe_rtt_expired_ = false;
  Instant probe_rtt_done_stamp_ = 0;
  bool probe_rtt_round_done_ = false;
  uint64_t probe_rtt_entries_ = 0;
};

}  // namespace dpquic::recovery
