#pragma once
// Delivery rate sampling (draft-ietf-ccwg-bbr §4.1), for BBR.
//
// Each Application-space packet sent in flight gets a snapshot of the
// connection's delivery state (§4.1.2.2 OnPacketSent) in a ring of its own,
// parallel to the sent-packet ring: only BBR connections have one, so
// CUBIC's and NewReno's per-packet footprint stays the 16-byte SentPacket.
// An ACK turns the snapshot of its most recently sent packet into one rate
// sample (§4.1.2.3): delivered bytes over the longer of the send and ACK
// intervals. Initial and Handshake packets count as delivered but carry no
// snapshot (a handful of packets, before any bandwidth matters).
//
// The ring is indexed by packet number like the sent-packet ring, starts
// at kInitialSlots and doubles when a packet would overwrite a snapshot
// still in flight, up to kMaxSlots (the sent-packet pool's bound on one
// ring); past that a packet goes unsampled. Growth is the only allocation:
// nothing is allocated per packet once the ring spans the flight.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "quic/time.h"

namespace dpquic::recovery {

// The per-ACK rate sample (§2.3 and §4.1.2.3), filled by end_ack().
struct RateSample {
  double delivery_rate = 0;  // bytes per second; 0: no reliable sample
  uint64_t delivered = 0;    // RS.delivered: over the sample's interval
  uint64_t prior_delivered = 0;
  Instant prior_time = 0;  // 0: nothing delivered on this ACK carried a snapshot
  Duration interval = 0;
  Duration send_elapsed = 0;
  Duration ack_elapsed = 0;
  Duration rtt = 0;  // RS.rtt: now - send time of the newest packet acked
  bool has_rtt = false;
  bool is_app_limited = false;
  uint64_t tx_in_flight = 0;  // C.inflight when the newest packet acked was sent
  uint64_t lost = 0;          // bytes lost between its send and this ACK
  uint64_t newly_acked = 0;   // in-flight bytes this ACK acknowledged
  uint64_t newly_lost = 0;    // in-flight bytes declared lost since the last ACK
  uint64_t last_acked_packet = 0;
  bool has_data = false;
};

// What a lost packet's snapshot says (HandleLostPacket, §5.5.10.2).
struct LostPacketSnapshot {
  uint64_t tx_in_flight = 0;
  uint64_t lost_since_send = 0;  // C.lost - P.lost, this packet included
  bool is_app_limited = false;
};

class DeliveryRateSampler {
 public:
  static constexpr size_t kInitialSlots = 64;
  static constexpr size_t kMaxSlots = size_t{1} << 20;

  // §4.1.2.2 OnPacketSent for an in-flight packet; `bytes_in_flight`
  // includes it. Only Application-space packets are snapshotted.
  void on_packet_sent(Instant now, bool application_space, uint64_t packet_number, uint64_t size,
                      uint64_t bytes_in_flight);
  // InitRateSample(): an ACK frame begins.
  void begin_ack();
  // UpdateRateSample(P) for one newly acknowledged in-flight packet.
  void on_packet_acked(Instant now, bool application_space, uint64_t packet_number,
                       Instant time_sent, uint64_t size);
  // C.lost grows; `snapshot` is filled when the packet had one (true).
  bool on_packet_lost(bool application_space, uint64_t packet_number, uint64_t size,
                      LostPacketSnapshot& snapshot);
  // A packet that left flight without being acknowledged or lost (its
  // space was abandoned): its snapshot is dropped.
  void on_packet_discarded(bool application_space, uint64_t packet_number);
  // GenerateRateSample(): completes the sample of the ACK begun last.
  // Intervals shorter than `min_rtt` give no rate (§4.1.2.3).
  const RateSample& end_ack(Duration min_rtt);
  // MarkConnectionAppLimited() (§4.1.2.4).
  void mark_app_limited(uint64_t bytes_in_flight);

  const RateSample& sample() const { return sample_; }
  uint64_t delivered() const { return delivered_; }
  uint64_t lost() const { return lost_; }
  uint64_t app_limited() const { return app_limited_; }
  bool is_app_limited() const { return app_limited_ != 0; }
  size_t slots() const { return slots_; }
  // Packets sent unsampled because the ring was at kMaxSlots.
  uint64_t unsampled() const { return unsampled_; }
  static constexpr size_t kBytesPerSlot = 48;

 private:
  // P.* of §4.1.2.1.2 for one packet (its send time comes with the ACK).
  struct Snapshot {
    uint64_t packet_number;
    Instant first_send_time;
    Instant delivered_time;
    uint64_t delivered;
    uint64_t lost;
    uint32_t tx_in_flight;  // saturates at 4 GiB
    bool is_app_limited;
    bool live;  // not yet acknowledged, lost or discarded
  };
  static_assert(sizeof(Snapshot) == kBytesPerSlot);

  // The slot of `packet_number`'s live snapshot, or nullptr.
  Snapshot* find(uint64_t packet_number);
  // Makes room for `packet_number`; false when the ring is at its bound.
  bool make_room(uint64_t packet_number);
  bool grow();

  // C.* of §4.1.2.1.1.
  uint64_t delivered_ = 0;
  Instant delivered_time_ = 0;
  Instant first_send_time_ = 0;
  uint64_t app_limited_ = 0;
  uint64_t lost_ = 0;
  uint64_t newly_lost_ = 0;
  Instant newest_send_time_ = 0;  // of the packets the current ACK acknowledged

  RateSample sample_;
  std::unique_ptr<Snapshot[]> snapshots_;
  size_t slots_ = 0;
  uint64_t lowest_ = 0;   // no live snapshot below this packet number
  uint64_t highest_ = 0;  // the largest packet number recorded + 1
  uint64_t unsampled_ = 0;
};

}  // namespace dpquic::recovery
