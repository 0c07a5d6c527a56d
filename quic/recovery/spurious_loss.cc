#include "quic/recovery/spurious_loss.h"

#include <algorithm>

namespace dpquic::recovery {

Duration loss_delay(const RttEstimator& rtt, uint32_t eighths) {
  const Duration base = std::max(rtt.latest_rtt(), rtt.smoothed_rtt());
  if (base > UINT64_MAX / 2) return UINT64_MAX;  // absurd RTTs saturate
  // eighths * base / 8, rounded down, without overflowing where
  // eighths * base could: whole RTTs plus the remaining eighths.
  const Duration delay = (eighths / 8) * base + (eighths % 8) * (base / 8);
  return std::max(delay, kGranularity);
}

void ReorderingThresholds::on_spurious_by_packets(uint64_t distance) {
  const uint64_t wanted = std::min(distance, kMaxPacketThreshold - 1) + 1;
  packet_threshold_ = std::max(packet_threshold_, wanted);
}

void ReorderingThresholds::on_spurious_by_time(Duration elapsed, Duration rtt_base) {
  if (rtt_base == 0) return;
  // ceil(8 * elapsed / rtt_base), computed without overflow and capped.
  const Duration whole = elapsed / rtt_base;
  uint64_t wanted = kMaxTimeThresholdEighths;
  if (whole < kMaxTimeThresholdEighths / 8) {
    const Duration rest = elapsed % rtt_base;
    const uint64_t rest_eighths = rest > UINT64_MAX / 16 || rtt_base > UINT64_MAX / 2
                                      ? 8
                                      : (rest * 8 + rtt_base - 1) / rtt_base;  // rest < rtt_base
    wanted = std::min<uint64_t>(whole * 8 + rest_eighths, kMaxTimeThresholdEighths);
  }
  time_eighths_ = std::max(time_eighths_, static_cast<uint32_t>(wanted));
}

void LossHistory::record(const LostPacketRecord& record) {
  LostPacketRecord& slot = records_[next_];
  if (slot.pending) --pending_;  // overwritten: that loss stands
  slot = record;
  slot.pending = true;
  ++pending_;
  next_ = (next_ + 1) % kCapacity;
}

void LossHistory::forget(wire::PacketNumberSpace space) {
  for (LostPacketRecord& record : records_) {
    if (record.pending && record.space == space) {
      record.pending = false;
      --pending_;
    }
  }
}

void LossHistory::clear() {
  for (LostPacketRecord& record : records_) record.pending = false;
  pending_ = 0;
}

}  // namespace dpquic::recovery
