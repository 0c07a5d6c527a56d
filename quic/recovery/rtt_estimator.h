#pragma once
// Round-trip time estimation (RFC 9002 §5): min_rtt, smoothed_rtt, rttvar.

#include "quic/time.h"

namespace dpquic::recovery {

// RFC 9002 §6.2.2 and §A.2.
inline constexpr Duration kInitialRtt = 333 * kMillisecond;
inline constexpr Duration kGranularity = 1 * kMillisecond;

class RttEstimator {
 public:
  explicit RttEstimator(Duration initial_rtt = kInitialRtt);

  // One sample: `latest_rtt` is now minus the send time of the largest newly
  // acknowledged packet. `ack_delay` is the peer's (already scaled); once
  // the handshake is confirmed it is capped at `max_ack_delay` (§5.3). An
  // ack delay that would take the sample below min_rtt is not subtracted.
  void on_sample(Duration latest_rtt, Duration ack_delay, bool handshake_confirmed,
                 Duration max_ack_delay);

  bool has_sample() const { return has_sample_; }
  Duration latest_rtt() const { return latest_rtt_; }
  Duration min_rtt() const { return min_rtt_; }
  Duration smoothed_rtt() const { return smoothed_rtt_; }
  Duration rttvar() const { return rttvar_; }

  // smoothed_rtt + max(4 * rttvar, kGranularity): the PTO period before
  // max_ack_delay and backoff are added (§6.2.1).
  Duration pto_base() const;

  // Back to the initial state, e.g. after a path change (RFC 9000 §9.4).
  void reset();

 private:
  Duration initial_rtt_;
  bool has_sample_ = false;
  Duration latest_rtt_ = 0;
  Duration min_rtt_ = 0;
  Duration smoothed_rtt_;
  Duration rttvar_;
};

}  // namespace dpquic::recovery
