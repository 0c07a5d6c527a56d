#include "quic/recovery/loss_detection.h"

#include <algorithm>

#include "quic/recovery/persistent_congestion.h"

namespace dpquic::recovery {

using wire::PacketNumberSpace;
using wire::WireError;

namespace {

constexpr PacketNumberSpace kSpaces[] = {PacketNumberSpace::kInitial, PacketNumberSpace::kHandshake,
                                         PacketNumberSpace::kApplication};

// A newly grown ACK list starts with room for this many packets.
constexpr size_t kInitialNewlyAckedCapacity = 64;
// ack_delay_exponent values above 20 are invalid (RFC 9000 §18.2).
constexpr uint64_t kMaxAckDelayExponent = 20;

Instant saturating_add(Instant a, Duration b) { return b > kNever - a ? kNever : a + b; }

// d * 2^shift, saturating.
Duration saturating_shift(Duration d, uint32_t shift) {
  if (d == 0) return 0;
  if (shift >= 64 || d > (UINT64_MAX >> shift)) return UINT64_MAX;
  return d << shift;
}

}  // namespace

Duration loss_delay(const RttEstimator& rtt) { return loss_delay(rtt, kTimeThresholdEighths); }

// Gathers the ACK's newly acknowledged packets (ascending) for replay after
// loss detection.
class LossDetection::Collector final : public NewlyAckedVisitor {
 public:
  explicit Collector(std::vector<NewlyAcked>& out) : out_(out) {}
  void on_newly_acked(uint64_t packet_number, const SentPacket& packet) override {
    out_.push_back(NewlyAcked{packet_number, packet});
  }

