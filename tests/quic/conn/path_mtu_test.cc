#include "quic/conn/path_mtu.h"

#include <gtest/gtest.h>

#include <vector>

namespace dpquic::conn {
namespace {

constexpr size_t kBase = 1452;
constexpr Duration kPto = 100 * kMillisecond;

// Drives one PathMtu: probes are numbered from 1000 up, like packets.
class PathMtuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mtu_.reset(kBase, PathMtu::kIpv4Overhead);
    mtu_.set_ceiling(16383);
  }

  // Sends the due probe; returns its size (0: none due).
  size_t send_probe() {
    const size_t size = mtu_.probe_due(now_);
    if (size != 0) mtu_.on_probe_sent(now_, ++pn_, size, kPto);
    return size;
  }
  void ack_probe() { mtu_.on_packet_acked(pn_, mtu_.probe_size()); }
  void time_out_probe() {
    now_ = mtu_.next_deadline();
    mtu_.on_timeout(now_);
  }

  PathMtu mtu_;
  Instant now_ = 1 * kSecond;
  uint64_t pn_ = 1000;
};

TEST_F(PathMtuTest, LadderClimbsToTheCeilingOneProbeAtATime) {
  const std::vector<size_t> expected = {1472, 2016, 4064, 8868, 8972, 16383};
  for (const size_t size : expected) {
    EXPECT_EQ(mtu_.state(), PmtuState::kSearching);
    ASSERT_EQ(send_probe(), size);
    // One probe in flight: nothing more is due until it is answered.
    EXPECT_EQ(mtu_.probe_due(now_), 0u);
    EXPECT_EQ(mtu_.probe_size(), size);
    EXPECT_EQ(mtu_.next_deadline(), now_ + kPto);
    ack_probe();
    EXPECT_EQ(mtu_.current(), size);
    EXPECT_FALSE(mtu_.probe_in_flight());
  }
  EXPECT_EQ(mtu_.state(), PmtuState::kSearchComplete);
  EXPECT_EQ(mtu_.probe_due(now_), 0u);
  EXPECT_EQ(mtu_.next_deadline(), kNever);
  EXPECT_EQ(mtu_.probes_sent(), expected.size());
}

TEST_F(PathMtuTest, Ipv6LadderSubtractsFortyEightBytes) {
  mtu_.reset(kBase, PathMtu::kIpv6Overhead);
  EXPECT_EQ(mtu_.ceiling(), 16383u);  // kept across the reset
  // 1500 - 48 = 1452 is not above the base: the first rung is 2044 - 48.
  EXPECT_EQ(send_probe(), 1996u);
  ack_probe();
  EXPECT_EQ(send_probe(), 4044u);
}

TEST_F(PathMtuTest, AckOfAnotherPacketDoesNotRaise) {
  ASSERT_EQ(send_probe(), 1472u);
  mtu_.on_packet_acked(pn_ - 1, 1472);  // a data packet, not the probe
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_TRUE(mtu_.probe_in_flight());
}

TEST_F(PathMtuTest, ThreeFailuresEndTheSearchUntilTheRaiseTimer) {
  ASSERT_EQ(send_probe(), 1472u);
  ack_probe();
  ASSERT_EQ(send_probe(), 2016u);
  ack_probe();
  // 4064 fails three times: twice by timeout, once declared lost.
  ASSERT_EQ(send_probe(), 4064u);
  time_out_probe();
  EXPECT_EQ(mtu_.probes_lost(), 1u);
  ASSERT_EQ(send_probe(), 4064u);
  time_out_probe();
  ASSERT_EQ(send_probe(), 4064u);
  mtu_.on_packet_lost(now_, pn_, 4064);
  EXPECT_EQ(mtu_.probes_lost(), 3u);
  EXPECT_EQ(mtu_.current(), 2016u);
  EXPECT_EQ(mtu_.state(), PmtuState::kSearchComplete);
  EXPECT_EQ(mtu_.probe_due(now_), 0u);
  // PMTU_RAISE_TIMER: larger sizes are tried again 600 s later.
  EXPECT_EQ(mtu_.next_deadline(), now_ + PathMtu::kRaiseTimer);
  time_out_probe();
  EXPECT_EQ(mtu_.state(), PmtuState::kSearching);
  EXPECT_EQ(send_probe(), 4064u);
  ack_probe();
  EXPECT_EQ(mtu_.current(), 4064u);
}

