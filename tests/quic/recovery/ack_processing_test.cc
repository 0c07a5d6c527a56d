// process_ack (the XOR method) and process_ack_range_walk: the contract case
// by case, for both methods, then their equivalence (and agreement with a set
// oracle) on randomized windows and ACK sequences with out-of-window ranges,
// never-sent numbers, duplicates and reordering.
#include "quic/recovery/ack_processing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"
#include "tests/quic/recovery/ack_frame_builder.h"

namespace dpquic::recovery {
namespace {

using testing::AckFrame;
using testing::ranges_of;
using wire::AckRange;
using wire::WireError;
using Numbers = std::vector<uint64_t>;

SentPacket packet_for(uint64_t packet_number, bool ack_eliciting = true) {
  SentPacket packet;
  packet.time_sent = 1000 * packet_number + 3;
  packet.frames = static_cast<uint32_t>(packet_number ^ 0xabcd);
  packet.size = static_cast<uint16_t>(100 + packet_number % 1300);
  packet.ack_eliciting = ack_eliciting;
  packet.in_flight = true;
  return packet;
}

bool same_packet(const SentPacket& a, const SentPacket& b) {
  return a.time_sent == b.time_sent && a.frames == b.frames && a.size == b.size &&
         a.ack_eliciting == b.ack_eliciting && a.in_flight == b.in_flight;
}

class Recorder final : public NewlyAckedVisitor {
 public:
  void on_newly_acked(uint64_t packet_number, const SentPacket& packet) override {
    seen.emplace_back(packet_number, packet);
  }
  Numbers numbers() const {
    Numbers out;
    for (const auto& [pn, packet] : seen) out.push_back(pn);
    return out;
  }
  std::vector<std::pair<uint64_t, SentPacket>> seen;
};

Numbers live_numbers(const SentPackets& sent) {
  Numbers out;
  for (const SentPackets::Entry entry : sent.all()) out.push_back(entry.packet_number);
  return out;
}

enum class Method { kXor, kRangeWalk };

class AckProcessingTest : public ::testing::TestWithParam<Method> {
 protected:
  void send(std::initializer_list<uint64_t> packet_numbers) {
    for (const uint64_t pn : packet_numbers) ASSERT_TRUE(sent_.insert(pn, packet_for(pn)));
  }
  void send_range(uint64_t first, uint64_t end) {
    for (uint64_t pn = first; pn < end; ++pn) ASSERT_TRUE(sent_.insert(pn, packet_for(pn)));
  }
  WireError ack(const std::vector<AckRange>& ranges) {
    AckFrame frame(ranges);
    EXPECT_TRUE(frame.valid());
    recorder_ = Recorder();
    if (GetParam() == Method::kXor) {
      return process_ack(frame.view(), sent_, buffer_, recorder_, summary_);
    }
    return process_ack_range_walk(frame.view(), sent_, recorder_, summary_);
  }

