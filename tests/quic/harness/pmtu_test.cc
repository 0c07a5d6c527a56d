// Scenario: Datagram Packetization Layer PMTU Discovery (RFC 8899, RFC 9000
// §14.3) over links that drop datagrams above their MTU: the search finds
// the link's size, probe losses cost no congestion reaction, and a path
// whose MTU shrinks mid-transfer (a black hole) falls back to the base.
// The nodes lend one contiguous GSO buffer, as the kernel-UDP shard does, so
// the trains the connection builds below the lent stride are exercised too.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "tests/quic/harness/download_fixture.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kDownload = 20 << 20;
constexpr size_t kBase = 1452;

PairOptions pmtu_options(size_t link_mtu) {
  PairOptions options;
  LinkConfig link;
  link.one_way_delay = 10 * kMillisecond;
  link.mtu = link_mtu;
  options.client_to_server = link;
  options.server_to_client = link;
  for (endpoint::EndpointConfig* config : {&options.server, &options.client}) {
    config->connection.transport.max_udp_payload_size = 16383;
    config->connection.max_datagram_size = 16383;
    // NewReno: its slow start threshold moves only on a congestion event.
    config->connection.congestion_control = recovery::CongestionControlAlgorithm::kNewReno;
  }
  options.datagram_capacity = 16383;
  options.burst_mode = transmit::BurstMode::kGsoTrain;
  return options;
}

// Server-to-client datagrams that fit the link (the observer also sees the
// probes the link then drops), and those larger than the base.
struct SizeCensus {
  uint64_t datagrams = 0;
  uint64_t large = 0;
  size_t largest = 0;
};

class PmtuTest : public DownloadFixture {
 protected:
  // A kDownload-byte download over links (both ways) that drop datagrams
  // above `link_mtu`, counted in census_ from the first datagram.
  void start(size_t link_mtu) {
    start_download(pmtu_options(link_mtu), kDownload);
    pair_->simulator->set_observer(
        [this, link_mtu](bool client_to_server, Instant, const Datagram& d) {
          if (client_to_server || d.bytes.size() > link_mtu) return;
          ++census_.datagrams;
          if (d.bytes.size() > kBase) ++census_.large;
          census_.largest = std::max(census_.largest, d.bytes.size());
        });
  }

  SizeCensus census_;
};

TEST_F(PmtuTest, JumboLinkConvergesToItsMtuAndCarriesTheDownload) {
  start(9000 - 28);
  ASSERT_NO_FATAL_FAILURE(finish_download());

  // The ladder 1472, 2016, 4064, 8868, 8972 all fit; 16383 fails three
  // times and ends the server's search. (The client, sending only ACKs,
  // never grows its congestion window to the 16383 bytes a probe of that
  // size needs: probes are congestion controlled.)
  for (const conn::Connection* c : {server(), client()}) {
    EXPECT_EQ(c->path_mtu().current(), 8972u);
    EXPECT_EQ(c->path_mtu().black_holes(), 0u);
  }
  EXPECT_EQ(server()->path_mtu().state(), conn::PmtuState::kSearchComplete);
  EXPECT_EQ(server()->path_mtu().probes_lost(), conn::PathMtu::kMaxProbes);
  EXPECT_EQ(census_.largest, 9000u - 28u);
  // Most of the download went in large datagrams (the small ones: ACKs and
  // the short last datagram of a train).
  EXPECT_GT(census_.large * 5, census_.datagrams * 4)
      << census_.large << " of " << census_.datagrams << " datagrams above the base";
  EXPECT_LT(census_.datagrams, kDownload / 4000);
  // The probes that did not fit are the only drops.
  EXPECT_EQ(pair_->simulator->server_to_client_stats().dropped_mtu, conn::PathMtu::kMaxProbes);
  // Their losses caused no congestion reaction.
  EXPECT_EQ(server()->congestion().slow_start_threshold(), UINT64_MAX);
}

TEST_F(PmtuTest, EthernetLinkStopsAtItsMtuWithoutCongestionReaction) {
  // 1500-byte IPv4 link: the first rung (1472) fits, 2016 does not.
  start(1500 - 28);
  ASSERT_NO_FATAL_FAILURE(finish_download());

  EXPECT_EQ(server()->path_mtu().current(), 1472u);
  EXPECT_EQ(server()->path_mtu().state(), conn::PmtuState::kSearchComplete);
  EXPECT_EQ(server()->path_mtu().probes_lost(), conn::PathMtu::kMaxProbes);
  EXPECT_EQ(census_.largest, 1472u);
  // Three lost probes, and not one congestion event.
  EXPECT_EQ(pair_->simulator->server_to_client_stats().dropped_mtu, conn::PathMtu::kMaxProbes);
  EXPECT_EQ(server()->congestion().slow_start_threshold(), UINT64_MAX);
}

TEST_F(PmtuTest, Ipv6EthernetLinkStaysAtTheBase) {
  // 1500-byte IPv6 link: UDP payloads of 1452 at most, the base itself.
  start(1500 - 48);
  ASSERT_NO_FATAL_FAILURE(finish_download());

  EXPECT_EQ(server()->path_mtu().current(), kBase);
  EXPECT_EQ(server()->path_mtu().probes_lost(), conn::PathMtu::kMaxProbes);
  EXPECT_EQ(server()->congestion().slow_start_threshold(), UINT64_MAX);
  EXPECT_EQ(server()->stats().packets_lost, pair_->simulator->server_to_client_stats().dropped_mtu);
}

TEST_F(PmtuTest, MtuDropMidTransferFallsBackToBaseAndCompletes) {
  start(9000 - 28);
  ASSERT_TRUE(pair_->run_until(
      [&] {
        return server() != nullptr && server()->path_mtu().current() == 8972 &&
               client_app_->bytes_received() > kDownload / 4;
      },
      30 * kSecond));
  ASSERT_LT(client_app_->bytes_received(), kDownload);
  // The route changes: 1500-byte links from now on, both ways.
  LinkConfig narrow = pair_->options.server_to_client;
  narrow.mtu = 1500 - 28;
  pair_->simulator->reconfigure_link(false, narrow);
  pair_->simulator->reconfigure_link(true, narrow);

  ASSERT_NO_FATAL_FAILURE(finish_download());
  EXPECT_GE(server()->path_mtu().black_holes(), 1u);
  // After the fallback the search ran again and found the new size.
  EXPECT_EQ(server()->path_mtu().current(), 1472u);
  EXPECT_TRUE(server()->is_established());
}

}  // namespace
}  // namespace dpquic::harness