TEST_F(PathMtuTest, FailuresOfADifferentSizeStartCountingAfresh) {
  ASSERT_EQ(send_probe(), 1472u);
  time_out_probe();
  ASSERT_EQ(send_probe(), 1472u);
  time_out_probe();
  // The ceiling drops below 1472: the next candidate is the ceiling itself.
  mtu_.set_ceiling(1460);
  ASSERT_EQ(send_probe(), 1460u);
  time_out_probe();
  EXPECT_EQ(mtu_.state(), PmtuState::kSearching);  // one failure of 1460, not three
}

TEST_F(PathMtuTest, ProbeTimeoutHasAFloor) {
  const size_t size = mtu_.probe_due(now_);
  mtu_.on_probe_sent(now_, 7, size, 1 * kMillisecond);
  EXPECT_EQ(mtu_.next_deadline(), now_ + PathMtu::kMinProbeTimeout);
}

TEST_F(PathMtuTest, CeilingIsTheSmallestLimitAndDisablesAtOrBelowBase) {
  mtu_.set_ceiling(9000 - 28);
  ASSERT_EQ(send_probe(), 1472u);
  ack_probe();
  ASSERT_EQ(send_probe(), 2016u);
  ack_probe();
  ASSERT_EQ(send_probe(), 4064u);
  ack_probe();
  ASSERT_EQ(send_probe(), 8868u);
  ack_probe();
  ASSERT_EQ(send_probe(), 8972u);
  ack_probe();
  EXPECT_EQ(mtu_.state(), PmtuState::kSearchComplete);  // 8972 is the ceiling
  // A lower ceiling (say the lent buffers shrank) lowers the PLPMTU too.
  mtu_.set_ceiling(4000);
  EXPECT_EQ(mtu_.current(), 4000u);
  mtu_.set_ceiling(kBase);
  EXPECT_FALSE(mtu_.enabled());
  EXPECT_EQ(mtu_.state(), PmtuState::kDisabled);
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_EQ(mtu_.probe_due(now_), 0u);
}

TEST_F(PathMtuTest, CeilingBelowAProbeInFlightCancelsIt) {
  ASSERT_EQ(send_probe(), 1472u);
  mtu_.set_ceiling(1460);
  EXPECT_FALSE(mtu_.probe_in_flight());
  ack_probe();  // its late ACK proves nothing any more
  EXPECT_EQ(mtu_.current(), kBase);
}

TEST_F(PathMtuTest, BlackHoleByPtosFallsBackToBaseThenSearchesAgain) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  ASSERT_EQ(mtu_.current(), 8972u);
  mtu_.on_pto(now_);
  EXPECT_EQ(mtu_.current(), 8972u);  // one PTO: a tail loss, perhaps
  mtu_.on_pto(now_);
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_EQ(mtu_.black_holes(), 1u);
  // No probing until a packet at the base gets through.
  EXPECT_EQ(mtu_.probe_due(now_), 0u);
  mtu_.on_packet_acked(2000, 1200);
  EXPECT_EQ(send_probe(), 1472u);
}

TEST_F(PathMtuTest, PtosSeparatedByAnAckAreNoBlackHole) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  mtu_.on_pto(now_);
  mtu_.on_packet_acked(2000, 60);  // something was acknowledged
  mtu_.on_pto(now_);
  EXPECT_EQ(mtu_.current(), 8972u);
  EXPECT_EQ(mtu_.black_holes(), 0u);
}

