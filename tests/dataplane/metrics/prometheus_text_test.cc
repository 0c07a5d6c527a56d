#include "dataplane/metrics/prometheus_text.h"

#include <gtest/gtest.h>

#include <vector>

namespace dpquic::dataplane {
namespace {

std::vector<ShardMetrics> known_shards() {
  std::vector<ShardMetrics> shards(2);
  CounterSnapshot& c = shards[0].counters;
  c.connections = 3;
  c.handshakes = 10;
  c.datagrams_in = 100;
  c.datagrams_out = 120;
  c.bytes_in = 50000;
  c.bytes_out = 900000;
  c.drops = 1;
  c.retries = 2;
  c.steered = 4;
  c.version_negotiations = 1;
  c.stateless_resets = 5;
  HandshakeHistogram histogram;
  histogram.record(400 * kMicrosecond);
  histogram.record(500 * kMicrosecond);  // on the first bound: le is inclusive
  histogram.record(1500 * kMicrosecond);
  histogram.record(7 * kSecond);  // above the last bound: +Inf only
  shards[0].handshake_time.add(histogram);
  shards[1].counters.handshakes = 1;
  shards[1].counters.refused = 7;
  return shards;
}

constexpr char kExpected[] = R"(# HELP dpquic_connections Connections held now.
# TYPE dpquic_connections gauge
dpquic_connections{shard="0"} 3
dpquic_connections{shard="1"} 0
# HELP dpquic_handshakes_total Handshakes completed.
# TYPE dpquic_handshakes_total counter
dpquic_handshakes_total{shard="0"} 10
dpquic_handshakes_total{shard="1"} 1
# HELP dpquic_datagrams_in_total UDP datagrams received.
# TYPE dpquic_datagrams_in_total counter
dpquic_datagrams_in_total{shard="0"} 100
dpquic_datagrams_in_total{shard="1"} 0
# HELP dpquic_datagrams_out_total UDP datagrams sent.
# TYPE dpquic_datagrams_out_total counter
dpquic_datagrams_out_total{shard="0"} 120
dpquic_datagrams_out_total{shard="1"} 0
# HELP dpquic_bytes_in_total UDP payload bytes received.
# TYPE dpquic_bytes_in_total counter
dpquic_bytes_in_total{shard="0"} 50000
dpquic_bytes_in_total{shard="1"} 0
# HELP dpquic_bytes_out_total UDP payload bytes sent.
# TYPE dpquic_bytes_out_total counter
dpquic_bytes_out_total{shard="0"} 900000
dpquic_bytes_out_total{shard="1"} 0
# HELP dpquic_drops_total Datagrams dropped: unroutable or malformed, steering ring full, send failures, truncated receives.
# TYPE dpquic_drops_total counter
dpquic_drops_total{shard="0"} 1
dpquic_drops_total{shard="1"} 0
# HELP dpquic_retries_total Retry packets sent.
# TYPE dpquic_retries_total counter
dpquic_retries_total{shard="0"} 2
dpquic_retries_total{shard="1"} 0
# HELP dpquic_refused_total Initials answered with CONNECTION_REFUSED.
# TYPE dpquic_refused_total counter
dpquic_refused_total{shard="0"} 0
dpquic_refused_total{shard="1"} 7
# HELP dpquic_steered_total Datagrams handed to the shard that owns their connection.
# TYPE dpquic_steered_total counter
dpquic_steered_total{shard="0"} 4
dpquic_steered_total{shard="1"} 0
# HELP dpquic_gso_fallbacks_total Sends that fell back from UDP GSO to one datagram per message.
# TYPE dpquic_gso_fallbacks_total counter
dpquic_gso_fallbacks_total{shard="0"} 0
dpquic_gso_fallbacks_total{shard="1"} 0
# HELP dpquic_version_negotiations_total Version Negotiation packets sent.
# TYPE dpquic_version_negotiations_total counter
dpquic_version_negotiations_total{shard="0"} 1
dpquic_version_negotiations_total{shard="1"} 0
# HELP dpquic_half_open_dropped_total Handshakes from unvalidated addresses dropped under pressure.
# TYPE dpquic_half_open_dropped_total counter
dpquic_half_open_dropped_total{shard="0"} 0
dpquic_half_open_dropped_total{shard="1"} 0
# HELP dpquic_stateless_resets_total Stateless resets sent.
# TYPE dpquic_stateless_resets_total counter
dpquic_stateless_resets_total{shard="0"} 5
dpquic_stateless_resets_total{shard="1"} 0
# HELP dpquic_handshake_duration_seconds Time from a connection's first Initial accepted to handshake completion.
# TYPE dpquic_handshake_duration_seconds histogram
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.0005"} 2
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.001"} 2
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.002"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.005"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.01"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.02"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.05"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.1"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.2"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="0.5"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="1"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="2"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="5"} 3
dpquic_handshake_duration_seconds_bucket{shard="0",le="+Inf"} 4
dpquic_handshake_duration_seconds_sum{shard="0"} 7.0024
dpquic_handshake_duration_seconds_count{shard="0"} 4
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.0005"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.001"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.002"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.005"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.01"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.02"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.05"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.1"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.2"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="0.5"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="1"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="2"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="5"} 0
dpquic_handshake_duration_seconds_bucket{shard="1",le="+Inf"} 0
dpquic_handshake_duration_seconds_sum{shard="1"} 0
dpquic_handshake_duration_seconds_count{shard="1"} 0
)";

TEST(PrometheusText, KnownSnapshotByteExact) {
  const std::vector<ShardMetrics> shards = known_shards();
  EXPECT_EQ(format_prometheus_text(shards), kExpected);
}

TEST(PrometheusText, DpdkLoopTimeIsPerShardSecondsAfterTheCounters) {
  std::vector<ShardMetrics> shards = known_shards();
  shards[0].loop_time = LoopTimeSnapshot{.poll_ns = 12 * kSecond + 500 * kMillisecond,
                                         .busy_ns = 7 * kSecond + 250 * kMicrosecond};
  shards[1].loop_time = LoopTimeSnapshot{.poll_ns = 3 * kSecond, .busy_ns = 0};
  const std::string text = format_prometheus_text(shards);
  constexpr char kLoopTime[] =
      R"(# HELP dpquic_dpdk_poll_seconds_total Time the DPDK shard's worker lcore spent in its poll loop (TSC).
# TYPE dpquic_dpdk_poll_seconds_total counter
dpquic_dpdk_poll_seconds_total{shard="0"} 12.5
dpquic_dpdk_poll_seconds_total{shard="1"} 3
# HELP dpquic_dpdk_busy_seconds_total Time in poll loop iterations that did work: received or transmitted packets, took steered ones, ran due timers or connection events (TSC).
# TYPE dpquic_dpdk_busy_seconds_total counter
dpquic_dpdk_busy_seconds_total{shard="0"} 7.00025
dpquic_dpdk_busy_seconds_total{shard="1"} 0
)";
  // Between the counters and the histogram.
  EXPECT_NE(text.find(std::string("dpquic_stateless_resets_total{shard=\"1\"} 0\n") + kLoopTime +
                      "# HELP dpquic_handshake_duration_seconds "),
            std::string::npos)
      << text;
  // Everything else is as without loop time.
  std::string without = text;
  without.erase(without.find(kLoopTime), sizeof(kLoopTime) - 1);
  EXPECT_EQ(without, kExpected);
}

