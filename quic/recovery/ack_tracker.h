#pragma once
// ACK generation for one packet number space (RFC 9000 §13.2, ECN counts
// §13.4.1): what was received, when an ACK must go out, and the ACK frame.
//
// When an ACK is required (ack_required / ack_deadline):
// - an ack-eliciting Initial or Handshake packet: at once (§13.2.1);
// - Application space: once `ack_eliciting_threshold` ack-eliciting packets
//   (default 2, §13.2.2) are unacknowledged, or max_ack_delay after the first
//   of them arrived;
// - at once for an ack-eliciting packet that is reordered (below the largest
//   ack-eliciting packet received) or that leaves a gap (missing packets
//   between the largest ack-eliciting packet received and it), and for an
//   ECN-CE packet while an ack-eliciting packet awaits its ACK (§13.2.1);
// - never because of non-ack-eliciting packets alone, so that an ACK-only
//   packet never answers an ACK-only packet. They are still reported whenever
//   an ACK goes out: has_ack_to_send() says an ACK could be bundled into a
//   packet sent for another reason (acknowledging the peer's ACK-only packets
//   lets it stop repeating old ranges, §13.2.4).
//
// The cycle, per sent packet that carries an ACK:
//   size_t n = tracker.write_ack_frame(writer, now);  // 0: does not fit
//   ... the packet is sent ...
//   uint64_t largest = tracker.on_ack_sent(now);
// The connection keeps `largest` with the sent packet; when that packet is
// acknowledged it calls on_ack_frame_acknowledged(largest), and the tracker
// stops reporting packet numbers up to it (§13.2.4). If the packet is lost,
// nothing is needed: later ACKs still carry the ranges.
//
// Sans-IO: time comes in as `now`; the connection arms its timer at
// ack_deadline(). Nothing here allocates after construction.

#include <cstddef>
#include <cstdint>

#include "quic/recovery/received_ranges.h"
#include "quic/time.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/varint.h"

namespace dpquic::recovery {

// ECN codepoints as the two low bits of the IP TOS / traffic class byte.
enum class EcnCodepoint : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

struct AckTrackerConfig {
  // Initial and Handshake acknowledge every ack-eliciting packet at once;
  // Application (0-RTT and 1-RTT) may delay.
  wire::PacketNumberSpace space = wire::PacketNumberSpace::kApplication;
  // Our max_ack_delay transport parameter (RFC 9000 §18.2; default 25 ms).
  Duration max_ack_delay = 25 * kMillisecond;
  // Ack-eliciting packets after which an ACK is due at once; 0 acts as 1.
  // (An ACK_FREQUENCY frame's Ack-Eliciting Threshold field N means N + 1.)
  uint64_t ack_eliciting_threshold = 2;
  // Our ack_delay_exponent transport parameter, 0 to 20 (default 3).
  uint8_t ack_delay_exponent = 3;
  // Received ranges kept, 1 to ReceivedRanges::kMaxRanges.
  size_t max_ranges = ReceivedRanges::kMaxRanges;
};

class AckTracker {
 public:
  static constexpr uint8_t kMaxAckDelayExponent = 20;

  // Throws std::invalid_argument for an exponent above 20 or a bad
  // max_ranges (configuration time only).
  explicit AckTracker(const AckTrackerConfig& config = {});

  // Records a packet that was decrypted and processed, with the ECN
  // codepoint of the IP packet that carried it (the low two bits of
  // `ecn_codepoint` are used). Returns true if it is a duplicate or too old
  // (see ReceivedRanges): then nothing is recorded, not even its ECN mark
  // (§13.4.1), and the caller discards it.
  [[nodiscard]] bool on_packet_received(Instant now, uint64_t packet_number, bool ack_eliciting,
                                        uint8_t ecn_codepoint);
  // Whether on_packet_received would report a duplicate, without recording
  // anything (to drop a packet before processing its frames).
  bool is_duplicate(uint64_t packet_number) const { return ranges_.is_duplicate(packet_number); }

