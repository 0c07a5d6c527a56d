// BBR's state machine (draft-ietf-ccwg-bbr-06 §5.3): Startup and Drain
// entry, the ProbeBW cycle (DOWN, CRUISE, REFILL, UP) and ProbeRTT.
#include "quic/recovery/bbr.h"

namespace dpquic::recovery {

// §5.3.1.1 EnterStartup().
void Bbr::enter_startup() {
  state_ = State::kStartup;
  pacing_gain_ = kStartupPacingGain;
  cwnd_gain_ = kDefaultCwndGain;
}

// §5.3.2 EnterDrain().
void Bbr::enter_drain() {
  state_ = State::kDrain;
  pacing_gain_ = kDrainPacingGain;  // pace slowly
  cwnd_gain_ = kDefaultCwndGain;    // maintain cwnd
  drain_start_round_ = round_count_;
}

// §5.3.3.9 EnterProbeBW().
void Bbr::enter_probe_bw(Instant now) {
  cwnd_gain_ = kDefaultCwndGain;
  start_probe_bw_down(now);
}

// StartProbeBW_DOWN(), with the gains of the §5.6.1 table.
void Bbr::start_probe_bw_down(Instant now) {
  reset_congestion_signals();
  probe_up_acked_per_inc_ = kInfinite;  // not growing inflight_longterm
  pick_probe_wait();
  cycle_stamp_ = now;  // start wall clock
  ack_phase_ = AckPhase::kProbeStopping;
  start_round();
  state_ = State::kProbeBwDown;
  pacing_gain_ = kProbeDownPacingGain;
  cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_cruise() {
  state_ = State::kProbeBwCruise;
  pacing_gain_ = 1;
  cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_refill() {
  reset_short_term_model();
  bw_probe_up_rounds_ = 0;
  bw_probe_up_acked_ = 0;
  prev_probe_precautionary_ = false;
  ack_phase_ = AckPhase::kRefilling;
  start_round();
  state_ = State::kProbeBwRefill;
  pacing_gain_ = 1;
  cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_up() {
  ack_phase_ = AckPhase::kProbeStarting;
  start_round();
  reset_full_bw();
  full_bw_ = rs().delivery_rate;
  state_ = State::kProbeBwUp;
  pacing_gain_ = kProbeUpPacingGain;
  cwnd_gain_ = kProbeUpCwndGain;
  raise_inflight_longterm_slope();
}

// UpdateProbeBWCyclePhase(): on each ACK, the ProbeBW state machine.
void Bbr::update_probe_bw_cycle_phase(Instant now) {
  if (!full_bw_reached_) return;  // only handling steady-state behavior here
  if (adapt_long_term_model(now)) return;
  switch (state_) {
    case State::kProbeBwDown:
      if (is_time_to_probe_bw(now)) return;
      if (is_time_to_cruise()) start_probe_bw_cruise();
      return;
    case State::kProbeBwCruise: (void)is_time_to_probe_bw(now); return;
    case State::kProbeBwRefill:
      if (round_start_) {  // after one round of REFILL, start UP
        is_bw_probe_sample_ = true;
        start_probe_bw_up();
      }
      return;
    case State::kProbeBwUp:
      if (is_time_to_go_down()) {
        prev_probe_too_high_ = false;  // no high loss (yet)
        start_probe_bw_down(now);
      }
      return;
    default: return;
  }
}

// AdaptLongTermModel(): tracks the ACK phase, advances the max_bw filter a
// round after probing stops, raises inflight_longterm while the loss rate
// is safe. True when it decided a state transition.
bool Bbr::adapt_long_term_model(Instant) {
  const RateSample& s = rs();
  if (ack_phase_ == AckPhase::kProbeStarting && round_start_) {
    ack_phase_ = AckPhase::kProbeFeedback;  // starting to get bw probing samples
  }
  if (ack_phase_ == AckPhase::kProbeStopping && round_start_) {
    // End of samples from the bw probing phase.
    is_bw_probe_sample_ = false;
    ack_phase_ = AckPhase::kInit;
    if (is_in_probe_bw_state() && !s.is_app_limited) {
      max_bw_filter_.advance();  // AdvanceMaxBwFilter()
      max_bw_ = max_bw_filter_.best();
    }
    // Precautionary Bandwidth Probing: Acceleration (§5.3.3.6).
    if (is_in_probe_bw_state() && prev_probe_precautionary_ && !prev_probe_too_high_) {
      start_probe_bw_refill();
      return true;
    }
  }
  if (is_inflight_too_high(s.lost, s.tx_in_flight)) return false;
  // Loss rate is safe: adjust upper bounds upward.
  if (inflight_longterm_ == kInfinite) return false;  // no upper bounds to raise
  inflight_longterm_ = std::max<uint64_t>(inflight_longterm_, s.tx_in_flight);
  if (state_ == State::kProbeBwUp) probe_inflight_longterm_upward();
  return false;
}

// §5.3.3.8 IsTimeToProbeBW(): from DOWN or CRUISE to REFILL.
bool Bbr::is_time_to_probe_bw(Instant now) {
  if (has_elapsed_in_phase(now, bw_probe_wait_) || is_reno_coexistence_probe_time()) {
    start_probe_bw_refill();
    return true;
  }
  return false;
}

// PickProbeWait(): randomized round-trip and wall-clock bounds.
void Bbr::pick_probe_wait() {
  rounds_since_probe_up_ = random() & 1;              // 0 or 1
  bw_probe_wait_ = 2 * kSecond + random() % kSecond;  // 2 s + 0..1 s
}

// IsRenoCoexistenceProbeTime(): TargetInflight() in segments, at most 63
// rounds.
bool Bbr::is_reno_coexistence_probe_time() const {
  const uint64_t reno_rounds = target_inflight() / smss_;
  return rounds_since_probe_up_ >= std::min(reno_rounds, kMaxRenoRounds);
}

// IsTimeToCruise(): from DOWN to CRUISE once there is headroom and the
// queue is drained.
bool Bbr::is_time_to_cruise() const {
  if (inflight_ > inflight_with_headroom()) return false;  // not enough headroom
  if (inflight_ > inflight(max_bw_, 1.0)) return false;    // inflight > estimated BDP
  return true;
}

// IsTimeToGoDown(): from UP to DOWN.
bool Bbr::is_time_to_go_down() {
  // Precautionary Bandwidth Probing: Deceleration.
  if (prev_probe_too_high_ && inflight_ >= inflight_longterm_) {
    prev_probe_precautionary_ = true;
    return true;
  }
  if (is_cwnd_limited() && cwnd_ >= inflight_longterm_) {
    reset_full_bw();  // bw is limited by inflight_longterm
    full_bw_ = rs().delivery_rate;
  } else if (full_bw_now_) {
    return true;  // we estimate we've fully used path bw
  }
  return false;
}

bool Bbr::has_elapsed_in_phase(Instant now, Duration interval) const {
  return now > cycle_stamp_ + interval;
}

bool Bbr::is_in_probe_bw_state() const {
  return state_ == State::kProbeBwDown || state_ == State::kProbeBwCruise ||
         state_ == State::kProbeBwRefill || state_ == State::kProbeBwUp;
}

bool Bbr::is_probing_bw() const {
  return state_ == State::kStartup || state_ == State::kProbeBwRefill ||
         state_ == State::kProbeBwUp;
}

// RaiseInflightLongtermSlope(): growth doubles each round of UP.
void Bbr::raise_inflight_longterm_slope() {
  const uint64_t growth_this_round = uint64_t{1} << bw_probe_up_rounds_;
  bw_probe_up_rounds_ = std::min(bw_probe_up_rounds_ + 1, kMaxProbeUpRounds);
  probe_up_acked_per_inc_ = std::max(cwnd_ / growth_this_round, smss_);
}

// ProbeInflightLongtermUpward().
void Bbr::probe_inflight_longterm_upward() {
  if (!is_cwnd_limited() || cwnd_ < inflight_longterm_) return;  // not fully using it
  bw_probe_up_acked_ += rs().newly_acked;
  if (bw_probe_up_acked_ >= probe_up_acked_per_inc_) {
    const uint64_t delta = bw_probe_up_acked_ / probe_up_acked_per_inc_;
    bw_probe_up_acked_ -= delta * probe_up_acked_per_inc_;
    inflight_longterm_ += delta * smss_;
  }
  if (round_start_) raise_inflight_longterm_slope();
}

// §5.3.4.3 CheckProbeRTT().
void Bbr::check_probe_rtt(Instant now) {
  if (state_ != State::kProbeRtt && probe_rtt_expired_ && !idle_restart_) {
    enter_probe_rtt();
    save_cwnd();
    probe_rtt_done_stamp_ = 0;
    ack_phase_ = AckPhase::kProbeStopping;
    start_round();
  }
  if (state_ == State::kProbeRtt) handle_probe_rtt(now);
  if (rs().delivered > 0) idle_restart_ = false;
}

void Bbr::enter_probe_rtt() {
  state_ = State::kProbeRtt;
  pacing_gain_ = 1;
  cwnd_gain_ = kProbeRttCwndGain;
  ++probe_rtt_entries_;
}

// HandleProbeRTT(): hold inflight at ProbeRTTCwnd() for ProbeRTTDuration
// and at least one round.
void Bbr::handle_probe_rtt(Instant now) {
  sampler_.mark_app_limited(inflight_);  // ignore low rate samples during ProbeRTT
  if (probe_rtt_done_stamp_ == 0 && inflight_ <= probe_rtt_cwnd()) {
    probe_rtt_done_stamp_ = now + kProbeRttDuration;
    probe_rtt_round_done_ = false;
    start_round();
  } else if (probe_rtt_done_stamp_ != 0) {
    if (round_start_) probe_rtt_round_done_ = true;
    if (probe_rtt_round_done_) check_probe_rtt_done(now);
  }
}

// CheckProbeRTTDone().
void Bbr::check_probe_rtt_done(Instant now) {
  if (probe_rtt_done_stamp_ == 0 || now <= probe_rtt_done_stamp_) return;
  probe_rtt_min_stamp_ = now;  // schedule the next ProbeRTT
  restore_cwnd();
  exit_probe_rtt(now);
}

// §5.3.4.4 ExitProbeRTT().
void Bbr::exit_probe_rtt(Instant now) {
  reset_short_term_model();
  if (full_bw_reached_) {
    start_probe_bw_down(now);
    start_probe_bw_cruise();
  } else {
    enter_startup();
  }
}

// §5.6.4.5 ProbeRTTCwnd().
uint64_t Bbr::probe_rtt_cwnd() const {
  return std::max(bdp_multiple(bw_, kProbeRttCwndGain), min_pipe_cwnd());
}

}  // namespace dpquic::recovery
