#pragma once
// HyStart++ (RFC 9406): leaves slow start when the round trip time grows,
// through Conservative Slow Start (CSS), before the queue overflows.
//
// Rounds (§4.2): TCP ends a round when the ACK for windowEnd = SND.NXT at
// the round's start arrives. QUIC packet numbers restart in every packet
// number space while one controller serves them all, so a round here is
// delimited by send time instead: it ends when an ACK newly acknowledges a
// packet sent at or after the instant the round began, which is the first
// packet the round sent, i.e. windowEnd.
//
// HyStart++ runs only in the connection's first slow start (§4.3); the
// owning controller stops calling it once ssthresh is set. Pacing is
// assumed (the dpquic sender always paces), so L is infinite (§4.3).

#include <cstdint>

#include "quic/time.h"

namespace dpquic::recovery {

class HyStartPlusPlus {
 public:
  // RFC 9406 §4.3.
  static constexpr Duration kMinRttThresh = 4 * kMillisecond;
  static constexpr Duration kMaxRttThresh = 16 * kMillisecond;
  static constexpr uint64_t kMinRttDivisor = 8;
  static constexpr uint32_t kNRttSample = 8;
  static constexpr uint64_t kCssGrowthDivisor = 4;
  static constexpr uint32_t kCssRounds = 5;

  static constexpr Duration kInfinity = UINT64_MAX;

  enum class Outcome : uint8_t {
    kNone,
    kEnteredCss,                 // RTT rose: grow at 1/CSS_GROWTH_DIVISOR
    kResumedSlowStart,           // the RTT rise was spurious
    kExitToCongestionAvoidance,  // CSS_ROUNDS rounds passed: set ssthresh = cwnd
  };

  // RttThresh = clamp(lastRoundMinRTT / MIN_RTT_DIVISOR, 4 ms, 16 ms).
  static constexpr Duration rtt_threshold(Duration last_round_min_rtt) {
    const Duration eighth = last_round_min_rtt / kMinRttDivisor;
    if (eighth < kMinRttThresh) return kMinRttThresh;
    if (eighth > kMaxRttThresh) return kMaxRttThresh;
    return eighth;
  }

  // The window increase for `acked_bytes` newly acknowledged in slow start:
  // all of it in standard slow start, a quarter in CSS (the remainder is
  // carried to the next call, so no byte is lost to rounding).
  uint64_t window_increase(uint64_t acked_bytes);

  // Once per ACK frame that newly acknowledged in-flight packets while in
  // slow start, after their window increase: `newest_time_sent` is the send
  // time of the most recently sent of them and `rtt_sample` the RTT it
  // measured. Starts a new round if this ACK ends the current one, records
  // the sample, then applies the §4.2 transitions.
  Outcome on_ack(Instant now, Instant newest_time_sent, Duration rtt_sample);

  // Back to the start of standard slow start (e.g. a path change).
  void reset() { *this = HyStartPlusPlus(); }

  bool in_css() const { return css_baseline_min_rtt_ != kInfinity; }
  uint64_t rounds() const { return rounds_; }  // rounds started so far
  uint32_t css_rounds() const { return css_rounds_; }
  uint32_t rtt_sample_count() const { return rtt_sample_count_; }
  Duration current_round_min_rtt() const { return current_round_min_rtt_; }
  Duration last_round_min_rtt() const { return last_round_min_rtt_; }
  Duration css_baseline_min_rtt() const { return css_baseline_min_rtt_; }

 private:
  void start_round(Instant now);

  bool round_open_ = false;
  Instant round_start_ = 0;  // packets sent at or after this belong to the round
  uint64_t rounds_ = 0;
  Duration last_round_min_rtt_ = kInfinity;
  Duration current_round_min_rtt_ = kInfinity;
  uint32_t rtt_sample_count_ = 0;
  Duration css_baseline_min_rtt_ = kInfinity;
  uint32_t css_rounds_ = 0;  // round boundaries crossed in CSS
  uint64_t css_growth_remainder_ = 0;
};

}  // namespace dpquic::recovery