 private:
  std::vector<NewlyAcked>& out_;
};

LossDetection::LossDetection(const LossDetectionConfig& config, SentPacketPool& pool,
                             AckXorBuffer& xor_buffer, CongestionController& cc)
    : config_(config),
      xor_buffer_(xor_buffer),
      cc_(cc),
      rtt_(config.initial_rtt),
      spaces_{Space(pool), Space(pool), Space(pool)} {
  config_.ack_delay_exponent = std::min(config_.ack_delay_exponent, kMaxAckDelayExponent);
  newly_acked_.reserve(kInitialNewlyAckedCapacity);
}

bool LossDetection::on_packet_sent(Instant now, PacketNumberSpace space, uint64_t packet_number,
                                   SentPacket packet) {
  Space& s = at(space);
  if (s.discarded || !s.sent.insert(packet_number, packet)) return false;
  if (packet.in_flight) {
    if (packet.ack_eliciting) s.time_of_last_ack_eliciting = packet.time_sent;
    cc_.on_packet_sent_in_space(now, space == PacketNumberSpace::kApplication, packet_number,
                                packet.size, bytes_in_flight());
    timer_stale_ = true;
    stale_since_ = now;
  }
  return true;
}

WireError LossDetection::on_ack_received(Instant now, PacketNumberSpace space,
                                         const wire::AckFrame& frame, bool has_ecn_counts,
                                         LossEvents& events) {
  Space& s = at(space);
  if (s.discarded) return WireError::kOk;

  const uint64_t bytes_in_flight_before = bytes_in_flight();
  newly_acked_.clear();
  Collector collector(newly_acked_);
  AckSummary summary;
  const WireError error = process_ack(frame.ranges, s.sent, xor_buffer_, collector, summary);
  if (error != WireError::kOk) return error;
  lost_history_.find_acknowledged(
      space, frame.ranges, [&](const LostPacketRecord& record) { on_spurious_loss(now, record); });

  // A Handshake ACK proves the server processed a Handshake packet, so it
  // has validated the client's address (§A.8).
  const bool was_validated = peer_completed_address_validation();
  if (space == PacketNumberSpace::kHandshake) handshake_ack_received_ = true;

  const uint64_t largest = frame.ranges.largest();
  s.largest_acked = s.largest_acked.has_value() ? std::max(*s.largest_acked, largest) : largest;

  if (newly_acked_.empty()) {
    if (peer_completed_address_validation() != was_validated) set_timer(now);
    return WireError::kOk;
  }

  // Ascending order: the last one is the largest newly acknowledged.
  const NewlyAcked& largest_newly_acked = newly_acked_.back();
  if (largest_newly_acked.packet_number == largest && summary.ack_eliciting_newly_acked) {
    take_rtt_sample(now, space, largest_newly_acked.packet.time_sent, frame.ack_delay);
  }
  // §B.7 ProcessECN.
  if (has_ecn_counts && frame.ecn.ecn_ce > s.ecn_ce_count) {
    if (space == PacketNumberSpace::kApplication) {
      cc_.on_ce_marks(now, frame.ecn.ecn_ce - s.ecn_ce_count);
    }
    s.ecn_ce_count = frame.ecn.ecn_ce;
    on_ecn_ce(now, largest_newly_acked.packet.time_sent);
  }
  signal_losses(now, detect_lost_packets(now, space, events));
  // §B.5 OnPacketsAcked, after the losses so that packets sent before a
  // recovery period that began just now do not grow the window.
  for (const NewlyAcked& acked : newly_acked_) {
    events.on_packet_acked(space, acked.packet_number, acked.packet);
    if (!acked.packet.in_flight) continue;
    cc_.on_packet_acked(now,
                        AckedPacket{acked.packet_number, acked.packet.time_sent, acked.packet.size,
                                    space == PacketNumberSpace::kApplication},
                        rtt_, bytes_in_flight_before, app_limited_);
  }
  cc_.on_ack_processed(now, rtt_, bytes_in_flight());

  if (peer_completed_address_validation()) pto_count_ = 0;
  set_timer(now);
  return WireError::kOk;
}

void LossDetection::take_rtt_sample(Instant now, PacketNumberSpace space, Instant time_sent,
                                    uint64_t raw_ack_delay) {
  const Duration latest_rtt = now > time_sent ? now - time_sent : 0;
  // Initial ACKs are not delayed on purpose (§5.3 allows ignoring theirs).
  // A delay above the sample is never subtracted; capping it there keeps
  // the estimator's arithmetic from overflowing on absurd values.
  Duration ack_delay = space == PacketNumberSpace::kInitial ? 0 : scaled_ack_delay(raw_ack_delay);
  ack_delay = std::min(ack_delay, latest_rtt + 1);
  rtt_.on_sample(latest_rtt, ack_delay, handshake_confirmed_, config_.max_ack_delay);
  if (!first_rtt_sample_.has_value()) first_rtt_sample_ = now;
}

void LossDetection::on_ecn_ce(Instant now, Instant time_sent) {
  // ECN-CE is congestion for certain: its reduction, or the loss-triggered
  // one it joins, is never undone.
  if (!cc_.in_recovery(time_sent)) {
    ++congestion_event_;
    event_losses_ = 0;
    event_spurious_ = 0;
  }
  event_undoable_ = false;
  cc_.on_congestion_event(now, time_sent);
}

LossDetection::LossResult LossDetection::detect_lost_packets(Instant now, PacketNumberSpace space,
                                                             LossEvents& events) {
  Space& s = at(space);
  s.loss_time = kNever;
  LossResult result;
  if (!s.largest_acked.has_value()) return result;
  LossCriteria criteria;
  criteria.largest_acked = *s.largest_acked;
  criteria.packet_threshold = thresholds_.packet_threshold();
  criteria.delay = loss_delay(rtt_, thresholds_.time_threshold_eighths());
  // Packets sent at or before this are lost by time; none when `now` is
  // closer to the epoch than the delay.
  criteria.time_applies = now >= criteria.delay;
  criteria.lost_send_time = criteria.time_applies ? now - criteria.delay : 0;
  const std::optional<uint64_t> last_lost = find_lost(s, criteria, result);
  if (!last_lost.has_value()) return result;
  if (result.in_flight_lost) begin_loss_event(result.largest_lost_time_sent);
  if (result.persistent_congestion) event_undoable_ = false;
  remove_lost(now, space, criteria, *last_lost, events);
  return result;
}

std::optional<uint64_t> LossDetection::find_lost(Space& s, const LossCriteria& criteria,
                                                 LossResult& result) {
  PersistentCongestionDetector persistent(
      persistent_congestion_duration(rtt_, config_.max_ack_delay), first_rtt_sample_);
  // Read-only: the lost packets are a prefix of the live entries up to
  // largest_acked (packet numbers and send times both ascend), so the walk
  // ends at the first survivor, whose send time sets loss_time. Gaps are
  // judged while the ring is intact: a vacant number between two lost
  // packets was acknowledged unless it was skipped on purpose (never sent).
  // Numbers declared lost by an earlier pass all lie below this prefix.
  std::optional<uint64_t> last_lost;
  for (const SentPackets::Entry entry :
       s.sent.range(s.sent.window_begin(), criteria.largest_acked + 1)) {
    const uint64_t pn = entry.packet_number;
    const SentPacket& packet = entry.packet;
    if (!criteria.by_time(packet) && !criteria.by_packets(pn)) {
      s.loss_time = saturating_add(packet.time_sent, criteria.delay);
      break;
    }
    bool follows = true;
    if (last_lost.has_value()) {
      for (uint64_t between = *last_lost + 1; between < pn && follows; ++between) {
        follows = s.sent.never_sent(between);
      }
    }
    persistent.on_lost(follows, packet);
    last_lost = pn;
    if (packet.in_flight) {
      result.in_flight_lost = true;
      result.largest_lost_time_sent = std::max(result.largest_lost_time_sent, packet.time_sent);
    }
  }
  result.persistent_congestion = persistent.established();
  return last_lost;
}

void LossDetection::remove_lost(Instant now, PacketNumberSpace space, const LossCriteria& criteria,
                                uint64_t last_lost, LossEvents& events) {
  Space& s = at(space);
  // Each step restarts the range after the previous packet, so the removals
  // never invalidate an iterator.
  uint64_t next = s.sent.window_begin();
  while (true) {
    const SentPackets::Range rest = s.sent.range(next, last_lost + 1);
    const SentPackets::Range::Iterator it = rest.begin();
    if (it == rest.end()) break;
    const uint64_t pn = (*it).packet_number;
    next = pn + 1;
    const std::optional<SentPacket> packet = s.sent.remove(pn);
    if (!packet.has_value()) continue;
    LostPacketRecord record;
    record.packet_number = pn;
    record.time_sent = packet->time_sent;
    record.distance = criteria.largest_acked - pn;
    record.congestion_event = congestion_event_;
    record.space = space;
    record.in_flight = packet->in_flight;
    record.by_packets = criteria.by_packets(pn);
    record.by_time = criteria.by_time(*packet);
    lost_history_.record(record);
    if (packet->in_flight) {
      ++event_losses_;
      cc_.on_packet_lost(now, AckedPacket{pn, packet->time_sent, packet->size,
                                          space == PacketNumberSpace::kApplication});
    }
    events.on_packet_lost(space, pn, *packet);
  }
}

void LossDetection::begin_loss_event(Instant largest_lost_time_sent) {
  // The same test congestion control applies (§7.3.2): losses of packets
  // sent before the current recovery period began join its event.
  if (cc_.in_recovery(largest_lost_time_sent)) return;
  ++congestion_event_;
  event_losses_ = 0;
  event_spurious_ = 0;
  event_undoable_ = true;
}

void LossDetection::on_spurious_loss(Instant now, const LostPacketRecord& record) {
  ++spurious_losses_;
  // Raise what declared it lost: the packet threshold past its reordering
  // distance, the time threshold past the time its acknowledgment took.
  if (record.by_packets) thresholds_.on_spurious_by_packets(record.distance);
  if (record.by_time) {
    const Duration elapsed = now > record.time_sent ? now - record.time_sent : 0;
    thresholds_.on_spurious_by_time(elapsed, std::max(rtt_.latest_rtt(), rtt_.smoothed_rtt()));
  }
  if (!record.in_flight || !event_undoable_ || record.congestion_event != congestion_event_) return;
  if (++event_spurious_ < event_losses_) return;
  // Every loss of the event arrived after all.
  event_undoable_ = false;
  if (cc_.undo_congestion_event()) ++congestion_undos_;
}

void LossDetection::reset_rtt() {
  rtt_ = RttEstimator(config_.initial_rtt);
  thresholds_.reset();
  lost_history_.clear();
  event_undoable_ = false;
}

void LossDetection::signal_losses(Instant now, const LossResult& result) {
  // §B.8 OnPacketsLost: one congestion event for the latest-sent in-flight
  // loss, then persistent congestion (which needs an RTT sample; the
  // detector saw none without one).
  if (result.in_flight_lost) cc_.on_congestion_event(now, result.largest_lost_time_sent);
  if (result.persistent_congestion) cc_.on_persistent_congestion(now);
}

void LossDetection::on_timeout(Instant now, LossEvents& events) {
  const Instant deadline = timer();
  if (deadline == kNever || now < deadline) return;

  PacketNumberSpace space = PacketNumberSpace::kInitial;
  if (earliest_loss_time(space) != kNever) {
    signal_losses(now, detect_lost_packets(now, space, events));
    set_timer(now);
    return;
  }

  if (!has_armable_ack_eliciting_in_flight()) {
    // The client's anti-deadlock probe (§6.2.2.1): a server with nothing to
    // send never has this timer armed.
    at(anti_deadlock_space()).probes = kAntiDeadlockProbes;
  } else {
    pto_time_and_space(now, space);
    at(space).probes = kProbesPerPto;
  }
  ++pto_count_;
  set_timer(now);
}

void LossDetection::on_probe_sent(PacketNumberSpace space) {
  Space& s = at(space);
  if (s.probes > 0) --s.probes;
}

void LossDetection::abandon_space_packets(PacketNumberSpace space, LossEvents& events) {
  Space& s = at(space);
  lost_history_.forget(space);  // none of them can be acknowledged now
  for (const SentPackets::Entry entry : s.sent.all()) {
    const uint64_t packet_number = entry.packet_number;
    const SentPacket packet = entry.packet;  // the reference ends at removal
    (void)s.sent.remove(packet_number);
    if (packet.in_flight) {
      cc_.on_packet_discarded(AckedPacket{packet_number, packet.time_sent, packet.size,
                                          space == PacketNumberSpace::kApplication});
    }
    events.on_packet_lost(space, packet_number, packet);
  }
  s.time_of_last_ack_eliciting = 0;
  s.loss_time = kNever;
  s.probes = 0;
}

void LossDetection::on_retry(Instant now, LossEvents& events) {
  abandon_space_packets(PacketNumberSpace::kInitial, events);
  abandon_space_packets(PacketNumberSpace::kApplication, events);
  pto_count_ = 0;
  set_timer(now);
}

void LossDetection::on_zero_rtt_rejected(Instant now, LossEvents& events) {
  abandon_space_packets(PacketNumberSpace::kApplication, events);
  set_timer(now);
}

void LossDetection::discard_space(Instant now, PacketNumberSpace space) {
  Space& s = at(space);
  // RemoveFromBytesInFlight: the ring's counters go with its entries; no
  // congestion signal.
  s.sent.release_storage();
  lost_history_.forget(space);
  s.time_of_last_ack_eliciting = 0;
  s.loss_time = kNever;
  s.probes = 0;
  s.discarded = true;
  pto_count_ = 0;
  set_timer(now);
}

void LossDetection::on_handshake_keys_available(Instant now) {
  handshake_keys_ = true;
  set_timer(now);
}

void LossDetection::on_handshake_confirmed(Instant now) {
  handshake_confirmed_ = true;
  set_timer(now);
}

void LossDetection::on_peer_address_validated(Instant now) {
  peer_address_validated_ = true;
  set_timer(now);
}

void LossDetection::set_amplification_blocked(Instant now, bool blocked) {
  amplification_blocked_ = blocked;
  set_timer(now);
}

void LossDetection::set_peer_ack_params(Duration max_ack_delay, uint64_t ack_delay_exponent) {
  config_.max_ack_delay = max_ack_delay;
  config_.ack_delay_exponent = std::min(ack_delay_exponent, kMaxAckDelayExponent);
}

uint64_t LossDetection::bytes_in_flight() const {
  uint64_t total = 0;
  for (const Space& s : spaces_) total += s.sent.bytes_in_flight();
  return total;
}

bool LossDetection::has_ack_eliciting_in_flight() const {
  for (const Space& s : spaces_) {
    if (s.sent.has_ack_eliciting_in_flight()) return true;
  }
  return false;
}

bool LossDetection::peer_completed_address_validation() const {
  // Clients validate the server's address implicitly; a server has
  // validated the client's once it processed a Handshake packet.
  return config_.is_server || handshake_ack_received_ || handshake_confirmed_ ||
         peer_address_validated_;
}

Duration LossDetection::pto_duration(PacketNumberSpace space) const {
  Duration period = rtt_.pto_base();
  if (space == PacketNumberSpace::kApplication)
    period = saturating_add(period, config_.max_ack_delay);
  return saturating_shift(period, pto_count_);
}

Duration LossDetection::scaled_ack_delay(uint64_t raw) const {
  // Microseconds * 2^exponent, in nanoseconds, saturating.
  const uint64_t limit = (UINT64_MAX / kMicrosecond) >> config_.ack_delay_exponent;
  if (raw > limit) return UINT64_MAX;
  return (raw << config_.ack_delay_exponent) * kMicrosecond;
}

Instant LossDetection::earliest_loss_time(PacketNumberSpace& space) const {
  Instant earliest = kNever;
  for (const PacketNumberSpace candidate : kSpaces) {
    if (at(candidate).loss_time < earliest) {
      earliest = at(candidate).loss_time;
      space = candidate;
    }
  }
  return earliest;
}

PacketNumberSpace LossDetection::anti_deadlock_space() const {
  // A Handshake packet proves address ownership; without Handshake keys a
  // padded Initial earns more anti-amplification credit (§A.9).
  const bool handshake = handshake_keys_ || at(PacketNumberSpace::kInitial).discarded;
  return handshake ? PacketNumberSpace::kHandshake : PacketNumberSpace::kInitial;
}

bool LossDetection::has_armable_ack_eliciting_in_flight() const {
  for (const PacketNumberSpace space : kSpaces) {
    if (space == PacketNumberSpace::kApplication && !handshake_confirmed_) continue;
    if (at(space).sent.has_ack_eliciting_in_flight()) return true;
  }
  return false;
}

Instant LossDetection::pto_time_and_space(Instant now, PacketNumberSpace& space) const {
  if (!has_armable_ack_eliciting_in_flight()) {
    // Anti-deadlock PTO: counted from now, without max_ack_delay.
    space = anti_deadlock_space();
    return saturating_add(now, pto_duration(PacketNumberSpace::kInitial));
  }
  Instant earliest = kNever;
  space = PacketNumberSpace::kInitial;
  for (const PacketNumberSpace candidate : kSpaces) {
    const Space& s = at(candidate);
    if (!s.sent.has_ack_eliciting_in_flight()) continue;
    // No Application PTO before confirmation (§6.2.1): the peer may not
    // have the keys to read, or we to read its ACKs.
    if (candidate == PacketNumberSpace::kApplication && !handshake_confirmed_) break;
    const Instant t = saturating_add(s.time_of_last_ack_eliciting, pto_duration(candidate));
    if (t < earliest) {
      earliest = t;
      space = candidate;
    }
  }
  return earliest;
}

void LossDetection::set_timer(Instant now) {
  timer_ = compute_timer(now);
  timer_stale_ = false;
}

void LossDetection::refresh_timer() const {
  timer_ = compute_timer(stale_since_);
  timer_stale_ = false;
}

Instant LossDetection::compute_timer(Instant now) const {
  PacketNumberSpace space = PacketNumberSpace::kInitial;
  const Instant loss_time = earliest_loss_time(space);
  if (loss_time != kNever) return loss_time;
  // Probes would count against the anti-amplification limit.
  if (amplification_blocked_) return kNever;
  // Nothing to detect lost, and no server that might be blocked waiting for
  // the client.
  if (!has_armable_ack_eliciting_in_flight() && peer_completed_address_validation()) return kNever;
  return pto_time_and_space(now, space);
}

}  // namespace dpquic::recovery
