#pragma once
// Persistent congestion (RFC 9002 §7.6): established when two ack-eliciting
// packets are declared lost, nothing sent between them was acknowledged, they
// were sent more than the persistent congestion duration apart, and an RTT
// sample existed when the first of them was sent.
//
// The detector is fed the packets one loss detection pass declares lost, in
// ascending packet-number order, each with whether it continues the previous
// lost packet without an acknowledged packet in between. It keeps O(1) state
// and allocates nothing.
//
// Only one packet number space's losses are considered at a time: RFC 9002
// §7.6.2 allows using the state of just the acknowledged space. Losses of
// different loss detection passes are not joined either, as in the RFC's
// pseudocode (OnPacketsLost looks at one pass's lost packets).

#include <optional>

#include "quic/recovery/rtt_estimator.h"
#include "quic/recovery/sent_packet.h"
#include "quic/time.h"

namespace dpquic::recovery {

// RFC 9002 §7.6.1, kPersistentCongestionThreshold.
inline constexpr uint64_t kPersistentCongestionThreshold = 3;

// (smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay) * 3. Unlike
// the PTO it includes max_ack_delay whatever the packet number space.
Duration persistent_congestion_duration(const RttEstimator& rtt, Duration max_ack_delay);

class PersistentCongestionDetector {
 public:
  // `first_rtt_sample`: when the first RTT sample was taken, nullopt if none
  // was yet (then nothing can establish persistent congestion). Packets sent
  // at or before it do not count (RFC 9002 §B.8 OnPacketsLost).
  PersistentCongestionDetector(Duration duration, std::optional<Instant> first_rtt_sample)
      : duration_(duration), first_rtt_sample_(first_rtt_sample) {}

  // The next lost packet, ascending. `follows_previous` is true when no
  // packet between the previous lost packet and this one was acknowledged
  // (ignored for the first one).
  void on_lost(bool follows_previous, const SentPacket& packet);

  bool established() const { return established_; }

 private:
  Duration duration_;
  std::optional<Instant> first_rtt_sample_;
  // Send time of the first ack-eliciting lost packet of the current run of
  // consecutive losses; nullopt when no run is open.
  std::optional<Instant> run_start_;
  bool established_ = false;
};

}  // namespace dpquic::recovery
