#include "quic/recovery/bbr.h"

#include <cmath>

namespace dpquic::recovery {

namespace {

constexpr double kNanosPerSecond = static_cast<double>(kSecond);

uint64_t saturating_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

uint64_t to_bytes(double value) {
  if (!(value > 0)) return 0;
  return value >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(value);
}

}  // namespace

Bbr::Bbr(uint64_t max_datagram_size, uint64_t seed)
    : smss_(max_datagram_size),
      initial_cwnd_(initial_window(max_datagram_size)),
      seed_(seed),
      rng_(seed | 1),
      cwnd_(initial_cwnd_) {
  on_init();
}

// §5.2.1 OnInit(). The stamps it takes from Now() are set by the first
// event that has a time (initialize_at).
void Bbr::on_init() {
  max_bw_filter_.reset();
  max_bw_ = 0;
  bw_ = 0;
  min_rtt_ = kNever;
  probe_rtt_done_stamp_ = 0;
  probe_rtt_round_done_ = false;
  prior_cwnd_ = 0;
  has_undo_state_ = false;
  undo_bw_shortterm_ = 0;
  undo_inflight_shortterm_ = 0;
  undo_inflight_longterm_ = 0;
  idle_restart_ = false;
  extra_acked_delivered_ = 0;
  extra_acked_filter_.reset(0, 0);
  extra_acked_ = 0;
  full_bw_reached_ = false;
  inflight_longterm_ = kInfinite;
  probe_up_acked_per_inc_ = kInfinite;
  bw_probe_up_acked_ = 0;
  bw_probe_up_rounds_ = 0;
  rounds_since_probe_up_ = 0;
  is_bw_probe_sample_ = false;
  prev_probe_too_high_ = false;
  prev_probe_precautionary_ = false;
  ack_phase_ = AckPhase::kInit;
  bw_probe_wait_ = 0;
  probe_rtt_min_delay_ = kNever;
  probe_rtt_expired_ = false;
  reset_congestion_signals();
  reset_short_term_model();
  ce_rounds_.reset();
  // InitRoundCounting()
  next_round_delivered_ = 0;
  round_start_ = false;
  round_count_ = 0;
  reset_full_bw();
  loss_round_start_ = false;
  loss_round_delivered_ = 0;
  lost_in_round_ = loss_ranges_in_round_ = 0;
  lost_last_round_ = loss_ranges_last_round_ = delivered_last_round_ = 0;
  delivered_at_loss_round_start_ = sampler_.delivered();
  last_lost_packet_ = UINT64_MAX;
  cwnd_ = initial_cwnd_;
  max_inflight_ = 0;
  in_loss_recovery_ = false;
  recovery_ = RecoveryPeriod{};
  cwnd_limited_this_round_ = cwnd_limited_last_round_ = false;
  init_pacing_rate(0);
  enter_startup();
  initialized_ = false;
  ack_open_ = false;
}

void Bbr::initialize_at(Instant now) {
  min_rtt_stamp_ = now;
  probe_rtt_min_stamp_ = now;
  extra_acked_interval_start_ = now;
  cycle_stamp_ = now;
  initialized_ = true;
}

void Bbr::reset() {
  rng_ = seed_ | 1;
  sampler_ = DeliveryRateSampler{};
  has_ignore_cutoff_ = false;
  on_init();
}

void Bbr::reset_for_new_path(Instant now) {
  // The ring keeps the old path's snapshots until their packets are
  // acknowledged or lost; they then count for nothing.
  ignore_sent_until_ = now;
  has_ignore_cutoff_ = true;
  on_init();
}

const char* Bbr::state_name(State state) {
  switch (state) {
    case State::kStartup: return "startup";
    case State::kDrain: return "drain";
    case State::kProbeBwDown: return "probe_bw_down";
    case State::kProbeBwCruise: return "probe_bw_cruise";
    case State::kProbeBwRefill: return "probe_bw_refill";
    case State::kProbeBwUp: return "probe_bw_up";
    case State::kProbeRtt: return "probe_rtt";
  }
  return "unknown";
}

// --- Per-packet events --------------------------------------------------------

void Bbr::on_packet_sent(Instant now, uint64_t packet_number, uint64_t size,
                         uint64_t bytes_in_flight) {
  on_packet_sent_in_space(now, true, packet_number, size, bytes_in_flight);
}

void Bbr::on_packet_sent_in_space(Instant now, bool application_space, uint64_t packet_number,
                                  uint64_t size, uint64_t bytes_in_flight) {
  if (!initialized_) initialize_at(now);
  // §5.2.2 OnTransmit(): HandleRestartFromIdle().
  handle_restart_from_idle(now, saturating_sub(bytes_in_flight, size));
  sampler_.on_packet_sent(now, application_space, packet_number, size, bytes_in_flight);
  inflight_ = bytes_in_flight;
  // C.is_cwnd_limited: less window is left than another datagram like this
  // one needs (datagrams grow past smss_ once the path MTU is known).
  if (bytes_in_flight + std::max(size, smss_) > cwnd_) cwnd_limited_this_round_ = true;
}

// §5.4.1 HandleRestartFromIdle().
void Bbr::handle_restart_from_idle(Instant now, uint64_t bytes_in_flight_before) {
  if (bytes_in_flight_before != 0 || !sampler_.is_app_limited()) return;
  idle_restart_ = true;
  extra_acked_interval_start_ = now;
  if (is_in_probe_bw_state()) {
    set_pacing_rate_with_gain(1);
  } else if (state_ == State::kProbeRtt) {
    check_probe_rtt_done(now);
  }
}

void Bbr::open_ack() {
  if (ack_open_) return;
  ack_open_ = true;
  sampler_.begin_ack();
}

void Bbr::on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator&, uint64_t,
                          bool) {
  if (has_ignore_cutoff_ && packet.time_sent <= ignore_sent_until_) {
    sampler_.on_packet_discarded(packet.application_space, packet.packet_number);
    return;
  }
  open_ack();
  sampler_.on_packet_acked(now, packet.application_space, packet.packet_number, packet.time_sent,
                           packet.size);
  if (packet.application_space) ce_rounds_.on_acked();
  inflight_ = saturating_sub(inflight_, packet.size);
  // §5.6.4.4: recovery ends with the first packet sent after it began;
  // the window comes back (BoundCwndForModel() bounds it at the ACK's end).
  if (in_loss_recovery_ && !recovery_.contains(packet.time_sent)) {
    in_loss_recovery_ = false;
    restore_cwnd();
  }
}

