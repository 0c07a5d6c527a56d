#include "quic/recovery/persistent_congestion.h"

namespace dpquic::recovery {

Duration persistent_congestion_duration(const RttEstimator& rtt, Duration max_ack_delay) {
  return (rtt.pto_base() + max_ack_delay) * kPersistentCongestionThreshold;
}

void PersistentCongestionDetector::on_lost(bool follows_previous, const SentPacket& packet) {
  // An acknowledged packet in between ends the run: the path delivered
  // something during it.
  if (!follows_previous) run_start_.reset();
  if (established_ || !packet.ack_eliciting) return;
  if (!first_rtt_sample_.has_value() || packet.time_sent <= *first_rtt_sample_) return;
  if (!run_start_.has_value()) {
    run_start_ = packet.time_sent;
    return;
  }
  if (packet.time_sent - *run_start_ > duration_) established_ = true;
}

}  // namespace dpquic::recovery
