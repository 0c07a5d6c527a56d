// HyStart++ (RFC 9406) driven by scripted RTT samples: rounds, sampling,
// CSS entry, CSS growth, return to slow start, exit after CSS_ROUNDS.
#include "quic/recovery/hystart.h"

#include <gtest/gtest.h>

#include <vector>

namespace dpquic::recovery {
namespace {

using Outcome = HyStartPlusPlus::Outcome;
constexpr Duration kMs = kMillisecond;

// Feeds ACKs to HyStart++ the way a sender sees them: a round starts at the
// ACK that ends the previous one; ACKs inside a round acknowledge packets
// sent before it began, and the first ACK of a packet sent at or after the
// round's start ends it.
class Script {
 public:
  explicit Script(HyStartPlusPlus& hystart) : hystart_(hystart) {}

  // An ACK within the current round.
  Outcome ack(Duration rtt) {
    now_ += kMs;
    return hystart_.on_ack(now_, round_start_ - 1, rtt);
  }
  // The ACK that ends the current round (and starts the next).
  Outcome end_round(Duration rtt) {
    now_ += kMs;
    const Outcome outcome = hystart_.on_ack(now_, round_start_, rtt);
    round_start_ = now_;
    return outcome;
  }
  // A whole round: its first ACK starts it, then the rest.
  std::vector<Outcome> round(const std::vector<Duration>& rtts) {
    std::vector<Outcome> outcomes;
    for (size_t i = 0; i < rtts.size(); ++i) {
      outcomes.push_back(i == 0 ? end_round(rtts[i]) : ack(rtts[i]));
    }
    return outcomes;
  }

 private:
  HyStartPlusPlus& hystart_;
  Instant now_ = 1000 * kMs;
  Instant round_start_ = 1;  // before the first ACK no round is open
};

std::vector<Duration> repeat(Duration rtt, size_t count) {
  return std::vector<Duration>(count, rtt);
}

TEST(HyStartTest, Constants) {
  EXPECT_EQ(HyStartPlusPlus::kMinRttThresh, 4 * kMs);
  EXPECT_EQ(HyStartPlusPlus::kMaxRttThresh, 16 * kMs);
  EXPECT_EQ(HyStartPlusPlus::kMinRttDivisor, 8u);
  EXPECT_EQ(HyStartPlusPlus::kNRttSample, 8u);
  EXPECT_EQ(HyStartPlusPlus::kCssGrowthDivisor, 4u);
  EXPECT_EQ(HyStartPlusPlus::kCssRounds, 5u);
}

TEST(HyStartTest, RttThresholdIsClampedEighth) {
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(1 * kMs), 4 * kMs);
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(20 * kMs), 4 * kMs);  // 2.5 ms -> 4
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(32 * kMs), 4 * kMs);  // exactly 4
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(40 * kMs), 5 * kMs);
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(80 * kMs), 10 * kMs);
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(128 * kMs), 16 * kMs);  // exactly 16
  EXPECT_EQ(HyStartPlusPlus::rtt_threshold(500 * kMs), 16 * kMs);
}

TEST(HyStartTest, RoundsEndWhenAPacketOfTheRoundIsAcked) {
  HyStartPlusPlus hystart;
  EXPECT_EQ(hystart.rounds(), 0u);
  const Instant t0 = 100 * kMs;
  // The first ACK opens round 1.
  EXPECT_EQ(hystart.on_ack(t0, 10 * kMs, 90 * kMs), Outcome::kNone);
  EXPECT_EQ(hystart.rounds(), 1u);
  EXPECT_EQ(hystart.current_round_min_rtt(), 90 * kMs);
  EXPECT_EQ(hystart.last_round_min_rtt(), HyStartPlusPlus::kInfinity);
  // Packets sent before t0 were sent in earlier rounds.
  hystart.on_ack(t0 + 5 * kMs, t0 - 1, 80 * kMs);
  EXPECT_EQ(hystart.rounds(), 1u);
  EXPECT_EQ(hystart.current_round_min_rtt(), 80 * kMs);
  EXPECT_EQ(hystart.rtt_sample_count(), 2u);
  // A packet sent at t0 is windowEnd: its ACK starts round 2, whose first
  // sample is this ACK's.
  hystart.on_ack(t0 + 70 * kMs, t0, 70 * kMs);
  EXPECT_EQ(hystart.rounds(), 2u);
  EXPECT_EQ(hystart.last_round_min_rtt(), 80 * kMs);
  EXPECT_EQ(hystart.current_round_min_rtt(), 70 * kMs);
  EXPECT_EQ(hystart.rtt_sample_count(), 1u);
  // Round 2 began at t0 + 70 ms.
  hystart.on_ack(t0 + 80 * kMs, t0 + 70 * kMs - 1, 75 * kMs);
  EXPECT_EQ(hystart.rounds(), 2u);
  hystart.on_ack(t0 + 150 * kMs, t0 + 71 * kMs, 79 * kMs);
  EXPECT_EQ(hystart.rounds(), 3u);
  EXPECT_EQ(hystart.last_round_min_rtt(), 70 * kMs);
  EXPECT_EQ(hystart.current_round_min_rtt(), 79 * kMs);
}