// §5.5.10.2 HandleLostPacket(P), with the bookkeeping of Startup's loss
// exit (§5.3.1.3: loss ranges and bytes in the current round).
void Bbr::on_packet_lost(Instant now, const AckedPacket& packet) {
  if (has_ignore_cutoff_ && packet.time_sent <= ignore_sent_until_) {
    sampler_.on_packet_discarded(packet.application_space, packet.packet_number);
    return;
  }
  open_ack();
  LostPacketSnapshot snapshot;
  const bool has_snapshot = sampler_.on_packet_lost(packet.application_space, packet.packet_number,
                                                    packet.size, snapshot);
  inflight_ = saturating_sub(inflight_, packet.size);
  lost_in_round_ += packet.size;
  if (!packet.application_space || packet.packet_number != last_lost_packet_ + 1) {
    ++loss_ranges_in_round_;
  }
  last_lost_packet_ = packet.application_space ? packet.packet_number : UINT64_MAX;

  note_loss();
  if (!is_bw_probe_sample_ || !has_snapshot) return;  // not sent while probing bandwidth
  if (is_inflight_too_high(snapshot.lost_since_send, snapshot.tx_in_flight)) {
    handle_inflight_too_high(now, snapshot.is_app_limited, inflight_at_loss(packet.size, snapshot));
  }
}

void Bbr::on_packet_discarded(const AckedPacket& packet) {
  sampler_.on_packet_discarded(packet.application_space, packet.packet_number);
  inflight_ = saturating_sub(inflight_, packet.size);
}

void Bbr::on_app_limited(uint64_t bytes_in_flight) { sampler_.mark_app_limited(bytes_in_flight); }

void Bbr::on_ce_marks(Instant, uint64_t count) { ce_rounds_.on_marks(count); }

// NoteLoss().
void Bbr::note_loss() {
  if (!is_loss_in_round_) {  // first loss in this round trip?
    loss_round_delivered_ = sampler_.delivered();
    save_state_upon_loss();
  }
  is_loss_in_round_ = true;
}

// §5.5.11.1 SaveStateUponLoss().
void Bbr::save_state_upon_loss() {
  save_cwnd();
  has_undo_state_ = false;
  undo_bw_shortterm_ = bw_shortterm_;
  undo_inflight_shortterm_ = inflight_shortterm_;
  undo_inflight_longterm_ = inflight_longterm_;
}

