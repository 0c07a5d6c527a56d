// make_congestion_controller builds the configured algorithm, ready to use
// through the CongestionController interface.
#include "quic/recovery/congestion_factory.h"

#include <gtest/gtest.h>

#include "quic/recovery/bbr.h"
#include "quic/recovery/cubic.h"
#include "quic/recovery/new_reno.h"

namespace dpquic::recovery {
namespace {

TEST(CongestionFactoryTest, BuildsEachAlgorithm) {
  for (uint64_t mds : {1200u, 1252u, 1472u, 9000u}) {
    auto reno = make_congestion_controller(CongestionControlAlgorithm::kNewReno, mds);
    ASSERT_NE(reno, nullptr);
    EXPECT_EQ(reno->algorithm(), CongestionControlAlgorithm::kNewReno);
    EXPECT_NE(dynamic_cast<NewReno*>(reno.get()), nullptr);
    EXPECT_EQ(reno->congestion_window(), initial_window(mds));

    auto cubic = make_congestion_controller(CongestionControlAlgorithm::kCubic, mds);
    ASSERT_NE(cubic, nullptr);
    EXPECT_EQ(cubic->algorithm(), CongestionControlAlgorithm::kCubic);
    auto* concrete = dynamic_cast<Cubic*>(cubic.get());
    ASSERT_NE(concrete, nullptr);
    EXPECT_TRUE(concrete->hystart_active());
    EXPECT_EQ(cubic->congestion_window(), initial_window(mds));
  }
}

TEST(CongestionFactoryTest, InterfaceDrivesTheController) {
  for (auto algorithm :
       {CongestionControlAlgorithm::kNewReno, CongestionControlAlgorithm::kCubic}) {
    auto cc = make_congestion_controller(algorithm, 1200);
    const RttEstimator rtt;
    cc->on_packet_sent(0, 0, 1200, 1200);
    cc->on_packet_acked(100 * kMillisecond, AckedPacket{0, 0, 1200}, rtt, 1200, false);
    cc->on_ack_processed(100 * kMillisecond, rtt, 0);
    EXPECT_EQ(cc->congestion_window(), 13200u);
    cc->on_congestion_event(200 * kMillisecond, 150 * kMillisecond);
    EXPECT_TRUE(cc->in_recovery(200 * kMillisecond));
    EXPECT_FALSE(cc->in_slow_start());
    // NewReno halves, CUBIC keeps 70%.
    EXPECT_EQ(cc->congestion_window(),
              algorithm == CongestionControlAlgorithm::kNewReno ? 6600u : 9240u);
    EXPECT_EQ(cc->slow_start_threshold(), cc->congestion_window());
    cc->on_persistent_congestion(300 * kMillisecond);
    EXPECT_EQ(cc->congestion_window(), 2400u);
  }
}

TEST(CongestionFactoryTest, BuildsBbr) {
  auto bbr = make_congestion_controller(CongestionControlAlgorithm::kBbr, 1200, 42);
  ASSERT_NE(bbr, nullptr);
  EXPECT_EQ(bbr->algorithm(), CongestionControlAlgorithm::kBbr);
  EXPECT_NE(dynamic_cast<Bbr*>(bbr.get()), nullptr);
  EXPECT_EQ(bbr->congestion_window(), initial_window(1200));
  EXPECT_GT(bbr->pacing_rate(), 0u);  // BBR sets its own pacing rate
  auto cubic = make_congestion_controller(CongestionControlAlgorithm::kCubic, 1200);
  EXPECT_EQ(cubic->pacing_rate(), 0u);  // the pacer derives CUBIC's
}

TEST(CongestionFactoryTest, ParsesEveryNameAndOnlyThose) {
  EXPECT_EQ(parse_congestion_control("cubic"), CongestionControlAlgorithm::kCubic);
  EXPECT_EQ(parse_congestion_control("newreno"), CongestionControlAlgorithm::kNewReno);
  EXPECT_EQ(parse_congestion_control("bbr"), CongestionControlAlgorithm::kBbr);
  for (const char* bad : {"", "BBR", "bbr2", "reno", "cubic "}) {
    EXPECT_FALSE(parse_congestion_control(bad).has_value()) << bad;
  }
  for (auto algorithm : {CongestionControlAlgorithm::kNewReno, CongestionControlAlgorithm::kCubic,
                         CongestionControlAlgorithm::kBbr}) {
    EXPECT_EQ(parse_congestion_control(congestion_control_name(algorithm)), algorithm);
  }
}

}  // namespace
}  // namespace dpquic::recovery