  SentPacketPool pool_;
  SentPackets sent_{pool_};
  AckXorBuffer buffer_;
  Recorder recorder_;
  AckSummary summary_;
};

TEST_P(AckProcessingTest, VisitsNewlyAckedAscendingThenRemovesThem) {
  send_range(0, 20);
  ASSERT_EQ(ack({{15, 18}, {10, 12}, {2, 5}}), WireError::kOk);
  EXPECT_EQ(recorder_.numbers(), (Numbers{2, 3, 4, 5, 10, 11, 12, 15, 16, 17, 18}));
  for (const auto& [pn, packet] : recorder_.seen) EXPECT_TRUE(same_packet(packet, packet_for(pn)));
  EXPECT_EQ(summary_.newly_acked, 11u);
  EXPECT_EQ(summary_.largest_newly_acked, 18u);
  EXPECT_TRUE(summary_.ack_eliciting_newly_acked);
  EXPECT_EQ(live_numbers(sent_), (Numbers{0, 1, 6, 7, 8, 9, 13, 14, 19}));
  EXPECT_EQ(sent_.window_begin(), 0u);
  // The front goes: the window moves up to the next live packet.
  ASSERT_EQ(ack({{0, 1}}), WireError::kOk);
  EXPECT_EQ(sent_.window_begin(), 6u);
  EXPECT_EQ(summary_.newly_acked, 2u);
  EXPECT_EQ(summary_.largest_newly_acked, 1u);
}

TEST_P(AckProcessingTest, DuplicateAndReorderedAcksAcknowledgeNothingTwice) {
  send_range(0, 100);
  ASSERT_EQ(ack({{60, 99}, {10, 20}}), WireError::kOk);
  EXPECT_EQ(summary_.newly_acked, 51u);
  // The same ACK again.
  ASSERT_EQ(ack({{60, 99}, {10, 20}}), WireError::kOk);
  EXPECT_TRUE(recorder_.seen.empty());
  EXPECT_EQ(summary_.newly_acked, 0u);
  EXPECT_FALSE(summary_.ack_eliciting_newly_acked);
  // An older ACK arriving late, overlapping a little that is new.
  ASSERT_EQ(ack({{55, 70}, {15, 22}}), WireError::kOk);
  EXPECT_EQ(recorder_.numbers(), (Numbers{21, 22, 55, 56, 57, 58, 59}));
  EXPECT_EQ(summary_.largest_newly_acked, 59u);
  EXPECT_EQ(sent_.size(), 100u - 51u - 7u);
}

TEST_P(AckProcessingTest, AboveTheLargestSentIsAViolationAndChangesNothing) {
  send_range(0, 20);
  const uint64_t bytes = sent_.bytes_in_flight();
  EXPECT_EQ(ack({{18, 20}}), WireError::kProtocolViolation);
  EXPECT_EQ(ack({{1000, 1000}, {0, 5}}), WireError::kProtocolViolation);
  EXPECT_TRUE(recorder_.seen.empty());
  EXPECT_EQ(summary_.newly_acked, 0u);
  EXPECT_EQ(sent_.size(), 20u);
  EXPECT_EQ(sent_.bytes_in_flight(), bytes);
  EXPECT_EQ(live_numbers(sent_).size(), 20u);
  ASSERT_EQ(ack({{18, 19}}), WireError::kOk);
  EXPECT_EQ(summary_.newly_acked, 2u);
}

TEST_P(AckProcessingTest, SkippedNumberInALowerRangeRejectsTheWholeAck) {
  send({0, 1, 2, 4, 5, 6, 7, 8, 9, 10});  // 3 skipped
  // The first (largest) range is fine; the violation is in the last one, so
  // nothing may have been applied when it is found.
  EXPECT_EQ(ack({{7, 10}, {2, 3}}), WireError::kProtocolViolation);
  EXPECT_TRUE(recorder_.seen.empty());
  EXPECT_EQ(sent_.size(), 10u);
  EXPECT_TRUE(sent_.contains(7));
  EXPECT_EQ(ack({{3, 3}}), WireError::kProtocolViolation);
  ASSERT_EQ(ack({{4, 10}, {0, 2}}), WireError::kOk);
  EXPECT_EQ(summary_.newly_acked, 10u);
  EXPECT_TRUE(sent_.empty());
  // The skipped slot was reclaimed with the rest; the number is still known.
  EXPECT_EQ(ack({{3, 3}}), WireError::kProtocolViolation);
  EXPECT_EQ(ack({{0, 1}}), WireError::kOk);  // a duplicate below the window
  EXPECT_EQ(summary_.newly_acked, 0u);
}

TEST_P(AckProcessingTest, RangesBelowTheWindowAreDuplicates) {
  send_range(0, 300);
  ASSERT_EQ(ack({{0, 199}}), WireError::kOk);
  EXPECT_EQ(sent_.window_begin(), 200u);
  // Wholly below, and reaching into the window from below.
  ASSERT_EQ(ack({{150, 210}, {10, 100}, {0, 5}}), WireError::kOk);
  EXPECT_EQ(recorder_.numbers().size(), 11u);
  EXPECT_EQ(recorder_.numbers().front(), 200u);
  EXPECT_EQ(recorder_.numbers().back(), 210u);
  ASSERT_EQ(ack({{0, 150}}), WireError::kOk);
  EXPECT_EQ(summary_.newly_acked, 0u);
  EXPECT_EQ(sent_.size(), 89u);
}

TEST_P(AckProcessingTest, NothingSentMeansEveryAckIsAViolation) {
  EXPECT_EQ(ack({{0, 0}}), WireError::kProtocolViolation);
  send({0});
  EXPECT_EQ(ack({{0, 1}}), WireError::kProtocolViolation);
  ASSERT_EQ(ack({{0, 0}}), WireError::kOk);
  EXPECT_TRUE(sent_.empty());
  // Empty window: ACKs of what was sent are duplicates.
  EXPECT_EQ(ack({{0, 0}}), WireError::kOk);
  EXPECT_EQ(ack({{1, 1}}), WireError::kProtocolViolation);
}

TEST_P(AckProcessingTest, SummaryReportsWhetherAnythingAckElicitingWasAcked) {
  for (uint64_t pn = 0; pn < 10; ++pn) {
    ASSERT_TRUE(sent_.insert(pn, packet_for(pn, /*ack_eliciting=*/pn % 2 == 0)));
  }
  ASSERT_EQ(ack({{5, 5}, {3, 3}}), WireError::kOk);
  EXPECT_EQ(summary_.newly_acked, 2u);
  EXPECT_FALSE(summary_.ack_eliciting_newly_acked);
  ASSERT_EQ(ack({{4, 7}}), WireError::kOk);
  EXPECT_EQ(recorder_.numbers(), (Numbers{4, 6, 7}));
  EXPECT_TRUE(summary_.ack_eliciting_newly_acked);
}

TEST_P(AckProcessingTest, WindowWrappedAroundTheRing) {
  send_range(0, 64);
  ASSERT_EQ(ack({{0, 49}}), WireError::kOk);
  send_range(64, 110);  // slots 0..45 again: the window wraps, head at 50
  EXPECT_EQ(sent_.capacity(), 64u);
  ASSERT_EQ(ack({{100, 105}, {60, 70}, {52, 52}}), WireError::kOk);
  Numbers expected = {52};
  for (uint64_t pn = 60; pn <= 70; ++pn) expected.push_back(pn);
  for (uint64_t pn = 100; pn <= 105; ++pn) expected.push_back(pn);
  EXPECT_EQ(recorder_.numbers(), expected);
  EXPECT_EQ(sent_.size(), 60u - 18u);
}

INSTANTIATE_TEST_SUITE_P(BothMethods, AckProcessingTest,
                         ::testing::Values(Method::kXor, Method::kRangeWalk),
                         [](const auto& param_info) {
                           return param_info.param == Method::kXor ? "Xor" : "RangeWalk";
                         });

TEST(AckXorBufferTest, GrowsOnlyForALargerWindowAndSwapsByPointer) {
  SentPacketPool pool;
  SentPackets sent(pool);
  AckXorBuffer buffer;
  EXPECT_EQ(buffer.capacity_bits(), 0u);
  buffer.reserve(1000);
  EXPECT_GE(buffer.capacity_bits(), 1000u);
  EXPECT_EQ(buffer.growth_count(), 1u);
  buffer.reserve(10);  // never shrinks
  EXPECT_GE(buffer.capacity_bits(), 1000u);
  EXPECT_EQ(buffer.growth_count(), 1u);

  for (uint64_t pn = 0; pn < 900; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  Recorder recorder;
  AckSummary summary;
  const uint64_t* first = nullptr;
  const uint64_t* second = nullptr;
  for (uint64_t k = 0; k < 6; ++k) {
    // Acknowledge [100k + 10, 100k + 60] (plus duplicates of earlier ones).
    AckFrame frame({{100 * k + 10, 100 * k + 60}, {0, 5}});
    ASSERT_TRUE(frame.valid());
    const uint64_t base = sent.window_begin();
    ASSERT_EQ(process_ack(frame.view(), sent, buffer, recorder, summary), WireError::kOk);
    EXPECT_EQ(summary.newly_acked, k == 0 ? 57u : 51u);
    // previous() now holds the post-ACK known-acknowledged bits of the span
    // the ACK reached, relative to the window before the ACK.
    const uint64_t lo = std::max<uint64_t>(0, base);
    const uint64_t first_word = (lo - base) / 64;
    for (uint64_t pn = 100 * k + 10; pn <= 100 * k + 60; ++pn) {
      const uint64_t bit = pn - base - 64 * first_word;
      EXPECT_EQ((buffer.previous()[bit / 64] >> (bit % 64)) & 1, 1u) << pn;
    }
    const uint64_t unacked = 100 * k + 61 - base - 64 * first_word;
    EXPECT_EQ((buffer.previous()[unacked / 64] >> (unacked % 64)) & 1, 0u);
    // The two bitstrings trade places: previous() alternates between them.
    if (k == 0) first = buffer.previous();
    if (k == 1) second = buffer.previous();
    if (k >= 2) {
      EXPECT_EQ(buffer.previous(), k % 2 == 0 ? first : second);
    }
  }
  EXPECT_NE(first, second);
  EXPECT_EQ(buffer.growth_count(), 1u);

  // A larger window grows it once, then never again.
  for (uint64_t pn = 900; pn < 5000; ++pn) ASSERT_TRUE(sent.insert(pn, packet_for(pn)));
  for (uint64_t k = 0; k < 3; ++k) {
    AckFrame frame({{4990 - k, 4990 - k}, {600 + k, 600 + k}});
    ASSERT_EQ(process_ack(frame.view(), sent, buffer, recorder, summary), WireError::kOk);
    EXPECT_EQ(summary.newly_acked, 2u);
  }
  EXPECT_EQ(buffer.growth_count(), 2u);
  EXPECT_GE(buffer.capacity_bits(), 4990u - 600u);
}

// --- Equivalence -------------------------------------------------------------

constexpr uint64_t kFixedSeed = 0xac4'0f'e9u;

// Two identical rings (one per method) and a model of what was sent.
struct Scenario {
  explicit Scenario(size_t max_slots)
      : pool_xor(64, max_slots),
        pool_walk(64, max_slots),
        xor_sent(pool_xor),
        walk_sent(pool_walk) {}

  void send(uint64_t pn, const SentPacket& packet) {
    const bool ok_xor = xor_sent.insert(pn, packet);
    const bool ok_walk = walk_sent.insert(pn, packet);
    ASSERT_EQ(ok_xor, ok_walk);
    if (!ok_xor) return;
    if (pn > next) {
      skipped[next] = pn;
      // The ring remembers the most recent kMaxSkipRanges skips (documented).
      if (skipped.size() > SentPackets::kMaxSkipRanges) skipped.erase(skipped.begin());
    }
    next = pn + 1;
    live[pn] = packet;
  }
  void lose(uint64_t pn) {
    ASSERT_EQ(xor_sent.remove(pn).has_value(), walk_sent.remove(pn).has_value());
    live.erase(pn);
  }

  SentPacketPool pool_xor, pool_walk;
  SentPackets xor_sent, walk_sent;
  std::map<uint64_t, SentPacket> live;
  std::map<uint64_t, uint64_t> skipped;  // [first, end) ranges, by first
  uint64_t next = 0;
};

// Random descending ranges over [lo, hi], sometimes reaching past it.
std::vector<AckRange> random_ranges(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> acked;
  const uint64_t density = 1 + rng() % 100;  // percent
  const uint64_t run = 1 + rng() % 40;
  for (uint64_t pn = lo; pn <= hi; pn += run) {
    if (rng() % 100 < density) {
      for (uint64_t k = 0; k < run && pn + k <= hi; ++k) acked.push_back(pn + k);
    }
  }
  if (acked.empty()) acked.push_back(lo + rng() % (hi - lo + 1));
  return ranges_of(acked);
}

void run_equivalence(uint64_t seed) {
  std::mt19937_64 rng(seed);
  AckXorBuffer buffer;  // one per "core": shared by every scenario
  size_t acks = 0, violations = 0, newly_total = 0, duplicates = 0;
  for (int scenario_index = 0; scenario_index < 1000; ++scenario_index) {
    Scenario s(1 << 16);
    // The window: a random start, size 1..~20000, with skips and losses.
    const uint64_t start = rng() % 3 == 0 ? 0 : rng() % (uint64_t{1} << 40);
    const uint64_t window = 1 + (rng() % 4 == 0 ? rng() % 20000 : rng() % 300);
    uint64_t pn = start;
    for (uint64_t i = 0; i < window; ++i) {
      if (rng() % 200 == 0) pn += 1 + rng() % 3;  // skip (optimistic-ACK defence)
      SentPacket packet;
      packet.time_sent = pn;
      packet.size = static_cast<uint16_t>(40 + rng() % 1400);
      packet.ack_eliciting = rng() % 5 != 0;
      packet.in_flight = true;
      ASSERT_NO_FATAL_FAILURE(s.send(pn, packet));
      ++pn;
    }
    std::vector<std::vector<AckRange>> history;
    for (int step = 0; step < 12; ++step) {
      // Sometimes: send more, lose something, and ACK again.
      if (rng() % 3 == 0) {
        for (uint64_t k = 0, n = rng() % 100; k < n; ++k) {
          if (rng() % 50 == 0) ++pn;
          ASSERT_NO_FATAL_FAILURE(s.send(pn, SentPacket{pn, 0, 100, true, true}));
          ++pn;
        }
      }
      if (rng() % 3 == 0 && !s.live.empty()) {
        auto it = s.live.begin();
        std::advance(it, rng() % s.live.size());
        ASSERT_NO_FATAL_FAILURE(s.lose(it->first));
      }
      std::vector<AckRange> ranges;
      const uint64_t kind = rng() % 10;
      const uint64_t base = s.xor_sent.window_begin();
      const uint64_t largest = s.next - 1;
      if (kind < 2 && !history.empty()) {
        ranges = history[rng() % history.size()];  // duplicate or reordered
        ++duplicates;
      } else if (kind == 2) {
        // Reaching above the largest sent.
        ranges = random_ranges(rng, base - std::min<uint64_t>(base, rng() % 200),
                               largest + 1 + rng() % 3);
      } else {
        // Within what was sent, often reaching below the window.
        // Once everything is acknowledged the window begins past the largest
        // sent; the ranges still have to stay at or below it.
        const uint64_t lo = std::min(largest, base - std::min<uint64_t>(base, rng() % 500));
        const uint64_t top = rng() % 2 == 0 ? largest : lo + rng() % (largest - lo + 1);
        ranges = random_ranges(rng, lo + rng() % (top - lo + 1), top);
      }
      history.push_back(ranges);
      AckFrame frame(ranges);
      ASSERT_TRUE(frame.valid());

      // Oracle: a violation if any number was never sent, else the live
      // numbers the ranges name, ascending.
      bool expect_violation = false;
      Numbers expected;
      for (const AckRange& range : ranges) {
        if (range.largest >= s.next) expect_violation = true;
        // The last skipped range starting at or below range.largest.
        auto skip = s.skipped.upper_bound(range.largest);
        if (skip != s.skipped.begin() && std::prev(skip)->second > range.smallest) {
          expect_violation = true;
        }
        for (auto it = s.live.lower_bound(range.smallest);
             it != s.live.end() && it->first <= range.largest; ++it) {
          expected.push_back(it->first);
        }
      }
      std::sort(expected.begin(), expected.end());

      Recorder xor_recorder, walk_recorder;
      AckSummary xor_summary, walk_summary;
      const WireError xor_error =
          process_ack(frame.view(), s.xor_sent, buffer, xor_recorder, xor_summary);
      const WireError walk_error =
          process_ack_range_walk(frame.view(), s.walk_sent, walk_recorder, walk_summary);
      ++acks;
      SCOPED_TRACE(::testing::Message() << "scenario " << scenario_index << " step " << step);
      ASSERT_EQ(xor_error, walk_error);
      ASSERT_EQ(xor_error, expect_violation ? WireError::kProtocolViolation : WireError::kOk);
      if (expect_violation) {
        ++violations;
        expected.clear();
      }
      ASSERT_EQ(xor_recorder.numbers(), expected);
      ASSERT_EQ(walk_recorder.numbers(), expected);
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_TRUE(same_packet(xor_recorder.seen[i].second, s.live[expected[i]]));
        ASSERT_TRUE(same_packet(walk_recorder.seen[i].second, s.live[expected[i]]));
      }
      ASSERT_EQ(xor_summary.newly_acked, expected.size());
      ASSERT_EQ(walk_summary.newly_acked, expected.size());
      if (!expected.empty()) {
        ASSERT_EQ(xor_summary.largest_newly_acked, expected.back());
        ASSERT_EQ(walk_summary.largest_newly_acked, expected.back());
      }
      bool eliciting = false;
      for (const uint64_t acked : expected) eliciting |= s.live[acked].ack_eliciting;
      ASSERT_EQ(xor_summary.ack_eliciting_newly_acked, eliciting);
      ASSERT_EQ(walk_summary.ack_eliciting_newly_acked, eliciting);
      newly_total += expected.size();
      for (const uint64_t acked : expected) s.live.erase(acked);

      // Both rings are left in the model's state.
      ASSERT_EQ(s.xor_sent.size(), s.live.size());
      ASSERT_EQ(s.walk_sent.size(), s.live.size());
      ASSERT_EQ(s.xor_sent.bytes_in_flight(), s.walk_sent.bytes_in_flight());
      ASSERT_EQ(s.xor_sent.window_begin(), s.walk_sent.window_begin());
      ASSERT_EQ(s.xor_sent.window_begin(), s.live.empty() ? s.next : s.live.begin()->first);
      ASSERT_EQ(live_numbers(s.xor_sent), live_numbers(s.walk_sent));
    }
  }
  // The runs covered every case.
  EXPECT_GT(violations, acks / 20);
  EXPECT_GT(duplicates, acks / 10);
  EXPECT_GT(newly_total, acks * 10);
}

TEST(AckProcessingEquivalenceTest, XorAndRangeWalkAgreeWithTheOracle) {
  // DPQUIC_TEST_SEED replays a seed a failed run printed.
  std::random_device device;
  const char* replay = std::getenv("DPQUIC_TEST_SEED");
  const uint64_t other_seed = replay != nullptr ? std::strtoull(replay, nullptr, 10)
                                                : (uint64_t{device()} << 32) | device();
  for (const uint64_t seed : {uint64_t{kFixedSeed}, other_seed}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " (fixed seed " << kFixedSeed << ")");
    // Printed up front too: a crash would lose the trace.
    std::fprintf(stderr, "equivalence seed %llu\n", static_cast<unsigned long long>(seed));
    run_equivalence(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace dpquic::recovery
