#pragma once
// Loss detection and the probe timeout (RFC 9002 §6 and Appendix A), one
// LossDetection per connection.
//
// It owns the three packet number spaces' sent-packet rings and the RTT
// estimate, finds newly acknowledged packets with the core's XOR buffer,
// declares packets lost by packet threshold (3) or time threshold
// (max(9/8 * max(smoothed_rtt, latest_rtt), kGranularity)), both raised when
// a loss proves spurious (spurious_loss.h), arms the single
// loss detection timer (time threshold, else PTO with exponential backoff),
// and drives the congestion controller: packets sent, acknowledged, lost
// (congestion events, ECN-CE), persistent congestion, and the undo of a
// reduction whose losses all proved spurious.
//
// Sans-IO: every call that may move the timer takes `now`; the caller reads
// timer() afterwards and calls on_timeout() when it expires. Nothing is
// allocated per packet or per ACK: the only growable store (the list of an
// ACK's newly acknowledged packets, replayed after loss detection in RFC
// order) keeps its capacity and grows only when a larger ACK first appears.
//
// Preconditions the caller keeps: packet numbers grow within a space and send
// times do not go backwards (so the packets one pass declares lost are a
// prefix of the window, and the walk stops at the first survivor).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/rtt_estimator.h"
#include "quic/recovery/sent_packet.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"
#include "quic/recovery/spurious_loss.h"
#include "quic/time.h"
#include "quic/wire/errors.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"

namespace dpquic::recovery {

// Probe datagrams requested when a PTO expires with ack-eliciting packets in
// flight (RFC 9002 §6.2.4 allows one or two): two, so one lost probe does not
// cost another, doubled, PTO. The client's anti-deadlock probe (nothing in
// flight, §6.2.2.1) is a single packet, as the RFC's pseudocode sends.
inline constexpr uint8_t kProbesPerPto = 2;
inline constexpr uint8_t kAntiDeadlockProbes = 1;

// The time threshold loss delay (RFC 9002 §6.1.2):
// max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity), with
// kTimeThreshold = 9/8 (before any reordering was seen).
Duration loss_delay(const RttEstimator& rtt);

struct LossDetectionConfig {
  bool is_server = false;
  // The peer's transport parameters (RFC 9000 §18.2). Until they are known
  // the defaults apply; set_peer_ack_params() replaces them.
  Duration max_ack_delay = 25 * kMillisecond;
  uint64_t ack_delay_exponent = 3;
  Duration initial_rtt = kInitialRtt;
};

// What the connection hears about individual packets: it requeues a lost
// packet's frames and releases an acknowledged packet's. Called in ascending
// packet-number order within a space; the SentPacket is a copy that lives
// for the call. The packet is already out of sent(space) when it is called.
class LossEvents {
 public:
  virtual void on_packet_acked(wire::PacketNumberSpace space, uint64_t packet_number,
                               const SentPacket& packet) = 0;
  virtual void on_packet_lost(wire::PacketNumberSpace space, uint64_t packet_number,
                              const SentPacket& packet) = 0;

 protected:
  ~LossEvents() = default;
};

class LossDetection {
 public:
  // `pool` and `xor_buffer` belong to the core's shard, `cc` to the
  // connection; all must outlive this object.
  LossDetection(const LossDetectionConfig& config, SentPacketPool& pool, AckXorBuffer& xor_buffer,
                CongestionController& cc);
  LossDetection(const LossDetection&) = delete;
  LossDetection& operator=(const LossDetection&) = delete;

  // §A.5 OnPacketSent. Records the packet (time_sent is taken from `packet`,
  // normally `now`), tells congestion control about in-flight packets and
  // re-arms the timer. False, with nothing changed, if `packet_number` does
  // not grow the space's window, the ring cannot grow, or the space was
  // discarded. `packet` is taken by value, in two registers: the caller
  // builds it field by field, and reading it back through a reference in
  // one 16-byte load stalled on store forwarding.
  bool on_packet_sent(Instant now, wire::PacketNumberSpace space, uint64_t packet_number,
                      SentPacket packet);