// IsInflightTooHigh(): QUIC always has selective acknowledgments.
bool Bbr::is_inflight_too_high(uint64_t lost, uint64_t tx_in_flight) const {
  return static_cast<double>(lost) > static_cast<double>(tx_in_flight) * kLossThresh;
}

// InflightAtLoss(P): where within P the loss rate crossed LossThresh.
uint64_t Bbr::inflight_at_loss(uint64_t size, const LostPacketSnapshot& p) const {
  const double inflight_prev = static_cast<double>(saturating_sub(p.tx_in_flight, size));
  const double lost_prev = static_cast<double>(saturating_sub(p.lost_since_send, size));
  const double lost_prefix = (kLossThresh * inflight_prev - lost_prev) / (1 - kLossThresh);
  return to_bytes(inflight_prev + std::max(lost_prefix, 0.0));
}

// HandleInflightTooHigh().
void Bbr::handle_inflight_too_high(Instant now, bool app_limited, uint64_t tx_in_flight) {
  prev_probe_too_high_ = true;
  is_bw_probe_sample_ = false;  // only react once per bw probe
  if (!app_limited) {
    inflight_longterm_ =
        std::max(tx_in_flight, to_bytes(static_cast<double>(target_inflight()) * kBeta));
  }
  if (state_ == State::kProbeBwUp) {
    undo_state_ = State::kProbeBwUp;
    has_undo_state_ = true;
    start_probe_bw_down(now);
  }
}

// §5.6.4.4: a congestion event is fast recovery (OnEnterFastRecovery()).
// The state for undo was saved by NoteLoss() at the round's first loss.
void Bbr::on_congestion_event(Instant now, Instant time_sent) {
  if (recovery_.contains(time_sent)) return;
  save_cwnd();
  recovery_.begin(now);
  in_loss_recovery_ = true;
}

// §5.6.4.4 OnEnterRTO(): persistent congestion is QUIC's timeout.
void Bbr::on_persistent_congestion(Instant now) {
  save_cwnd();
  save_state_upon_loss();
  cwnd_ = std::max(inflight_ + smss_, min_pipe_cwnd());
  recovery_.begin(now);
  in_loss_recovery_ = true;
}

// §5.5.11.2 HandleSpuriousLossDetection().
bool Bbr::undo_congestion_event() {
  restore_cwnd();
  is_loss_in_round_ = false;
  reset_full_bw();
  bw_shortterm_ = std::max(bw_shortterm_, undo_bw_shortterm_);
  inflight_shortterm_ = std::max(inflight_shortterm_, undo_inflight_shortterm_);
  inflight_longterm_ = std::max(inflight_longterm_, undo_inflight_longterm_);
  if (has_undo_state_ && undo_state_ == State::kStartup && state_ != State::kStartup) {
    full_bw_reached_ = false;
    if (state_ != State::kProbeRtt) enter_startup();
  } else if (has_undo_state_ && undo_state_ == State::kProbeBwUp && state_ != State::kProbeBwUp) {
    if (state_ != State::kProbeRtt) start_probe_bw_refill();
  }
  has_undo_state_ = false;
  in_loss_recovery_ = false;
  return true;
}

// --- Per-ACK steps (§5.2.3) ---------------------------------------------------

void Bbr::on_ack_processed(Instant now, const RttEstimator& rtt, uint64_t bytes_in_flight) {
  inflight_ = bytes_in_flight;
  if (!ack_open_) return;
  ack_open_ = false;
  if (!initialized_) initialize_at(now);
  // GenerateRateSample(), against the transport's min_rtt.
  sampler_.end_ack(rtt.has_sample() ? rtt.min_rtt() : 0);
  // InitPacingRate() from the first RTT sample, until a bandwidth sample.
  if (max_bw_ == 0 && rtt.has_sample()) init_pacing_rate(rtt.smoothed_rtt());
  update_on_ack(now);
}

void Bbr::update_on_ack(Instant now) {
  update_model_and_state(now);
  update_control_parameters();
}

void Bbr::update_model_and_state(Instant now) {
  update_latest_delivery_signals();
  update_congestion_signals(now);
  update_ack_aggregation(now);
  check_full_bw_reached();
  check_startup_done();
  check_drain_done(now);
  update_probe_bw_cycle_phase(now);
  update_min_rtt(now);
  check_probe_rtt(now);
  advance_latest_delivery_signals();
  bound_bw_for_model();
}

