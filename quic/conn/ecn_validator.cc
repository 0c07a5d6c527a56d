#include "quic/conn/ecn_validator.h"

namespace dpquic::conn {

transmit::EcnCodepoint EcnValidator::codepoint_to_send() const {
  return state_ == State::kTesting || state_ == State::kCapable ? transmit::EcnCodepoint::kEct0
                                                                : transmit::EcnCodepoint::kNotEct;
}

void EcnValidator::on_packet_sent(wire::PacketNumberSpace space, bool marked) {
  if (!marked) return;
  ++spaces_[index_of(space)].marked_sent;
  if (state_ == State::kTesting && ++testing_sent_ >= kTestingPackets) state_ = State::kUnknown;
}

uint64_t EcnValidator::on_ack(wire::PacketNumberSpace space, uint64_t newly_acked_marked,
                              const wire::EcnCounts* counts, bool largest_acked_increased) {
  if (state_ == State::kFailed) return 0;
  SpaceState& s = spaces_[index_of(space)];
  if (counts == nullptr) {
    // A network element cleared the codepoint, or the peer does not report.
    if (newly_acked_marked > 0 && largest_acked_increased) fail();
    return 0;
  }
  const wire::EcnCounts& base = s.baseline;
  // Never more ECT(0)+CE packets than we marked (remarking on the path), no
  // ECT(1) at all (we send only ECT(0)), no count going backwards. Checking
  // the totals first also keeps the sum below from overflowing.
  bool valid = counts->ect0 <= s.marked_sent && counts->ecn_ce <= s.marked_sent - counts->ect0 &&
               counts->ect1 == 0 && counts->ect0 >= base.ect0 && counts->ecn_ce >= base.ecn_ce;
  // Every newly acknowledged marked packet arrived as ECT(0) or CE.
  if (valid) {
    valid = (counts->ect0 - base.ect0) + (counts->ecn_ce - base.ecn_ce) >= newly_acked_marked;
  }
  if (!valid) {
    if (largest_acked_increased) fail();
    return 0;
  }
  const uint64_t new_ce = counts->ecn_ce - base.ecn_ce;
  s.baseline = *counts;
  if (newly_acked_marked > 0 && (state_ == State::kTesting || state_ == State::kUnknown)) {
    state_ = State::kCapable;
  }
  return new_ce;
}

void EcnValidator::on_all_testing_lost() {
  if (state_ == State::kTesting || state_ == State::kUnknown) fail();
}

void EcnValidator::reset_for_new_path() {
  state_ = State::kTesting;
  testing_sent_ = 0;
}

}  // namespace dpquic::conn