TEST(PrometheusText, KernelUdpShardsHaveNoLoopTimeFamilies) {
  // known_shards() has no loop_time: the byte-exact text above has no
  // dpquic_dpdk_ family. A shard without it among DPDK ones has no sample.
  std::vector<ShardMetrics> shards = known_shards();
  EXPECT_EQ(format_prometheus_text(shards).find("dpquic_dpdk_"), std::string::npos);
  shards[1].loop_time = LoopTimeSnapshot{.poll_ns = kSecond, .busy_ns = kMillisecond};
  const std::string text = format_prometheus_text(shards);
  EXPECT_NE(text.find("dpquic_dpdk_busy_seconds_total{shard=\"1\"} 0.001\n"), std::string::npos);
  EXPECT_EQ(text.find("dpquic_dpdk_busy_seconds_total{shard=\"0\"}"), std::string::npos);
}

TEST(PrometheusText, NoShardsLeavesOnlyHelpAndType) {
  const std::string text = format_prometheus_text({});
  EXPECT_EQ(text.find("{"), std::string::npos);
  EXPECT_NE(text.find("# TYPE dpquic_handshake_duration_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(PrometheusText, SecondsAreExactDecimals) {
  EXPECT_EQ(format_seconds(0), "0");
  EXPECT_EQ(format_seconds(1), "0.000000001");
  EXPECT_EQ(format_seconds(500 * kMicrosecond), "0.0005");
  EXPECT_EQ(format_seconds(20 * kMillisecond), "0.02");
  EXPECT_EQ(format_seconds(2 * kSecond), "2");
  EXPECT_EQ(format_seconds(12 * kSecond + 345678901), "12.345678901");
  EXPECT_EQ(format_seconds(UINT64_MAX), "18446744073.709551615");
}

}  // namespace
}  // namespace dpquic::dataplane