  // §A.7 OnAckReceived for one ACK frame received in `space`.
  // kProtocolViolation, with no state changed, if the frame names a packet
  // number never sent (above the largest sent, or skipped). Acknowledgments
  // of packets already acknowledged are ignored. A recently declared-lost
  // packet (LossHistory) acknowledged now was a spurious loss: its frames
  // stay requeued and it gives no RTT sample or acknowledgment event, but it
  // raises the reordering thresholds, and when every loss counted in the
  // latest loss-triggered congestion event proved spurious (and neither
  // ECN-CE nor persistent congestion came with it) the reduction is undone.
  // Then, in RFC order: an RTT sample (only if the largest acknowledged is newly
  // acknowledged and an ack-eliciting packet is newly acknowledged; ack delay
  // ignored in Initial), ECN (ECN-CE count up: congestion event for the
  // largest newly acknowledged packet's send time; only with
  // `has_ecn_counts`, i.e. an ACK_ECN frame), loss detection (events, one
  // congestion event, persistent congestion), then the acknowledged packets
  // (events and congestion control), the PTO backoff reset (not at a client
  // before the server validated its address) and the timer.
  // An ACK in a Handshake packet tells a client the server validated its
  // address (§A.8 PeerCompletedAddressValidation).
  wire::WireError on_ack_received(Instant now, wire::PacketNumberSpace space,
                                  const wire::AckFrame& frame, bool has_ecn_counts,
                                  LossEvents& events);

  // §A.9 OnLossDetectionTimeout. Does nothing before timer(). On a time
  // threshold deadline declares the due packets lost; otherwise it is a PTO:
  // the backoff doubles and probes_pending() of the PTO space becomes
  // kProbesPerPto (kAntiDeadlockProbes for an unvalidated client with no
  // ack-eliciting packets in flight outside unconfirmed Application space:
  // a Handshake probe once it has Handshake keys, else a padded Initial).
  void on_timeout(Instant now, LossEvents& events);

  // The loss detection deadline; kNever when not armed.
  Instant timer() const {
    if (timer_stale_) refresh_timer();
    return timer_;
  }

  // Ack-eliciting probe packets owed in `space` after a PTO. They are not
  // blocked by congestion control (§7.5); the connection may coalesce
  // ack-eliciting packets of other spaces with in-flight data (§6.2.4).
  // Inline: asked for every packet a burst builds.
  size_t probes_pending(wire::PacketNumberSpace space) const { return at(space).probes; }
  // One probe was sent in `space` (also report it with on_packet_sent).
  void on_probe_sent(wire::PacketNumberSpace space);

  // RFC 9002 §6.3: the client got a Retry. Everything it sent before (its
  // Initial and any 0-RTT packets) will never be acknowledged: each is
  // reported lost, for its frames to be requeued, but without a congestion
  // signal; timers, probes and the PTO backoff restart. Both spaces stay in
  // use (packet numbers continue).
  void on_retry(Instant now, LossEvents& events);
  // RFC 9001 §4.6.2: the server refused 0-RTT. The client's Application
  // packets (all 0-RTT so far) are reported lost without a congestion
  // signal; the space stays in use.
  void on_zero_rtt_rejected(Instant now, LossEvents& events);

  // §A.11 OnPacketNumberSpaceDiscarded (Initial or Handshake keys dropped):
  // the space's packets leave bytes in flight without a congestion signal,
  // its timers and probes are cleared, the PTO backoff resets. Later sends
  // in the space are refused and ACKs in it ignored.
  void discard_space(Instant now, wire::PacketNumberSpace space);

