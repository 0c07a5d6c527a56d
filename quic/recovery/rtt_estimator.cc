#include "quic/recovery/rtt_estimator.h"

#include <algorithm>

namespace dpquic::recovery {

RttEstimator::RttEstimator(Duration initial_rtt)
    : initial_rtt_(initial_rtt), smoothed_rtt_(initial_rtt), rttvar_(initial_rtt / 2) {}

void RttEstimator::on_sample(Duration latest_rtt, Duration ack_delay, bool handshake_confirmed,
                             Duration max_ack_delay) {
  latest_rtt_ = latest_rtt;
  if (!has_sample_) {
    has_sample_ = true;
    min_rtt_ = latest_rtt;
    smoothed_rtt_ = latest_rtt;
    rttvar_ = latest_rtt / 2;
    return;
  }
  // min_rtt ignores ack delay (§5.2).
  min_rtt_ = std::min(min_rtt_, latest_rtt);
  if (handshake_confirmed) ack_delay = std::min(ack_delay, max_ack_delay);
  Duration adjusted_rtt = latest_rtt;
  // latest_rtt >= min_rtt + ack_delay, written so a huge (uncapped) ack
  // delay cannot wrap the sum; min_rtt_ <= latest_rtt here.
  if (latest_rtt - min_rtt_ >= ack_delay) adjusted_rtt = latest_rtt - ack_delay;
  const Duration deviation =
      smoothed_rtt_ > adjusted_rtt ? smoothed_rtt_ - adjusted_rtt : adjusted_rtt - smoothed_rtt_;
  rttvar_ = (3 * rttvar_ + deviation) / 4;
  smoothed_rtt_ = (7 * smoothed_rtt_ + adjusted_rtt) / 8;
}

Duration RttEstimator::pto_base() const {
  return smoothed_rtt_ + std::max(4 * rttvar_, kGranularity);
}

void RttEstimator::reset() { *this = RttEstimator(initial_rtt_); }

}  // namespace dpquic::recovery