TEST_F(PathMtuTest, BlackHoleByLossRoundsWithoutLargeAcks) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  // Many large losses in one round are one piece of evidence (a congestion
  // burst looks the same).
  for (uint64_t pn = 1; pn <= 40; ++pn) mtu_.on_packet_lost(now_, pn, 8972);
  EXPECT_EQ(mtu_.current(), 8972u);
  // Small packets acknowledged meanwhile do not clear the suspicion.
  mtu_.on_packet_acked(41, 100);
  now_ += kMillisecond;
  mtu_.on_packet_lost(now_, 42, 8972);
  EXPECT_EQ(mtu_.current(), 8972u);
  now_ += kMillisecond;
  mtu_.on_packet_lost(now_, 43, 8972);
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_EQ(mtu_.black_holes(), 1u);
}

TEST_F(PathMtuTest, LargeAckBetweenLossRoundsIsNoBlackHole) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  for (int round = 0; round < 10; ++round) {
    now_ += kMillisecond;
    mtu_.on_packet_lost(now_, 10 + round * 3, 8972);
    mtu_.on_packet_acked(11 + round * 3, 8972);  // congestion, not a hole
  }
  EXPECT_EQ(mtu_.current(), 8972u);
  EXPECT_EQ(mtu_.black_holes(), 0u);
}

TEST_F(PathMtuTest, LossesOfProbesAndSmallPacketsAreNoEvidence) {
  send_probe();
  ack_probe();  // 1472
  for (uint32_t round = 0; round < PathMtu::kMaxProbes; ++round) {
    now_ += kMillisecond;
    mtu_.on_packet_lost(now_, 100 + round, kBase);  // not larger than the base
    ASSERT_EQ(send_probe(), 2016u);
    mtu_.on_packet_lost(now_, pn_, mtu_.probe_size());  // the probe itself
  }
  EXPECT_EQ(mtu_.state(), PmtuState::kSearchComplete);
  EXPECT_EQ(mtu_.current(), 1472u);
  EXPECT_EQ(mtu_.black_holes(), 0u);
}

TEST_F(PathMtuTest, NewPathStartsAtTheBase) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  ASSERT_EQ(mtu_.current(), 8972u);
  ASSERT_NE(send_probe(), 0u);
  mtu_.reset(kBase, PathMtu::kIpv4Overhead);
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_FALSE(mtu_.probe_in_flight());
  EXPECT_EQ(mtu_.probes_sent(), 0u);
  EXPECT_EQ(send_probe(), 1472u);
}

// After a migration the old path's packets still in flight are acknowledged
// or lost late: neither counts for the new path. Losses of its own large
// packets still do.
TEST_F(PathMtuTest, TheOldPathsPacketsSayNothingAboutTheNewOne) {
  for (int i = 0; i < 5; ++i) {
    send_probe();
    ack_probe();
  }
  ASSERT_EQ(mtu_.current(), 8972u);
  const uint64_t first_on_new_path = pn_ + 100;
  mtu_.reset(kBase, PathMtu::kIpv4Overhead, first_on_new_path);
  mtu_.set_ceiling(16383);
  pn_ = first_on_new_path;
  send_probe();
  ack_probe();  // 1472 on the new path
  ASSERT_EQ(mtu_.current(), 1472u);
  // Rounds of old-path losses, large ones: no black hole.
  for (uint64_t round = 0; round < 5; ++round) {
    now_ += kMillisecond;
    mtu_.on_packet_lost(now_, 10 + round, 8972);
  }
  EXPECT_EQ(mtu_.current(), 1472u);
  EXPECT_EQ(mtu_.black_holes(), 0u);
  // The same from the new path's own packets is one.
  for (uint64_t round = 0; round < 3; ++round) {
    now_ += kMillisecond;
    mtu_.on_packet_lost(now_, pn_ + 10 + round, 1472);
  }
  EXPECT_EQ(mtu_.current(), kBase);
  EXPECT_EQ(mtu_.black_holes(), 1u);
  // After the fallback no probe goes out until a packet of this path is
  // acknowledged at the base: a late ACK of an old-path packet is not one.
  mtu_.on_packet_acked(20, kBase);
  EXPECT_EQ(mtu_.probe_due(now_), 0u);
  mtu_.on_packet_acked(pn_ + 20, kBase);
  EXPECT_NE(mtu_.probe_due(now_), 0u);
}

}  // namespace
}  // namespace dpquic::conn
