#include "quic/recovery/ack_tracker.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "quic/hot_path.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::recovery {
namespace {

AckTrackerConfig checked(const AckTrackerConfig& config) {
  if (config.ack_delay_exponent > AckTracker::kMaxAckDelayExponent) {
    throw std::invalid_argument("AckTracker: ack_delay_exponent above 20");
  }
  return config;
}

Instant saturating_add(Instant at, Duration delay) {
  return delay > kNever - at ? kNever : at + delay;
}

// How many of the newest `ranges` fit, as an ACK frame, in `available`
// bytes (the encoding frame_codec writes: minimal varints).
size_t ranges_that_fit(std::span<const wire::AckRange> ranges, uint64_t ack_delay,
                       const wire::EcnCounts* ecn, size_t available) {
  const wire::AckRange& first = ranges[0];
  // Type, Largest Acknowledged, ACK Delay, First ACK Range; the ACK Range
  // Count is one byte for up to 63 ranges after the first.
  static_assert(ReceivedRanges::kMaxRanges <= 64);
  size_t size = 1 + wire::varint_length(first.largest) + wire::varint_length(ack_delay) + 1 +
                wire::varint_length(first.largest - first.smallest);
  if (ecn != nullptr) {
    size += wire::varint_length(ecn->ect0) + wire::varint_length(ecn->ect1) +
            wire::varint_length(ecn->ecn_ce);
  }
  if (size > available) return 0;
  size_t count = 1;
  for (; count < ranges.size(); ++count) {
    const wire::AckRange& above = ranges[count - 1];
    const wire::AckRange& range = ranges[count];
    size += wire::varint_length(above.smallest - range.largest - 2) +
            wire::varint_length(range.largest - range.smallest);
    if (size > available) break;
  }
  return count;
}

}  // namespace

AckTracker::AckTracker(const AckTrackerConfig& config)
    : ranges_(checked(config).max_ranges),
      space_(config.space),
      max_ack_delay_(config.max_ack_delay),
      ack_eliciting_threshold_(config.ack_eliciting_threshold),
      ack_delay_exponent_(config.ack_delay_exponent) {}

DPQUIC_HOT bool AckTracker::on_packet_received(Instant now, uint64_t packet_number,
                                               bool ack_eliciting, uint8_t ecn_codepoint) {
  if (!ranges_.insert(packet_number)) return true;

  switch (static_cast<EcnCodepoint>(ecn_codepoint & 3)) {
    case EcnCodepoint::kNotEct: break;
    case EcnCodepoint::kEct1: ++ecn_.ect1; break;
    case EcnCodepoint::kEct0: ++ecn_.ect0; break;
    case EcnCodepoint::kCe: ++ecn_.ecn_ce; break;
  }
  const bool congestion_experienced = (ecn_codepoint & 3) == 3;

  new_since_ack_ = true;
  if (!has_received_ || packet_number > largest_received_) {
    has_received_ = true;
    largest_received_ = packet_number;
    largest_received_time_ = now;
  }

  if (!ack_eliciting) {
    // Never a reason to send by itself, but a CE mark is news for the ACK an
    // earlier ack-eliciting packet is owed: send that one now.
    if (congestion_experienced && unacked_ack_eliciting_ > 0) require_immediately(now);
    return false;
  }

  bool immediate = space_ != wire::PacketNumberSpace::kApplication || congestion_experienced;
  if (has_ack_eliciting_ && packet_number < largest_ack_eliciting_) {
    immediate = true;  // reordered
  } else {
    if (leaves_gap(packet_number)) immediate = true;
    has_ack_eliciting_ = true;
    largest_ack_eliciting_ = packet_number;
  }
  if (unacked_ack_eliciting_ == 0) first_unacked_time_ = now;
  ++unacked_ack_eliciting_;
  if (unacked_ack_eliciting_ >= std::max<uint64_t>(ack_eliciting_threshold_, 1)) immediate = true;
  if (immediate) require_immediately(now);
  return false;
}

bool AckTracker::leaves_gap(uint64_t packet_number) const {
  // Everything below the floor is settled (received, or given up and already
  // reported missing), so only numbers from there on can be missing.
  uint64_t expected = ranges_.floor();
  if (has_ack_eliciting_) expected = std::max(expected, largest_ack_eliciting_ + 1);
  const wire::AckRange* range = ranges_.find(packet_number);
  return range != nullptr && range->smallest > expected;
}

void AckTracker::require_immediately(Instant at) {
  immediate_since_ = std::min(immediate_since_, at);
}

Instant AckTracker::ack_deadline() const {
  if (immediate_since_ != kNever) return immediate_since_;
  if (unacked_ack_eliciting_ == 0) return kNever;
  return saturating_add(first_unacked_time_, max_ack_delay_);
}

size_t AckTracker::write_ack_frame(wire::ByteWriter& writer, Instant now) {
  const std::span<const wire::AckRange> ranges = ranges_.ranges();
  if (ranges.empty()) return 0;
  const Duration delay = now > largest_received_time_ ? now - largest_received_time_ : 0;
  const uint64_t ack_delay =
      std::min<uint64_t>((delay / kMicrosecond) >> ack_delay_exponent_, wire::kVarintMax);
  const bool report_ecn = ecn_.ect0 != 0 || ecn_.ect1 != 0 || ecn_.ecn_ce != 0;
  const wire::EcnCounts* ecn = report_ecn ? &ecn_ : nullptr;

  const size_t count = ranges_that_fit(ranges, ack_delay, ecn, writer.remaining());
  if (count == 0) return 0;
  const size_t start = writer.position();
  if (!wire::encode_ack_frame(writer, ranges.first(count), ack_delay, ecn)) return 0;
  written_largest_ = ranges[0].largest;
  return writer.position() - start;
}

uint64_t AckTracker::on_ack_sent(Instant now) {
  new_since_ack_ = false;
  unacked_ack_eliciting_ = 0;
  immediate_since_ = kNever;
  last_ack_sent_time_ = now;
  return written_largest_;
}

void AckTracker::on_ack_frame_acknowledged(uint64_t largest_acknowledged) {
  // Packet numbers stop at 2^62 - 1, so the + 1 cannot wrap.
  ranges_.remove_below(std::min(largest_acknowledged, wire::kVarintMax) + 1);
}

void AckTracker::set_ack_eliciting_threshold(uint64_t threshold) {
  ack_eliciting_threshold_ = threshold;
  if (unacked_ack_eliciting_ > 0 && unacked_ack_eliciting_ >= std::max<uint64_t>(threshold, 1)) {
    // Already due: as of the first packet still waiting.
    require_immediately(first_unacked_time_);
  }
}

}  // namespace dpquic::recovery
