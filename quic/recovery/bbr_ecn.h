#pragma once
// ECN-CE marks per round trip, for BBR's ECN response.
//
// The BBR draft (draft-ietf-ccwg-bbr-06) specifies responses to loss only.
// The ECN response here follows BBRv2's design, which treats CE like DCTCP
// does: the fraction of packets marked in each round trip feeds an
// exponentially weighted average, alpha (gain 1/16, starting at 1 on the
// first mark, as DCTCP's does); a round with marks cuts inflight_shortterm
// by factor * alpha, and a round in which more than half the packets were
// marked means inflight is too high, as a loss rate above LossThresh does.
// Bbr::on_ce_marks and the per-round step in bbr.cc use it.
//
// Counts are packets: the peer reports CE per packet (RFC 9000 §13.4.1).

#include <algorithm>
#include <cstdint>

namespace dpquic::recovery {

class CeRounds {
 public:
  static constexpr double kAlphaGain = 1.0 / 16;

  // `count` packets newly reported CE-marked.
  void on_marks(uint64_t count) {
    marks_in_round_ += count;
    if (count > 0) seen_ = true;
  }
  // One Application-space packet acknowledged.
  void on_acked() { ++acked_in_round_; }

  // A round trip ended: its ratio of marks to acknowledged packets, and
  // alpha once any mark was ever seen.
  void end_round() {
    const uint64_t packets = std::max(acked_in_round_, marks_in_round_);
    last_ratio_ = packets == 0 ? 0 : static_cast<double>(marks_in_round_) / packets;
    if (seen_) alpha_ = (1 - kAlphaGain) * alpha_ + kAlphaGain * last_ratio_;
    marks_in_round_ = acked_in_round_ = 0;
  }

  bool marked_last_round() const { return last_ratio_ > 0; }
  double last_ratio() const { return last_ratio_; }
  double alpha() const { return alpha_; }
  void reset() { *this = CeRounds{}; }

 private:
  uint64_t marks_in_round_ = 0;
  uint64_t acked_in_round_ = 0;
  double last_ratio_ = 0;
  double alpha_ = 1;
  bool seen_ = false;
};

}  // namespace dpquic::recovery
