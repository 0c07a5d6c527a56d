// BBR's state machine and model (draft-ietf-ccwg-bbr-06) on a fluid path
// model: a FIFO bottleneck of fixed rate with a tail-drop queue, random
// loss, an ACK per packet and RFC 9002's packet-threshold loss detection,
// all in virtual time. The full stack runs BBR in
// tests/quic/harness/bbr_scenarios_test.cc; this isolates the controller.
#include "quic/recovery/bbr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>
#include <utility>
#include <vector>

namespace dpquic::recovery {
namespace {

constexpr uint64_t kMss = 1200;
constexpr Instant kStart = 1000 * kSecond;

struct PathModel {
  double rate = 10e6;  // bytes per second
  Duration one_way = 10 * kMillisecond;
  uint64_t queue_limit = 10 << 20;
  double loss = 0;
  // Step marking, as an L4S or DCTCP-style AQM does: a packet that finds
  // more than this many bytes queued is CE-marked (0: no marking).
  uint64_t ce_threshold = 0;
};

class Driver {
 public:
  Driver(Bbr& cc, PathModel path, uint64_t seed = 1) : cc_(cc), path_(path), rng_(seed) {}

  // Runs for `duration`, the sender always having data.
  void run(Duration duration) {
    const Instant end = now_ + duration;
    while (now_ < end) {
      send_allowed();
      Instant next = end;
      const auto arriving =
          std::find_if(flight_.begin(), flight_.end(), [](const Packet& p) { return !p.lost; });
      if (arriving != flight_.end()) {
        next = std::min(next, arriving->ack_at);
      } else if (!flight_.empty()) {
        next = std::min(next, flight_.back().sent + 4 * path_.one_way);
      }
      if (bytes_in_flight_ + kMss <= cc_.congestion_window() && next_send_ > now_) {
        next = std::min(next, next_send_);
      }
      now_ = std::max(now_, next);
      deliver_acks();
    }
  }

  Instant now() const { return now_; }
  uint64_t delivered() const { return delivered_; }
  uint64_t lost() const { return lost_; }
  uint64_t ce_marked() const { return ce_marked_; }
  // The largest RTT sample since the last call.
  Duration take_max_rtt() { return std::exchange(max_rtt_, 0); }
  const RttEstimator& rtt() const { return rtt_; }

 private:
  struct Packet {
    uint64_t pn;
    Instant sent;
    Instant ack_at;  // kNever for a lost packet
    bool lost;
    bool ce = false;
  };

  void send_allowed() {
    while (bytes_in_flight_ + kMss <= cc_.congestion_window() && next_send_ <= now_) {
      send_one();
      const uint64_t rate = cc_.pacing_rate();
      const Instant base = std::max(next_send_, now_ - std::min(now_, kMillisecond));
      next_send_ = rate == 0 ? now_ : base + kMss * kSecond / rate;
    }
  }

  void send_one() {
    bytes_in_flight_ += kMss;
    cc_.on_packet_sent(now_, next_pn_, kMss, bytes_in_flight_);
    Packet p{next_pn_++, now_, kNever, false};
    const Instant start = std::max(now_, link_free_);
    const double queued = static_cast<double>(start - now_) * path_.rate / kSecond;
    if (queued > static_cast<double>(path_.queue_limit) || coin() < path_.loss) {
      p.lost = true;
    } else {
      p.ce = path_.ce_threshold != 0 && queued > static_cast<double>(path_.ce_threshold);
      link_free_ = start + static_cast<Duration>(kMss * kSecond / path_.rate);
      p.ack_at = link_free_ + 2 * path_.one_way;
    }
    flight_.push_back(p);
  }

  // ACKs arrive in send order; each declares lost the packets 3 or more
  // below it that never arrived (RFC 9002 §6.1.1).
  void deliver_acks() {
    while (!flight_.empty()) {
      auto next_ack =
          std::find_if(flight_.begin(), flight_.end(), [](const Packet& p) { return !p.lost; });
      if (next_ack == flight_.end()) {
        declare_all_lost();
        return;
      }
      if (next_ack->ack_at > now_) return;
      const Packet acked = *next_ack;
      Instant largest_lost_sent = 0;
      bool any_lost = false;
      while (!flight_.empty() && flight_.front().pn + 3 <= acked.pn && flight_.front().lost) {
        lose(flight_.front());
        largest_lost_sent = flight_.front().sent;
        any_lost = true;
        flight_.pop_front();
      }
      if (any_lost) cc_.on_congestion_event(now_, largest_lost_sent);
      if (acked.ce) {  // as LossDetection reports an ACK's new CE count
        ++ce_marked_;
        cc_.on_ce_marks(now_, 1);
        cc_.on_congestion_event(now_, acked.sent);
      }
      rtt_.on_sample(now_ - acked.sent, 0, true, 25 * kMillisecond);
      max_rtt_ = std::max(max_rtt_, now_ - acked.sent);
      const uint64_t before = bytes_in_flight_;
      bytes_in_flight_ -= kMss;
      delivered_ += kMss;
      cc_.on_packet_acked(now_, AckedPacket{acked.pn, acked.sent, kMss, true}, rtt_, before, false);
      flight_.erase(std::find_if(flight_.begin(), flight_.end(),
                                 [&](const Packet& p) { return p.pn == acked.pn; }));
      cc_.on_ack_processed(now_, rtt_, bytes_in_flight_);
    }
  }