  // An ACK must be sent now, alone if nothing else is to be sent.
  bool ack_required(Instant now) const { return ack_deadline() <= now; }
  // When an ACK becomes required: kNever if none is pending, a time at or
  // before the triggering packet's arrival if it is required at once.
  Instant ack_deadline() const;
  // Something was received since the last ACK was sent, so an ACK could be
  // bundled into a packet sent anyway. Never a reason to send by itself.
  bool has_ack_to_send() const { return new_since_ack_ && !ranges_.empty(); }

  // Writes an ACK frame (ACK_ECN, type 0x03, if any ECN count is non-zero)
  // with every kept range, or as many of the newest as fit (RFC 9000
  // §13.2.3 omits the oldest first), and ACK Delay = microseconds since the
  // largest packet arrived, >> ack_delay_exponent. Returns the bytes written,
  // or 0 (writing nothing) if nothing was received or not even the newest
  // range fits. Does not change the pending state: see on_ack_sent.
  size_t write_ack_frame(wire::ByteWriter& writer, Instant now);

  // The packet carrying the frame last written was sent: clears the pending
  // ACK state. Returns that frame's Largest Acknowledged, for the caller to
  // keep with the sent packet (see above). Call only after a successful
  // write_ack_frame.
  uint64_t on_ack_sent(Instant now);

  // A packet that carried an ACK whose Largest Acknowledged was `largest` was
  // acknowledged by the peer: stop reporting packet numbers up to `largest`
  // (§13.2.4). Numbers up to it are too old from now on.
  void on_ack_frame_acknowledged(uint64_t largest_acknowledged);

  // ACK_FREQUENCY (draft-ietf-quic-ack-frequency) may change these at any
  // time. A pending delay is re-timed from the first unacknowledged packet.
  void set_ack_eliciting_threshold(uint64_t threshold);
  void set_max_ack_delay(Duration max_ack_delay) { max_ack_delay_ = max_ack_delay; }

  // --- Observers -------------------------------------------------------------

  const ReceivedRanges& received() const { return ranges_; }
  const wire::EcnCounts& ecn_counts() const { return ecn_; }
  // Largest packet number received in this space, kept even after its range
  // is pruned (packet number decoding needs it, RFC 9000 §17.1).
  bool has_received() const { return has_received_; }
  uint64_t largest_received() const { return largest_received_; }
  // Ack-eliciting packets received since the last ACK was sent.
  uint64_t unacked_ack_eliciting() const { return unacked_ack_eliciting_; }
  // When the last ACK was sent (kNever before the first).
  Instant last_ack_sent_time() const { return last_ack_sent_time_; }
  wire::PacketNumberSpace space() const { return space_; }
  Duration max_ack_delay() const { return max_ack_delay_; }
  uint64_t ack_eliciting_threshold() const { return ack_eliciting_threshold_; }
  uint8_t ack_delay_exponent() const { return ack_delay_exponent_; }

 private:
  void require_immediately(Instant at);
  // Whether packets are missing between the largest ack-eliciting packet
  // received before `packet_number` (just recorded) and it.
  bool leaves_gap(uint64_t packet_number) const;

  ReceivedRanges ranges_;
  wire::EcnCounts ecn_;
  wire::PacketNumberSpace space_;
  Duration max_ack_delay_;
  uint64_t ack_eliciting_threshold_;
  uint8_t ack_delay_exponent_;

  bool has_received_ = false;
  uint64_t largest_received_ = 0;
  Instant largest_received_time_ = 0;
  bool has_ack_eliciting_ = false;
  uint64_t largest_ack_eliciting_ = 0;

  // Pending state, cleared by on_ack_sent.
  bool new_since_ack_ = false;
  uint64_t unacked_ack_eliciting_ = 0;
  Instant first_unacked_time_ = 0;    // arrival of the first of them
  Instant immediate_since_ = kNever;  // kNever unless an ACK is due at once

  uint64_t written_largest_ = 0;
  Instant last_ack_sent_time_ = kNever;
};

}  // namespace dpquic::recovery