  // A client has Handshake keys: its anti-deadlock probe becomes a
  // Handshake packet.
  void on_handshake_keys_available(Instant now);
  // The handshake is confirmed (RFC 9001 §4.1.2): the Application PTO may be
  // armed and ack delays are capped at max_ack_delay.
  void on_handshake_confirmed(Instant now);
  // A client learns the server completed address validation by other means
  // than a Handshake ACK (which on_ack_received notices itself).
  void on_peer_address_validated(Instant now);
  // A server at its anti-amplification limit arms no timer (§A.8). When a
  // datagram unblocks it the timer is re-armed; if timer() <= now the caller
  // calls on_timeout() at once (§A.6 OnDatagramReceived).
  void set_amplification_blocked(Instant now, bool blocked);
  // The connection moved to a path whose round trip says nothing about the
  // old one's (RFC 9000 §9.4): the estimator restarts from initial_rtt, and
  // the reordering thresholds from RFC 9002's constants.
  void reset_rtt();
  // The peer's max_ack_delay and ack_delay_exponent transport parameters.
  void set_peer_ack_params(Duration max_ack_delay, uint64_t ack_delay_exponent);
  // The sender is not using the window it has (§7.8): acknowledgments then
  // do not grow it. Passed on to congestion control with each acked packet.
  void set_app_limited(bool app_limited) { app_limited_ = app_limited; }
  // The sender ran out of data with window to spare: congestion control
  // marks its delivery samples app-limited until this flight is delivered.
  void on_app_limited() { cc_.on_app_limited(bytes_in_flight()); }

  // Bytes of in-flight packets over all spaces, O(1).
  uint64_t bytes_in_flight() const;
  bool has_ack_eliciting_in_flight() const;
  const RttEstimator& rtt() const { return rtt_; }
  // When the first RTT sample was taken; nullopt before it.
  std::optional<Instant> first_rtt_sample() const { return first_rtt_sample_; }
  uint32_t pto_count() const { return pto_count_; }
  const SentPackets& sent(wire::PacketNumberSpace space) const { return at(space).sent; }
  std::optional<uint64_t> largest_acked(wire::PacketNumberSpace space) const {
    return at(space).largest_acked;
  }
  // The current thresholds: kPacketThreshold and 9/8 until reordering shows.
  uint64_t packet_threshold() const { return thresholds_.packet_threshold(); }
  uint32_t time_threshold_eighths() const { return thresholds_.time_threshold_eighths(); }
  // Losses proved spurious, and reductions undone because of them, so far.
  uint64_t spurious_losses() const { return spurious_losses_; }
  uint64_t congestion_undos() const { return congestion_undos_; }
  // The time threshold deadline of `space`; kNever when none.
  Instant loss_time(wire::PacketNumberSpace space) const { return at(space).loss_time; }
  bool handshake_confirmed() const { return handshake_confirmed_; }
  // §A.8 PeerCompletedAddressValidation.
  bool peer_completed_address_validation() const;

  // The PTO period for `space` with the current backoff: (smoothed_rtt +
  // max(4 * rttvar, kGranularity) + max_ack_delay [Application only]) *
  // 2^pto_count, saturating.
  Duration pto_duration(wire::PacketNumberSpace space) const;

 private:
  // Reports every packet of `space` lost without a congestion signal.
  void abandon_space_packets(wire::PacketNumberSpace space, LossEvents& events);

  struct Space {
    explicit Space(SentPacketPool& pool) : sent(pool) {}
    SentPackets sent;
    std::optional<uint64_t> largest_acked;
    Instant time_of_last_ack_eliciting = 0;
    Instant loss_time = kNever;
    uint64_t ecn_ce_count = 0;
    uint8_t probes = 0;
    bool discarded = false;
  };

  // One newly acknowledged packet, kept until loss detection has run.
  struct NewlyAcked {
    uint64_t packet_number;
    SentPacket packet;
  };

  // What one loss detection pass found.
  struct LossResult {
    bool in_flight_lost = false;
    Instant largest_lost_time_sent = 0;  // of in-flight lost packets
    bool persistent_congestion = false;
  };

  class Collector;

  Space& at(wire::PacketNumberSpace space) { return spaces_[static_cast<size_t>(space)]; }
  const Space& at(wire::PacketNumberSpace space) const {
    return spaces_[static_cast<size_t>(space)];
  }