void Bbr::update_control_parameters() {
  set_pacing_rate_with_gain(pacing_gain_);
  // SetSendQuantum(): the pacer's burst (pacer.h: 1 ms of the rate, 2 to
  // 64 datagrams) is the quantum; send_quantum() is its model here.
  set_cwnd();
}

// §5.5.10.3 UpdateLatestDeliverySignals().
void Bbr::update_latest_delivery_signals() {
  loss_round_start_ = false;
  bw_latest_ = std::max(bw_latest_, rs().delivery_rate);
  inflight_latest_ = std::max(inflight_latest_, rs().delivered);
  if (rs().has_data && rs().prior_delivered >= loss_round_delivered_) {
    loss_round_delivered_ = sampler_.delivered();
    loss_round_start_ = true;
  }
}

void Bbr::advance_latest_delivery_signals() {
  if (!loss_round_start_) return;
  bw_latest_ = rs().delivery_rate;
  inflight_latest_ = rs().delivered;
}

// UpdateCongestionSignals(). At a loss round's end, its losses are also
// kept for CheckStartupHighLoss(), and its CE marks judged (bbr_ecn.h).
void Bbr::update_congestion_signals(Instant now) {
  update_max_bw();
  if (!loss_round_start_) return;
  ce_rounds_.end_round();
  check_ecn_too_high(now);
  lost_last_round_ = lost_in_round_;
  loss_ranges_last_round_ = loss_ranges_in_round_;
  delivered_last_round_ = sampler_.delivered() - delivered_at_loss_round_start_;
  lost_in_round_ = loss_ranges_in_round_ = 0;
  delivered_at_loss_round_start_ = sampler_.delivered();
  adapt_lower_bounds_from_congestion();  // once per round, adapt
  is_loss_in_round_ = false;
}

// §5.5.5 UpdateMaxBw() with §5.5.1 UpdateRound().
void Bbr::update_max_bw() {
  const RateSample& s = rs();
  if (s.has_data && s.prior_delivered >= next_round_delivered_) {
    start_round();
    ++round_count_;
    ++rounds_since_probe_up_;
    round_start_ = true;
    cwnd_limited_last_round_ = cwnd_limited_this_round_;
    cwnd_limited_this_round_ = false;
  } else {
    round_start_ = false;
  }
  if (s.delivery_rate > 0 && (s.delivery_rate >= max_bw_ || !s.is_app_limited)) {
    max_bw_filter_.update(s.delivery_rate);
    max_bw_ = max_bw_filter_.best();
  }
}

// §5.5.9 UpdateACKAggregation().
void Bbr::update_ack_aggregation(Instant now) {
  const Duration interval = saturating_sub(now, extra_acked_interval_start_);
  uint64_t expected = to_bytes(bw_ * static_cast<double>(interval) / kNanosPerSecond);
  if (extra_acked_delivered_ <= expected) {  // ACK rate below the expected rate
    extra_acked_delivered_ = 0;
    extra_acked_interval_start_ = now;
    expected = 0;
  }
  extra_acked_delivered_ += rs().newly_acked;
  const uint64_t extra = std::min(saturating_sub(extra_acked_delivered_, expected), cwnd_);
  const uint64_t filter_len = full_bw_reached_ ? kExtraAckedFilterLen : 1;
  extra_acked_ = extra_acked_filter_.update(extra, round_count_, filter_len);
}

// AdaptLowerBoundsFromCongestion(): once per round trip. CE marks bound
// inflight_shortterm too, by the lower of the two responses.
void Bbr::adapt_lower_bounds_from_congestion() {
  if (is_probing_bw()) return;
  const bool marked = ce_rounds_.marked_last_round();
  if (!is_loss_in_round_ && !marked) return;
  init_lower_bounds();
  const uint64_t ecn_bound =
      to_bytes((1 - kEcnFactor * ce_rounds_.alpha()) * static_cast<double>(inflight_shortterm_));
  if (is_loss_in_round_) loss_lower_bounds();
  if (marked) inflight_shortterm_ = std::min(inflight_shortterm_, ecn_bound);
}

