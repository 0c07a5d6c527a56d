#include "quic/recovery/delivery_rate.h"

#include <algorithm>

namespace dpquic::recovery {

void DeliveryRateSampler::on_packet_sent(Instant now, bool application_space,
                                         uint64_t packet_number, uint64_t size,
                                         uint64_t bytes_in_flight) {
  // §4.1.2.2: "if (C.inflight == 0) C.first_send_time = C.delivered_time =
  // P.send_time", C.inflight as it was before this packet.
  if (bytes_in_flight <= size) first_send_time_ = delivered_time_ = now;
  if (!application_space) return;
  if (!make_room(packet_number)) {
    ++unsampled_;
    return;
  }
  Snapshot& s = snapshots_[packet_number & (slots_ - 1)];
  s.packet_number = packet_number;
  s.first_send_time = first_send_time_;
  s.delivered_time = delivered_time_;
  s.delivered = delivered_;
  s.lost = lost_;
  s.tx_in_flight = static_cast<uint32_t>(std::min<uint64_t>(bytes_in_flight, UINT32_MAX));
  s.is_app_limited = app_limited_ != 0;
  s.live = true;
  highest_ = std::max(highest_, packet_number + 1);
}

void DeliveryRateSampler::begin_ack() { sample_ = RateSample{}; }

void DeliveryRateSampler::on_packet_acked(Instant now, bool application_space,
                                          uint64_t packet_number, Instant time_sent,
                                          uint64_t size) {
  delivered_ += size;
  delivered_time_ = now;
  sample_.newly_acked += size;
  // RS.rtt from the most recently sent packet acknowledged (§4.2), of any
  // packet number space.
  if (!sample_.has_rtt || time_sent >= newest_send_time_) {
    newest_send_time_ = time_sent;
    sample_.rtt = now > time_sent ? now - time_sent : 0;
    sample_.has_rtt = true;
  }
  Snapshot* s = application_space ? find(packet_number) : nullptr;
  if (s == nullptr) return;
  // IsNewestPacket(P): the sample comes from the most recently sent packet.
  const bool newest = time_sent > first_send_time_ ||
                      (time_sent == first_send_time_ && packet_number > sample_.last_acked_packet);
  if (!sample_.has_data || newest) {
    sample_.has_data = true;
    sample_.prior_delivered = s->delivered;
    sample_.prior_time = s->delivered_time;
    sample_.is_app_limited = s->is_app_limited;
    sample_.send_elapsed = time_sent > s->first_send_time ? time_sent - s->first_send_time : 0;
    sample_.ack_elapsed = now > s->delivered_time ? now - s->delivered_time : 0;
    sample_.last_acked_packet = packet_number;
    sample_.tx_in_flight = s->tx_in_flight;
    sample_.lost = lost_ - s->lost;
    first_send_time_ = time_sent;
  }
  s->live = false;
}

bool DeliveryRateSampler::on_packet_lost(bool application_space, uint64_t packet_number,
                                         uint64_t size, LostPacketSnapshot& snapshot) {
  lost_ += size;
  newly_lost_ += size;
  Snapshot* s = application_space ? find(packet_number) : nullptr;
  if (s == nullptr) return false;
  snapshot.tx_in_flight = s->tx_in_flight;
  snapshot.lost_since_send = lost_ - s->lost;
  snapshot.is_app_limited = s->is_app_limited;
  s->live = false;
  return true;
}

void DeliveryRateSampler::on_packet_discarded(bool application_space, uint64_t packet_number) {
  Snapshot* s = application_space ? find(packet_number) : nullptr;
  if (s != nullptr) s->live = false;
}

const RateSample& DeliveryRateSampler::end_ack(Duration min_rtt) {
  // "Clear app-limited field if bubble is ACKed and gone."
  if (app_limited_ != 0 && delivered_ > app_limited_) app_limited_ = 0;
  sample_.newly_lost = newly_lost_;
  newly_lost_ = 0;
  if (!sample_.has_data) return sample_;
  sample_.interval = std::max(sample_.send_elapsed, sample_.ack_elapsed);
  sample_.delivered = delivered_ - sample_.prior_delivered;
  // "Normally we expect interval >= MinRTT": a shorter one is no reliable
  // rate sample.
  if (sample_.interval < min_rtt || sample_.interval == 0) return sample_;
  sample_.delivery_rate = static_cast<double>(sample_.delivered) * static_cast<double>(kSecond) /
                          static_cast<double>(sample_.interval);
  return sample_;
}

void DeliveryRateSampler::mark_app_limited(uint64_t bytes_in_flight) {
  app_limited_ = std::max<uint64_t>(delivered_ + bytes_in_flight, 1);
}

DeliveryRateSampler::Snapshot* DeliveryRateSampler::find(uint64_t packet_number) {
  if (slots_ == 0 || packet_number < lowest_ || packet_number >= highest_) return nullptr;
  Snapshot& s = snapshots_[packet_number & (slots_ - 1)];
  return s.live && s.packet_number == packet_number ? &s : nullptr;
}

bool DeliveryRateSampler::make_room(uint64_t packet_number) {
  if (slots_ == 0) {
    snapshots_ = std::make_unique<Snapshot[]>(kInitialSlots);
    slots_ = kInitialSlots;
    lowest_ = highest_ = packet_number;
    return true;
  }
  if (packet_number < highest_) return false;  // packet numbers only grow
  // Keep highest - lowest <= slots: the low end moves past snapshots that
  // are gone, and the ring doubles under one still in flight.
  while (packet_number - lowest_ >= slots_) {
    const Snapshot& s = snapshots_[lowest_ & (slots_ - 1)];
    if (lowest_ < highest_ && s.live && s.packet_number == lowest_) {
      if (!grow()) return false;
      continue;
    }
    ++lowest_;
  }
  return true;
}

bool DeliveryRateSampler::grow() {
  if (slots_ >= kMaxSlots) return false;
  const size_t slots = slots_ * 2;
  auto grown = std::make_unique<Snapshot[]>(slots);
  for (uint64_t pn = lowest_; pn < highest_; ++pn) {
    const Snapshot& s = snapshots_[pn & (slots_ - 1)];
    if (s.live && s.packet_number == pn) grown[pn & (slots - 1)] = s;
  }
  snapshots_ = std::move(grown);
  slots_ = slots;
  return true;
}

}  // namespace dpquic::recovery