  void declare_all_lost() {
    if (flight_.empty() || now_ < flight_.back().sent + 4 * path_.one_way) return;
    const Instant last = flight_.back().sent;
    while (!flight_.empty()) {
      lose(flight_.front());
      flight_.pop_front();
    }
    cc_.on_congestion_event(now_, last);
  }

  void lose(const Packet& p) {
    bytes_in_flight_ -= kMss;
    lost_ += kMss;
    cc_.on_packet_lost(now_, AckedPacket{p.pn, p.sent, kMss, true});
  }

  double coin() { return std::uniform_real_distribution<double>(0, 1)(rng_); }

  Bbr& cc_;
  PathModel path_;
  std::mt19937_64 rng_;
  RttEstimator rtt_;
  std::deque<Packet> flight_;
  Instant now_ = kStart;
  Instant next_send_ = kStart;
  Instant link_free_ = kStart;
  uint64_t next_pn_ = 0;
  uint64_t bytes_in_flight_ = 0;
  uint64_t delivered_ = 0;
  uint64_t lost_ = 0;
  uint64_t ce_marked_ = 0;
  Duration max_rtt_ = 0;
};

TEST(BbrTest, StartsInStartupWithTheInitialWindow) {
  Bbr bbr(kMss);
  EXPECT_EQ(bbr.state(), Bbr::State::kStartup);
  EXPECT_TRUE(bbr.in_slow_start());
  EXPECT_EQ(bbr.congestion_window(), initial_window(kMss));
  EXPECT_EQ(bbr.pacing_gain(), Bbr::kStartupPacingGain);
  EXPECT_EQ(bbr.algorithm(), CongestionControlAlgorithm::kBbr);
  // InitPacingRate(): 2.77 * InitialCwnd / 1 ms before any RTT sample.
  EXPECT_NEAR(static_cast<double>(bbr.pacing_rate()),
              Bbr::kStartupPacingGain * static_cast<double>(initial_window(kMss)) * 1000, 10);
}

TEST(BbrTest, StartupFindsTheBottleneckThenDrainsIntoProbeBw) {
  Bbr bbr(kMss);
  PathModel path;  // 10 MB/s, 20 ms RTT, a deep queue
  Driver driver(bbr, path);
  driver.run(2 * kSecond);
  EXPECT_TRUE(bbr.full_bw_reached());
  EXPECT_GE(static_cast<int>(bbr.state()), static_cast<int>(Bbr::State::kProbeBwDown));
  EXPECT_NEAR(bbr.max_bw(), path.rate, path.rate * 0.1);
  EXPECT_NEAR(static_cast<double>(bbr.min_rtt()), 20.2 * kMillisecond, 0.5 * kMillisecond);
  // The window is about cwnd_gain * BDP (200 KB), plus aggregation.
  EXPECT_LT(bbr.congestion_window(), 3 * 200'000u);
  EXPECT_GT(bbr.congestion_window(), 200'000u);
  // The queue Startup built was drained: the RTT is back near the base.
  EXPECT_LT(driver.rtt().latest_rtt(), 30 * kMillisecond);
}

TEST(BbrTest, SteadyStateUsesTheLinkWithASmallQueue) {
  Bbr bbr(kMss);
  PathModel path;
  Driver driver(bbr, path);
  driver.run(2 * kSecond);
  const uint64_t before = driver.delivered();
  driver.run(4 * kSecond);
  const double rate = static_cast<double>(driver.delivered() - before) / 4;
  EXPECT_GT(rate, 0.9 * path.rate);
  EXPECT_EQ(driver.lost(), 0u);
  EXPECT_LT(driver.rtt().smoothed_rtt(), 30 * kMillisecond);
}

TEST(BbrTest, ProbeRttComesEveryFiveSecondsAndEndsAfterTwoHundredMilliseconds) {
  Bbr bbr(kMss);
  PathModel path;
  Driver driver(bbr, path);
  std::vector<Instant> entries;
  Duration longest = 0;
  Instant entered = 0;
  bool in_probe_rtt = false;
  for (int i = 0; i < 1200; ++i) {  // 12 s in 10 ms steps
    driver.run(10 * kMillisecond);
    const bool now_in = bbr.state() == Bbr::State::kProbeRtt;
    if (now_in && !in_probe_rtt) {
      entries.push_back(driver.now());
      entered = driver.now();
    }
    if (!now_in && in_probe_rtt) longest = std::max(longest, driver.now() - entered);
    in_probe_rtt = now_in;
  }
  // The min RTT sample is refreshed only by ProbeRTT on this steady path,
  // so ProbeRTT comes once every ProbeRTTInterval (5 s) plus its own length.
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_NEAR(static_cast<double>(entries[1] - entries[0]), 5.25 * kSecond, 0.15 * kSecond);
  EXPECT_EQ(bbr.probe_rtt_rounds_entered(), 2u);
  // ProbeRTTDuration (200 ms) plus the round to drain and the round it waits.
  EXPECT_GE(longest, Bbr::kProbeRttDuration);
  EXPECT_LT(longest, Bbr::kProbeRttDuration + 100 * kMillisecond);
}

TEST(BbrTest, RandomLossOfOnePercentKeepsTheRate) {
  Bbr bbr(kMss);
  PathModel path;
  path.loss = 0.01;
  Driver driver(bbr, path, 3);
  driver.run(3 * kSecond);
  const uint64_t before = driver.delivered();
  driver.run(10 * kSecond);
  const double rate = static_cast<double>(driver.delivered() - before) / 10;
  // Each round with a loss lowers bw_shortterm to the round's delivery
  // rate (§5.5.10.3), which the 1% pacing margin keeps just below it, until
  // the next probe restores it: about 84% of the link on average.
  EXPECT_GT(rate, 0.8 * path.rate);
  EXPECT_GT(driver.lost(), 0u);
}

// ECN (bbr_ecn.h): a deep queue whose AQM marks CE beyond 2 ms of queue.
PathModel marking_path() {
  PathModel path;  // 10 MB/s, 20 ms RTT, 10 MB of queue
  path.ce_threshold = 20'000;
  return path;
}

// Runs `driver` in 1 ms steps until `bbr` leaves Startup (at most 1 s):
// when, and the largest RTT until then.
std::pair<Instant, Duration> run_through_startup(Bbr& bbr, Driver& driver) {
  driver.take_max_rtt();
  for (int i = 0; i < 1000 && !bbr.full_bw_reached(); ++i) driver.run(kMillisecond);
  return {driver.now(), driver.take_max_rtt()};
}

TEST(BbrTest, CeMarksEndStartupBeforeTheQueueGrows) {
  Bbr marked(kMss), unmarked(kMss);
  Driver with_ecn(marked, marking_path());
  Driver without_ecn(unmarked, PathModel{});
  const auto [marked_exit, marked_peak] = run_through_startup(marked, with_ecn);
  const auto [unmarked_exit, unmarked_peak] = run_through_startup(unmarked, without_ecn);
  std::printf(
      "Startup ends after %.0f ms, largest RTT %.1f ms with CE marks; %.0f ms and "
      "%.1f ms without\n",
      static_cast<double>(marked_exit - kStart) / kMillisecond,
      static_cast<double>(marked_peak) / kMillisecond,
      static_cast<double>(unmarked_exit - kStart) / kMillisecond,
      static_cast<double>(unmarked_peak) / kMillisecond);
  ASSERT_TRUE(marked.full_bw_reached());
  EXPECT_GT(with_ecn.ce_marked(), 0u);
  EXPECT_EQ(with_ecn.lost(), 0u);
  EXPECT_LT(marked.ce_rounds().alpha(), 1.0);
  EXPECT_LT(marked_exit, unmarked_exit);
  EXPECT_LT(marked_peak, unmarked_peak);
  with_ecn.run(kSecond);
  EXPECT_GE(static_cast<int>(marked.state()), static_cast<int>(Bbr::State::kProbeBwDown));
}

TEST(BbrTest, CeMarksBoundInflightBetweenProbes) {
  Bbr marked(kMss), unmarked(kMss);
  Driver with_ecn(marked, marking_path());
  Driver without_ecn(unmarked, PathModel{});
  with_ecn.run(2 * kSecond);
  without_ecn.run(2 * kSecond);
  with_ecn.take_max_rtt();
  without_ecn.take_max_rtt();
  const uint64_t before = with_ecn.delivered();
  bool bounded = false;
  for (int i = 0; i < 100; ++i) {  // 10 s
    with_ecn.run(100 * kMillisecond);
    without_ecn.run(100 * kMillisecond);
    bounded = bounded || marked.inflight_shortterm() != UINT64_MAX;
  }
  const double rate = static_cast<double>(with_ecn.delivered() - before) / 10;
  const Duration peak_marked = with_ecn.take_max_rtt(), peak = without_ecn.take_max_rtt();
  std::printf(
      "ProbeBW over 10 s: %.1f%% of the link, largest RTT %.1f ms with CE marks (%lu), "
      "%.1f ms without; alpha %.3f\n",
      100 * rate / marking_path().rate, static_cast<double>(peak_marked) / kMillisecond,
      with_ecn.ce_marked(), static_cast<double>(peak) / kMillisecond, marked.ce_rounds().alpha());
  EXPECT_TRUE(bounded);
  EXPECT_EQ(with_ecn.lost(), 0u);
  EXPECT_GT(rate, 0.85 * marking_path().rate);
  EXPECT_LT(peak_marked, peak);
}

TEST(BbrTest, ShallowBufferLossEndsStartupAndBoundsInflight) {
  Bbr bbr(kMss);
  PathModel path;
  path.queue_limit = 20 * kMss;  // a tenth of the BDP
  Driver driver(bbr, path);
  driver.run(3 * kSecond);
  EXPECT_TRUE(bbr.full_bw_reached());
  EXPECT_NE(bbr.state(), Bbr::State::kStartup);
  EXPECT_GT(driver.lost(), 0u);
  // Loss set inflight_longterm near what the path holds: BDP + queue.
  EXPECT_LT(bbr.inflight_longterm(), 2 * (200'000u + 20 * kMss));
  const uint64_t before = driver.delivered(), lost_before = driver.lost();
  driver.run(5 * kSecond);
  const double rate = static_cast<double>(driver.delivered() - before) / 5;
  EXPECT_GT(rate, 0.85 * path.rate);
  // Steady state loses well under BBR's 2% threshold.
  EXPECT_LT(static_cast<double>(driver.lost() - lost_before),
            0.02 * static_cast<double>(driver.delivered() - before));
}

TEST(BbrTest, SpuriousLossUndoRestoresTheWindow) {
  Bbr bbr(kMss);
  PathModel path;
  Driver driver(bbr, path);
  driver.run(3 * kSecond);
  const uint64_t cwnd = bbr.congestion_window();
  bbr.on_packet_lost(driver.now(), AckedPacket{1'000'000, driver.now(), kMss, true});
  bbr.on_congestion_event(driver.now(), driver.now());
  EXPECT_TRUE(bbr.in_recovery(driver.now()));
  EXPECT_TRUE(bbr.undo_congestion_event());
  EXPECT_GE(bbr.congestion_window(), cwnd);
}

TEST(BbrTest, PersistentCongestionCollapsesTheWindow) {
  Bbr bbr(kMss);
  PathModel path;
  Driver driver(bbr, path);
  driver.run(kSecond);
  bbr.on_ack_processed(driver.now(), driver.rtt(), 0);
  bbr.on_persistent_congestion(driver.now());
  EXPECT_LE(bbr.congestion_window(), Bbr::kMinPipeCwndSegments * kMss);
}

TEST(BbrTest, ResetForgetsTheModel) {
  Bbr bbr(kMss);
  PathModel path;
  Driver driver(bbr, path);
  driver.run(2 * kSecond);
  ASSERT_GT(bbr.max_bw(), 0);
  bbr.reset_for_new_path(driver.now());
  EXPECT_EQ(bbr.state(), Bbr::State::kStartup);
  EXPECT_EQ(bbr.max_bw(), 0);
  EXPECT_EQ(bbr.min_rtt(), kNever);
  EXPECT_EQ(bbr.congestion_window(), initial_window(kMss));
  // Old-path packets acknowledged now do not feed the new model.
  bbr.on_packet_acked(driver.now() + kMillisecond,
                      AckedPacket{0, driver.now() - kMillisecond, kMss, true}, driver.rtt(), 0,
                      false);
  bbr.on_ack_processed(driver.now() + kMillisecond, driver.rtt(), 0);
  EXPECT_EQ(bbr.max_bw(), 0);
}

}  // namespace
}  // namespace dpquic::recovery