// A round with more than kEcnThresh of its packets CE-marked while
// probing bandwidth: inflight is too high (HandleInflightTooHigh()).
// Startup's end on such a round is CheckStartupHighLoss()'s.
void Bbr::check_ecn_too_high(Instant now) {
  if (ce_rounds_.last_ratio() <= kEcnThresh || state_ == State::kStartup) return;
  if (is_bw_probe_sample_) handle_inflight_too_high(now, rs().is_app_limited, rs().tx_in_flight);
}

// InitLowerBounds(): the first congestion episode of this cycle.
void Bbr::init_lower_bounds() {
  if (bw_shortterm_ >= kInfiniteBw) bw_shortterm_ = max_bw_;
  if (inflight_shortterm_ == kInfinite) inflight_shortterm_ = cwnd_;
}

// LossLowerBounds().
void Bbr::loss_lower_bounds() {
  bw_shortterm_ = std::max(bw_latest_, kBeta * bw_shortterm_);
  inflight_shortterm_ =
      std::max(inflight_latest_, to_bytes(kBeta * static_cast<double>(inflight_shortterm_)));
}

void Bbr::reset_congestion_signals() {
  is_loss_in_round_ = false;
  bw_latest_ = 0;
  inflight_latest_ = 0;
}

void Bbr::reset_short_term_model() {
  bw_shortterm_ = kInfiniteBw;
  inflight_shortterm_ = kInfinite;
}

void Bbr::reset_full_bw() {
  full_bw_ = 0;
  full_bw_count_ = 0;
  full_bw_now_ = false;
}

// §5.3.1.2 CheckFullBWReached(). An ACK without a reliable rate sample
// (its interval shorter than min_rtt) says nothing about a plateau.
void Bbr::check_full_bw_reached() {
  const RateSample& s = rs();
  if (full_bw_now_ || !round_start_ || s.is_app_limited || s.delivery_rate == 0) return;
  if (s.delivery_rate >= full_bw_ * kFullBwGrowth) {
    reset_full_bw();  // bw is still growing
    full_bw_ = s.delivery_rate;
    return;
  }
  ++full_bw_count_;  // another round without much growth
  full_bw_now_ = full_bw_count_ >= kFullBwRounds;
  if (full_bw_now_) full_bw_reached_ = true;
}

// §5.3.1.3 CheckStartupHighLoss(), judged at the end of each loss round
// over the round that ended: more than LossThresh of its data lost, in at
// least kStartupFullLossCount discontiguous ranges.
// A round with more than kEcnThresh of its packets CE-marked ends Startup
// the same way (bbr_ecn.h), but a CE mark is never undone.
void Bbr::check_startup_high_loss() {
  if (state_ != State::kStartup || !loss_round_start_ || full_bw_reached_) return;
  const double total = static_cast<double>(lost_last_round_ + delivered_last_round_);
  const bool high_loss = loss_ranges_last_round_ >= kStartupFullLossCount &&
                         static_cast<double>(lost_last_round_) > kLossThresh * total;
  if (!high_loss && ce_rounds_.last_ratio() <= kEcnThresh) return;
  if (high_loss) {
    undo_state_ = State::kStartup;
    has_undo_state_ = true;
  }
  full_bw_reached_ = true;
  inflight_longterm_ = std::max(bdp(), inflight_latest_);
}

void Bbr::check_startup_done() {
  check_startup_high_loss();
  if (state_ == State::kStartup && full_bw_reached_) enter_drain();
}

// §5.3.2 CheckDrainDone().
void Bbr::check_drain_done(Instant now) {
  if (state_ != State::kDrain) return;
  if (inflight_ <= inflight(bw_, 1.0) || round_count_ > drain_start_round_ + 3) {
    enter_probe_bw(now);
  }
}

// §5.3.4.3 UpdateMinRTT().
void Bbr::update_min_rtt(Instant now) {
  probe_rtt_expired_ = now > probe_rtt_min_stamp_ + kProbeRttInterval;
  const RateSample& s = rs();
  if (s.has_rtt && (s.rtt < probe_rtt_min_delay_ || probe_rtt_expired_)) {
    probe_rtt_min_delay_ = s.rtt;
    probe_rtt_min_stamp_ = now;
  }
  const bool min_rtt_expired = now > min_rtt_stamp_ + kMinRttFilterLen;
  if (probe_rtt_min_delay_ < min_rtt_ || min_rtt_expired) {
    min_rtt_ = probe_rtt_min_delay_;
    min_rtt_stamp_ = probe_rtt_min_stamp_;
  }
}

// --- Control parameters (§5.6) ------------------------------------------------

