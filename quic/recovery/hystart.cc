#include "quic/recovery/hystart.h"

namespace dpquic::recovery {

uint64_t HyStartPlusPlus::window_increase(uint64_t acked_bytes) {
  if (!in_css()) return acked_bytes;
  css_growth_remainder_ += acked_bytes;
  const uint64_t increase = css_growth_remainder_ / kCssGrowthDivisor;
  css_growth_remainder_ %= kCssGrowthDivisor;
  return increase;
}

void HyStartPlusPlus::start_round(Instant now) {
  round_open_ = true;
  round_start_ = now;
  ++rounds_;
  last_round_min_rtt_ = current_round_min_rtt_;
  current_round_min_rtt_ = kInfinity;
  rtt_sample_count_ = 0;
}

HyStartPlusPlus::Outcome HyStartPlusPlus::on_ack(Instant now, Instant newest_time_sent,
                                                 Duration rtt_sample) {
  // The first ACK ends round zero (nothing was acknowledged before it).
  if (!round_open_ || newest_time_sent >= round_start_) {
    start_round(now);
    if (in_css() && ++css_rounds_ >= kCssRounds) {
      // §4.2: CSS lasted CSS_ROUNDS rounds (the one it began in counts).
      css_baseline_min_rtt_ = kInfinity;
      css_rounds_ = 0;
      return Outcome::kExitToCongestionAvoidance;
    }
  }

  if (rtt_sample < current_round_min_rtt_) current_round_min_rtt_ = rtt_sample;
  ++rtt_sample_count_;
  if (rtt_sample_count_ < kNRttSample) return Outcome::kNone;

  if (!in_css()) {
    if (current_round_min_rtt_ == kInfinity || last_round_min_rtt_ == kInfinity) {
      return Outcome::kNone;
    }
    if (current_round_min_rtt_ >= last_round_min_rtt_ + rtt_threshold(last_round_min_rtt_)) {
      css_baseline_min_rtt_ = current_round_min_rtt_;
      css_rounds_ = 0;
      css_growth_remainder_ = 0;
      return Outcome::kEnteredCss;
    }
    return Outcome::kNone;
  }
  if (current_round_min_rtt_ < css_baseline_min_rtt_) {
    css_baseline_min_rtt_ = kInfinity;
    css_rounds_ = 0;
    return Outcome::kResumedSlowStart;
  }
  return Outcome::kNone;
}

}  // namespace dpquic::recovery
