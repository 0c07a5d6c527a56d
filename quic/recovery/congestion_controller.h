#pragma once
// The congestion controller interface (RFC 9002 §7). NewReno (§7, §B),
// CUBIC (RFC 9438, with HyStart++ per RFC 9406) and BBR (draft-ietf-ccwg-bbr)
// implement it.
//
// Loss detection drives it: it reports every in-flight packet sent, each
// newly acknowledged in-flight packet (ascending, one ACK frame at a time,
// closed by on_ack_processed), congestion events (loss or ECN-CE) and
// persistent congestion. bytes_in_flight is tracked by the sent-packet
// rings, not here; callers pass it where a decision needs it.
//
// A model-based controller also hears of each lost or discarded packet, of
// the sender running out of data (app-limited), and sets a pacing rate of
// its own; the window-based ones ignore those hooks (their defaults).

#include <cstddef>
#include <cstdint>

#include "quic/recovery/rtt_estimator.h"
#include "quic/time.h"

namespace dpquic::recovery {

enum class CongestionControlAlgorithm : uint8_t { kNewReno, kCubic, kBbr };

// RFC 9002 §7.2: kInitialWindow = min(10 * mds, max(14720, 2 * mds)) and
// kMinimumWindow = 2 * mds.
constexpr uint64_t initial_window(uint64_t max_datagram_size) {
  const uint64_t ten = 10 * max_datagram_size;
  const uint64_t floor = 14720 > 2 * max_datagram_size ? 14720 : 2 * max_datagram_size;
  return ten < floor ? ten : floor;
}
constexpr uint64_t minimum_window(uint64_t max_datagram_size) { return 2 * max_datagram_size; }

// The congestion recovery period (RFC 9002 §7.3.2): it starts when a
// congestion event reduces the window, and a packet sent before that start
// cannot cause another reduction or grow the window.
class RecoveryPeriod {
 public:
  void begin(Instant now) {
    active_ = true;
    start_ = now;
  }
  // Persistent congestion leaves recovery, so the next loss reduces again.
  void end() { active_ = false; }
  bool contains(Instant time_sent) const { return active_ && time_sent <= start_; }

 private:
  bool active_ = false;
  Instant start_ = 0;
};

// One in-flight packet: acknowledged, lost or discarded.
struct AckedPacket {
  uint64_t packet_number = 0;
  Instant time_sent = 0;
  uint64_t size = 0;
  // Packet numbers are per space; only Application-space ones are unique
  // over the connection's life after the handshake.
  bool application_space = true;
};

class CongestionController {
 public:
  virtual ~CongestionController() = default;

  // An in-flight packet left (after pacing); `bytes_in_flight` includes it.
  virtual void on_packet_sent(Instant now, uint64_t packet_number, uint64_t size,
                              uint64_t bytes_in_flight) = 0;
  // The same, with the packet's space: what loss detection calls.
  virtual void on_packet_sent_in_space(Instant now, bool application_space, uint64_t packet_number,
                                       uint64_t size, uint64_t bytes_in_flight) {
    (void)application_space;
    on_packet_sent(now, packet_number, size, bytes_in_flight);
  }

  // One newly acknowledged in-flight packet. `bytes_in_flight` is the value
  // before this ACK frame removed anything; `app_limited` means the sender
  // was not using the window it had (no growth then, §7.8).
  virtual void on_packet_acked(Instant now, const AckedPacket& packet, const RttEstimator& rtt,
                               uint64_t bytes_in_flight, bool app_limited) = 0;
  // Ends one ACK frame's run of on_packet_acked calls (HyStart++ rounds);
  // `bytes_in_flight` is what remains in flight after it.
  virtual void on_ack_processed(Instant now, const RttEstimator& rtt, uint64_t bytes_in_flight) = 0;
  // One in-flight packet declared lost, before the congestion event its
  // loss belongs to.
  virtual void on_packet_lost(Instant now, const AckedPacket& packet) {
    (void)now;
    (void)packet;
  }
  // One in-flight packet left flight with neither (its space was discarded,
  // a Retry or a 0-RTT rejection made it moot).
  virtual void on_packet_discarded(const AckedPacket& packet) { (void)packet; }
  // The sender had nothing more to send with window to spare
  // (MarkConnectionAppLimited, draft-ietf-ccwg-bbr §4.1.2.4).
  virtual void on_app_limited(uint64_t bytes_in_flight) { (void)bytes_in_flight; }

  // `count` Application-space packets newly reported ECN-CE by one ACK
  // frame's counts, before that frame's acknowledged packets are reported
  // (and before the congestion event the marks also raise).
  virtual void on_ce_marks(Instant now, uint64_t count) {
    (void)now;
    (void)count;
  }

  // Loss of, or ECN-CE on, a packet sent at `time_sent` (§7.3.2). Ignored
  // while already recovering from a packet sent after that.
  virtual void on_congestion_event(Instant now, Instant time_sent) = 0;
  // §7.6.2: the window collapses to the minimum window.
  virtual void on_persistent_congestion(Instant now) = 0;

  // Congestion undo (RFC 9438 §4.9; for Reno the Eifel response, RFC 4015):
  // every loss behind the latest window reduction by on_congestion_event
  // turned out spurious, so the state that reduction replaced (window, slow
  // start threshold, recovery period and, for CUBIC, the curve) comes back;
  // the window never shrinks by it. Loss detection calls it only for a
  // loss-triggered reduction with no ECN-CE in its recovery period.
  // Persistent congestion and reset() forget the saved state, and one
  // reduction is undone at most once. Returns whether anything was restored;
  // an algorithm without undo keeps its reductions.
  virtual bool undo_congestion_event() { return false; }

  virtual uint64_t congestion_window() const = 0;
  virtual uint64_t slow_start_threshold() const = 0;  // UINT64_MAX until the first event
  virtual bool in_slow_start() const = 0;
  // Whether a packet sent at `time_sent` was sent before the current
  // recovery period began (§7.3.2).
  virtual bool in_recovery(Instant time_sent) const = 0;

  virtual CongestionControlAlgorithm algorithm() const = 0;
  // The rate to pace at, in bytes per second; 0 lets the pacer derive one
  // from the window and the smoothed RTT (RFC 9002 §7.7).
  virtual uint64_t pacing_rate() const { return 0; }
  // For qlog (recovery:congestion_state_updated): the controller's state,
  // a static string.
  virtual const char* state_name() const {
    return in_slow_start() ? "slow_start" : "congestion_avoidance";
  }
  // A model-based controller's bandwidth estimate (bytes per second) and
  // its min RTT; 0 for the window-based ones.
  virtual uint64_t bandwidth_estimate() const { return 0; }
  virtual Duration model_min_rtt() const { return 0; }

  // Back to the initial state: the connection moved to a new path, whose
  // capacity says nothing about the old one's (RFC 9000 §9.4).
  virtual void reset() = 0;
  // reset(), and packets sent at or before `now` (on the old path) no longer
  // count: their acknowledgments do not grow the new window and their losses
  // do not shrink it (RFC 9000 §9.4: "Packets sent on the old path MUST NOT
  // contribute to congestion control ... for the new path").
  virtual void reset_for_new_path(Instant now) {
    (void)now;
    reset();
  }
};

}  // namespace dpquic::recovery