  Duration scaled_ack_delay(uint64_t raw) const;
  // §A.10 DetectAndRemoveLostPackets, plus the congestion signals of
  // §B.8 OnPacketsLost.
  LossResult detect_lost_packets(Instant now, wire::PacketNumberSpace space, LossEvents& events);
  // When a packet at or below largest_acked counts as lost (§6.1): by
  // packet threshold, or sent at or before lost_send_time.
  struct LossCriteria {
    uint64_t largest_acked = 0;
    uint64_t packet_threshold = 0;
    Duration delay = 0;
    bool time_applies = false;
    Instant lost_send_time = 0;
    bool by_packets(uint64_t pn) const { return largest_acked >= pn + packet_threshold; }
    bool by_time(const SentPacket& p) const {
      return time_applies && p.time_sent <= lost_send_time;
    }
  };
  // Pass 1, read-only: the last lost packet number, if any; sets loss_time,
  // the result's in-flight figures and persistent congestion.
  std::optional<uint64_t> find_lost(Space& s, const LossCriteria& criteria, LossResult& result);
  // Pass 2: removes and reports the lost packets up to `last_lost`.
  void remove_lost(Instant now, wire::PacketNumberSpace space, const LossCriteria& criteria,
                   uint64_t last_lost, LossEvents& events);
  void take_rtt_sample(Instant now, wire::PacketNumberSpace space, Instant time_sent,
                       uint64_t raw_ack_delay);
  // §B.7: ECN-CE counts rose; `time_sent` is the largest newly acked's.
  void on_ecn_ce(Instant now, Instant time_sent);
  // Before a loss pass reports in-flight losses up to `largest_lost_time_sent`:
  // a new congestion event begins unless congestion control is recovering.
  void begin_loss_event(Instant largest_lost_time_sent);
  // The ACK acknowledges `record`, declared lost before.
  void on_spurious_loss(Instant now, const LostPacketRecord& record);
  void signal_losses(Instant now, const LossResult& result);
  // §A.8 GetLossTimeAndSpace: the earliest loss_time, or kNever.
  Instant earliest_loss_time(wire::PacketNumberSpace& space) const;
  // §A.8 GetPtoTimeAndSpace.
  Instant pto_time_and_space(Instant now, wire::PacketNumberSpace& space) const;
  wire::PacketNumberSpace anti_deadlock_space() const;
  // Ack-eliciting packets in flight in a space whose PTO may be armed
  // (Application only once confirmed). Without any, a client whose address
  // is not yet validated arms the anti-deadlock PTO (§6.2.2.1), even with
  // 0-RTT packets in flight.
  bool has_armable_ack_eliciting_in_flight() const;
  // §A.8 SetLossDetectionTimer.
  void set_timer(Instant now);
  Instant compute_timer(Instant now) const;
  // A burst sends up to a few hundred packets at one `now`, and re-running
  // set_timer() for each would compute results nobody reads: on_packet_sent()
  // marks the deadline stale instead, and timer() computes it as the last
  // send would have (nothing set_timer() reads changes in between without
  // calling set_timer() itself).
  void refresh_timer() const;

  LossDetectionConfig config_;
  AckXorBuffer& xor_buffer_;
  CongestionController& cc_;
  RttEstimator rtt_;
  std::array<Space, wire::kPacketNumberSpaceCount> spaces_;
  std::vector<NewlyAcked> newly_acked_;
  ReorderingThresholds thresholds_;
  LossHistory lost_history_;
  // The latest congestion event (each reduction of the window begins one):
  // its in-flight losses and how many proved spurious; undoable while it
  // was loss-triggered and no ECN-CE or persistent congestion joined it.
  uint32_t congestion_event_ = 0;
  uint64_t event_losses_ = 0;
  uint64_t event_spurious_ = 0;
  bool event_undoable_ = false;
  uint64_t spurious_losses_ = 0;
  uint64_t congestion_undos_ = 0;
  std::optional<Instant> first_rtt_sample_;
  mutable Instant timer_ = kNever;
  mutable bool timer_stale_ = false;
  Instant stale_since_ = 0;  // the `now` of the send that made timer_ stale
  uint32_t pto_count_ = 0;
  bool handshake_keys_ = false;
  bool handshake_confirmed_ = false;
  bool handshake_ack_received_ = false;
  bool peer_address_validated_ = false;
  bool amplification_blocked_ = false;
  bool app_limited_ = false;
};

}  // namespace dpquic::recovery