TEST(HyStartTest, RttSamplingKeepsRoundMinimum) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round({50 * kMs, 48 * kMs, 55 * kMs, 47 * kMs, 60 * kMs});
  EXPECT_EQ(hystart.current_round_min_rtt(), 47 * kMs);
  EXPECT_EQ(hystart.rtt_sample_count(), 5u);
  script.round({52 * kMs, 51 * kMs});
  EXPECT_EQ(hystart.last_round_min_rtt(), 47 * kMs);
  EXPECT_EQ(hystart.current_round_min_rtt(), 51 * kMs);
  EXPECT_EQ(hystart.rtt_sample_count(), 2u);
}

TEST(HyStartTest, FirstRoundNeverEntersCss) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  // Round 1 has no previous round (lastRoundMinRTT is infinite): no CSS
  // however high or rising its samples.
  std::vector<Duration> rising;
  for (Duration rtt = 40 * kMs; rtt < 400 * kMs; rtt += 20 * kMs) rising.push_back(rtt);
  for (Outcome o : script.round(rising)) EXPECT_EQ(o, Outcome::kNone);
  EXPECT_FALSE(hystart.in_css());
  // Round 2 compares against round 1's minimum (40 ms).
  const auto outcomes = script.round(repeat(200 * kMs, 8));
  EXPECT_EQ(outcomes[7], Outcome::kEnteredCss);
  EXPECT_TRUE(hystart.in_css());
}

TEST(HyStartTest, CssEntryThresholdAndSampleCount) {
  // lastRoundMinRTT = 40 ms, so RttThresh = 5 ms: 45 ms enters, 44.999 not.
  {
    HyStartPlusPlus hystart;
    Script script(hystart);
    script.round(repeat(40 * kMs, 8));
    const auto outcomes = script.round(repeat(45 * kMs - 1, 20));
    for (Outcome o : outcomes) EXPECT_EQ(o, Outcome::kNone);
    EXPECT_FALSE(hystart.in_css());
  }
  {
    HyStartPlusPlus hystart;
    Script script(hystart);
    script.round(repeat(40 * kMs, 8));
    const auto outcomes = script.round(repeat(45 * kMs, 8));
    // Samples 1..7 are not enough; the 8th (N_RTT_SAMPLE) triggers.
    for (size_t i = 0; i < 7; ++i) EXPECT_EQ(outcomes[i], Outcome::kNone) << i;
    EXPECT_EQ(outcomes[7], Outcome::kEnteredCss);
    EXPECT_TRUE(hystart.in_css());
    EXPECT_EQ(hystart.css_baseline_min_rtt(), 45 * kMs);
  }
  // The threshold scales with lastRoundMinRTT (100 ms -> 12.5 ms).
  {
    HyStartPlusPlus hystart;
    Script script(hystart);
    script.round(repeat(100 * kMs, 8));  // RttThresh = 12.5 ms
    // 112 ms stays under 100 + 12.5 for ten samples...
    for (Outcome o : script.round(repeat(112 * kMs, 10))) EXPECT_EQ(o, Outcome::kNone);
    EXPECT_FALSE(hystart.in_css());
  }
  // ...while a round whose minimum reaches it enters at its 8th sample even
  // after lower samples earlier in the previous round.
  {
    HyStartPlusPlus hystart;
    Script script(hystart);
    script.round({130 * kMs, 100 * kMs, 120 * kMs});  // min 100 ms
    const auto outcomes = script.round(repeat(112500 * kMicrosecond, 9));
    EXPECT_EQ(outcomes[6], Outcome::kNone);
    EXPECT_EQ(outcomes[7], Outcome::kEnteredCss);
  }
}

TEST(HyStartTest, NoEntryWithoutEightSamplesInTheRound) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round(repeat(40 * kMs, 3));  // few samples in round 1 are fine
  for (Outcome o : script.round(repeat(100 * kMs, 7))) EXPECT_EQ(o, Outcome::kNone);
  EXPECT_FALSE(hystart.in_css());
  // The next round restarts the count: 7 more samples do not trigger either.
  for (Outcome o : script.round(repeat(200 * kMs, 7))) EXPECT_EQ(o, Outcome::kNone);
  EXPECT_FALSE(hystart.in_css());
  EXPECT_EQ(script.ack(200 * kMs), Outcome::kEnteredCss);
}