// §5.6.2 SetPacingRateWithGain().
void Bbr::set_pacing_rate_with_gain(double gain) {
  const double rate = gain * bw_ * (100 - kPacingMarginPercent) / 100;
  if (full_bw_reached_ || rate > pacing_rate_) pacing_rate_ = rate;
}

// InitPacingRate().
void Bbr::init_pacing_rate(Duration srtt) {
  const Duration rtt = srtt != 0 ? srtt : kMillisecond;
  const double nominal_bandwidth =
      static_cast<double>(initial_cwnd_) * kNanosPerSecond / static_cast<double>(rtt);
  pacing_rate_ = kStartupPacingGain * nominal_bandwidth;
}

// §5.6.3 SetSendQuantum().
uint64_t Bbr::send_quantum() const {
  const uint64_t quantum = to_bytes(pacing_rate_ / 1000);  // 1 ms of the rate
  return std::max(std::min<uint64_t>(quantum, 64 * 1024), 2 * smss_);
}

uint64_t Bbr::bdp() const {
  if (min_rtt_ == kNever) return 0;
  return to_bytes(bw_ * static_cast<double>(min_rtt_) / kNanosPerSecond);
}

// BDPMultiple(bw, gain).
uint64_t Bbr::bdp_multiple(double bw, double gain) const {
  if (min_rtt_ == kNever) return initial_cwnd_;  // no valid RTT samples yet
  return to_bytes(gain * bw * static_cast<double>(min_rtt_) / kNanosPerSecond);
}

// QuantizationBudget(inflight_cap), with §5.5.8.2's QUIC offload budget.
uint64_t Bbr::quantization_budget(uint64_t inflight_cap) const {
  inflight_cap = std::max(inflight_cap, send_quantum());
  inflight_cap = std::max(inflight_cap, min_pipe_cwnd());
  if (state_ == State::kProbeBwUp) inflight_cap += 2 * smss_;
  return inflight_cap;
}

// InflightWithHeadroom().
uint64_t Bbr::inflight_with_headroom() const {
  if (inflight_longterm_ == kInfinite) return kInfinite;
  const uint64_t headroom =
      std::max(smss_, to_bytes(kHeadroom * static_cast<double>(inflight_longterm_)));
  return std::max(saturating_sub(inflight_longterm_, headroom), min_pipe_cwnd());
}

// TargetInflight(): the estimated BDP, unless congestion cut the window.
uint64_t Bbr::target_inflight() const { return std::min(bdp(), cwnd_); }

// §5.6.4.6 SetCwnd() with UpdateMaxInflight().
void Bbr::set_cwnd() {
  max_inflight_ = quantization_budget(bdp_multiple(bw_, cwnd_gain_) + extra_acked_);
  const uint64_t newly_acked = rs().newly_acked;
  if (full_bw_reached_) {
    cwnd_ = std::min(cwnd_ + newly_acked, max_inflight_);
  } else if (cwnd_ < max_inflight_ || sampler_.delivered() < initial_cwnd_) {
    cwnd_ += newly_acked;
  }
  cwnd_ = std::max(cwnd_, min_pipe_cwnd());
  if (state_ == State::kProbeRtt) cwnd_ = std::min(cwnd_, probe_rtt_cwnd());  // §5.6.4.5
  bound_cwnd_for_model();
}

// §5.6.4.7 BoundCwndForModel().
void Bbr::bound_cwnd_for_model() {
  uint64_t cap = kInfinite;
  if (is_in_probe_bw_state() && state_ != State::kProbeBwCruise) {
    cap = inflight_longterm_;
  } else if (state_ == State::kProbeRtt || state_ == State::kProbeBwCruise) {
    cap = inflight_with_headroom();
  }
  cap = std::min(cap, inflight_shortterm_);  // possibly infinite
  cap = std::max(cap, min_pipe_cwnd());
  cwnd_ = std::min(cwnd_, cap);
}

// SaveCwnd(): the last window unmodulated by recovery or ProbeRTT.
void Bbr::save_cwnd() {
  if (!in_loss_recovery_ && state_ != State::kProbeRtt) {
    prior_cwnd_ = cwnd_;
  } else {
    prior_cwnd_ = std::max(prior_cwnd_, cwnd_);
  }
}

uint64_t Bbr::random() {
  // xorshift64*: the probe timing needs spread, not secrecy.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545F4914F6CDD1DULL;
}

}  // namespace dpquic::recovery
