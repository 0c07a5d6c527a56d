#pragma once
// ECN validation for one connection's current path (RFC 9000 §13.4.2 and
// Appendix A.4; RFC 9002 §7.1).
//
// States follow the RFC's sample algorithm:
//   kTesting  the first kTestingPackets packets on a path go out ECT(0)
//   kUnknown  testing is over; packets go out unmarked until an ACK
//             validates the counts (-> kCapable) or fails them (-> kFailed)
//   kCapable  validated; packets go out ECT(0); a later failure disables ECN
//   kFailed   packets go out unmarked
// A successful validation that acknowledged a marked packet already moves
// kTesting to kCapable: waiting out the test gains nothing.
//
// The ECN counts an ACK carries are cumulative per packet number space and
// connection (not per path), so the baseline and the number of marked packets
// sent are kept per space across paths.

#include <array>
#include <cstdint>

#include "quic/transmit/burst.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"

namespace dpquic::conn {

class EcnValidator {
 public:
  enum class State : uint8_t { kTesting, kUnknown, kCapable, kFailed };

  // Marked packets sent per path before the test ends (RFC 9000 §13.4.2).
  static constexpr uint64_t kTestingPackets = 10;

  // ECT(0) while testing or capable, not-ECT otherwise.
  transmit::EcnCodepoint codepoint_to_send() const;

  // A packet of `space` was sent; `marked`: with an ECT codepoint.
  void on_packet_sent(wire::PacketNumberSpace space, bool marked);

  // An ACK in `space` newly acknowledged `newly_acked_marked` packets that
  // were sent ECT-marked, with ECN counts `counts` (nullptr: a plain ACK).
  // Returns how many new ECN-CE marks to treat as a congestion event (0 if
  // none, or when ECN is failed or this ACK failed validation).
  //
  // Validation fails when marked packets are acknowledged without counts,
  // when a count decreases, when the increase of ECT(0)+CE is below
  // newly_acked_marked, when ECT(1) is reported (we never send it), or when
  // ECT(0)+CE exceeds the marked packets sent in the space.
  //
  // largest_acked_increased: whether this ACK raised the space's largest
  // acknowledged packet number. An ACK that did not (a reordered one) never
  // fails validation (RFC 9000 §13.4.2.1); counts that would fail are then
  // ignored instead.
  uint64_t on_ack(wire::PacketNumberSpace space, uint64_t newly_acked_marked,
                  const wire::EcnCounts* counts, bool largest_acked_increased = true);

  // Every packet sent marked during the test was declared lost: the path
  // (or a middlebox) drops ECT packets.
  void on_all_testing_lost();

  State state() const { return state_; }

  // A new path: test again. Counts and baselines carry over (see above).
  void reset_for_new_path();

  // Marked packets sent on the current path while testing.
  uint64_t testing_packets_sent() const { return testing_sent_; }

 private:
  struct SpaceState {
    uint64_t marked_sent = 0;
    wire::EcnCounts baseline;  // counts of the last ACK that validated
  };

  static constexpr size_t index_of(wire::PacketNumberSpace space) {
    return static_cast<size_t>(space);
  }
  void fail() { state_ = State::kFailed; }

  State state_ = State::kTesting;
  uint64_t testing_sent_ = 0;
  std::array<SpaceState, wire::kPacketNumberSpaceCount> spaces_{};
};

}  // namespace dpquic::conn