TEST(HyStartTest, CssGrowsAtAQuarter) {
  HyStartPlusPlus hystart;
  EXPECT_EQ(hystart.window_increase(1200), 1200u);
  Script script(hystart);
  script.round(repeat(40 * kMs, 8));
  script.round(repeat(50 * kMs, 8));
  ASSERT_TRUE(hystart.in_css());
  EXPECT_EQ(hystart.window_increase(1200), 300u);
  // Remainders carry: 1001 -> 250 (1 left), 1003 + 1 -> 251.
  EXPECT_EQ(hystart.window_increase(1001), 250u);
  EXPECT_EQ(hystart.window_increase(1003), 251u);
  EXPECT_EQ(hystart.window_increase(2), 0u);
  EXPECT_EQ(hystart.window_increase(2), 1u);
}

TEST(HyStartTest, ReturnsToSlowStartWhenRttDropsBelowBaseline) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round(repeat(40 * kMs, 8));
  script.round(repeat(50 * kMs, 8));
  ASSERT_TRUE(hystart.in_css());
  ASSERT_EQ(hystart.css_baseline_min_rtt(), 50 * kMs);
  // Next round: RTT back to 45 ms, below the baseline, but the check waits
  // for N_RTT_SAMPLE samples.
  const auto outcomes = script.round(repeat(45 * kMs, 8));
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(outcomes[i], Outcome::kNone) << i;
  EXPECT_EQ(outcomes[7], Outcome::kResumedSlowStart);
  EXPECT_FALSE(hystart.in_css());
  EXPECT_EQ(hystart.css_baseline_min_rtt(), HyStartPlusPlus::kInfinity);
  EXPECT_EQ(hystart.window_increase(1200), 1200u);
  // Slow start with HyStart++ again: a later rise re-enters CSS.
  script.round(repeat(45 * kMs, 8));
  const auto again = script.round(repeat(60 * kMs, 8));
  EXPECT_EQ(again[7], Outcome::kEnteredCss);
  EXPECT_EQ(hystart.css_baseline_min_rtt(), 60 * kMs);
}

TEST(HyStartTest, StaysInCssWhileRttStaysAtOrAboveBaseline) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round(repeat(40 * kMs, 8));
  script.round(repeat(50 * kMs, 8));
  ASSERT_TRUE(hystart.in_css());
  for (Outcome o : script.round(repeat(50 * kMs, 12))) EXPECT_EQ(o, Outcome::kNone);
  EXPECT_TRUE(hystart.in_css());
}

TEST(HyStartTest, ExitsToCongestionAvoidanceAfterFiveCssRounds) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round(repeat(40 * kMs, 8));
  script.round(repeat(50 * kMs, 8));  // CSS entered in round 2
  ASSERT_TRUE(hystart.in_css());
  ASSERT_EQ(hystart.rounds(), 2u);
  // The round CSS began in is the first; rounds 3..6 are the next four.
  for (uint32_t i = 1; i <= 4; ++i) {
    for (Outcome o : script.round(repeat(55 * kMs, 8))) EXPECT_EQ(o, Outcome::kNone);
    EXPECT_EQ(hystart.css_rounds(), i);
    EXPECT_TRUE(hystart.in_css());
  }
  // The ACK that ends the fifth CSS round leaves slow start.
  EXPECT_EQ(script.end_round(55 * kMs), Outcome::kExitToCongestionAvoidance);
  EXPECT_FALSE(hystart.in_css());
  EXPECT_EQ(hystart.rounds(), 7u);
}

TEST(HyStartTest, ResumingSlowStartResetsTheCssRoundCount) {
  HyStartPlusPlus hystart;
  Script script(hystart);
  script.round(repeat(40 * kMs, 8));
  script.round(repeat(50 * kMs, 8));
  script.round(repeat(55 * kMs, 8));
  script.round(repeat(55 * kMs, 8));
  ASSERT_EQ(hystart.css_rounds(), 2u);
  const auto outcomes = script.round(repeat(49 * kMs, 8));
  ASSERT_EQ(outcomes[7], Outcome::kResumedSlowStart);
  EXPECT_EQ(hystart.css_rounds(), 0u);
  // Re-entering CSS starts a fresh count of five.
  const auto entry = script.round(repeat(60 * kMs, 8));  // vs 49: thresh 6.125 ms
  ASSERT_EQ(entry[7], Outcome::kEnteredCss);
  for (int i = 0; i < 4; ++i) script.round(repeat(60 * kMs, 8));
  EXPECT_TRUE(hystart.in_css());
  EXPECT_EQ(script.end_round(60 * kMs), Outcome::kExitToCongestionAvoidance);
}

}  // namespace
}  // namespace dpquic::recovery
