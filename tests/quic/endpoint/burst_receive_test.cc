// Endpoint::handle_datagrams: a perf download whose every burst reaches the
// client as one batch (a GRO batch, an RX burst), so runs of 1-RTT packets
// are opened in one AEAD burst. The transfer is byte-exact, nothing is
// allocated once warm, and key updates, forged, duplicated and foreign
// datagrams inside a run are handled as one at a time would handle them.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "crypto/tokens.h"
#include "quic/conn/receive_burst.h"
#include "quic/wire/connection_id.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/lent_buffers.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr size_t kSegment = 1472;
constexpr size_t kBurst = 32;
// Datagrams a test may add to a burst (copies, forgeries).
constexpr size_t kExtra = 4;

using Mutation = std::function<void(std::vector<conn::InboundDatagram>&)>;

// The server's bursts go to the client's handle_datagrams whole; the client's
// ACKs go back one at a time. Virtual time advances 20 ms per round.
class BurstDownload {
 public:
  explicit BurstDownload(PairOptions options = PairOptions()) : pair_(widen(options)) {
    inbound_.reserve(kBurst + kExtra);
    server_app_.emplace(*pair_.server, 64 * 1024);
    client_app_.emplace(*pair_.client);
    handle_ = pair_.connect();
    now_ = pair_.now();
  }

  // Downloads `bytes`, with `mutation` applied to every burst before the
  // client takes it. False if it does not finish within 2000 rounds.
  bool download(uint64_t bytes, const Mutation& mutation = nullptr) {
    request(bytes);
    return finish(mutation);
  }
  // Runs until every download requested so far has finished (false if that
  // takes more than 2000 rounds).
  bool finish(const Mutation& mutation = nullptr) {
    for (int round = 0; round < 2000 && client_app_->completed() < requested_; ++round) {
      step(mutation);
    }
    return client_app_->completed() == requested_;
  }

  // Queues a download (the perf client's bookkeeping for it may allocate).
  void request(uint64_t bytes) {
    client_app_->request(handle_, bytes);
    ++requested_;
  }
  // One round: timers, the server's bursts to the client, the client's ACKs.
  void step(const Mutation& mutation) {
    now_ += 20 * kMillisecond;
    pair_.server->handle_timeout(now_);
    pair_.client->handle_timeout(now_);
    server_app_->run(now_);
    transmit::BurstDescriptor out;
    conn::PathAddresses path;
    while (pair_.server->poll_transmit(now_, lent_.buffers(), out, path)) {
      inbound_.clear();
      for (size_t i = 0; i < out.datagram_count; ++i) {
        inbound_.push_back(
            {{path.remote, path.local}, out.ecn, {lent_.datagram(i), out.lengths[i]}});
      }
      if (mutation) mutation(inbound_);
      datagrams_to_client_ += inbound_.size();
      pair_.client->handle_datagrams(now_, inbound_);
      client_app_->run(now_);
    }
    client_app_->run(now_);
    while (pair_.client->poll_transmit(now_, lent_.buffers(), out, path)) {
      for (size_t i = 0; i < out.datagram_count; ++i) {
        const std::span<uint8_t> bytes(lent_.datagram(i), out.lengths[i]);
        server_cid_ =
            wire::ConnectionId(bytes.subspan(1, pair_.options.server.cid_layout.cid_length));
        pair_.server->handle_datagram(now_, {path.remote, path.local}, out.ecn, bytes);
      }
    }
  }

  // The server CID the client's last packet was sent to.
  const wire::ConnectionId& server_cid() const { return server_cid_; }
  const conn::Connection& client() { return *pair_.client_connection(handle_); }
  const conn::ConnectionStats& client_stats() { return pair_.client_connection(handle_)->stats(); }
  uint64_t datagrams_to_client() const { return datagrams_to_client_; }
  uint64_t mismatches() const { return client_app_->mismatches(); }
  QuicPair& pair() { return pair_; }

  // Room for a datagram a mutation adds to a burst.
  std::span<uint8_t> extra(size_t i) { return {extra_[i].data(), extra_[i].size()}; }

 private:
  static PairOptions widen(PairOptions options) {
    options.client.connection.transport.max_stream_window = 64 << 20;
    options.client.connection.transport.max_connection_window = 64 << 20;
    return options;
  }

  QuicPair pair_;
  std::optional<PerfServer> server_app_;
  std::optional<PerfClient> client_app_;
  endpoint::ConnectionHandle handle_{};
  LentBuffers lent_{kBurst, kSegment};
  std::array<std::array<uint8_t, kSegment>, kExtra> extra_{};
  std::vector<conn::InboundDatagram> inbound_;
  Instant now_ = kSimulationStart;
  uint64_t datagrams_to_client_ = 0;
  uint64_t requested_ = 0;
  wire::ConnectionId server_cid_;
};

TEST(BurstReceiveTest, DownloadIsByteExactAndAllocatesNothingOnceWarm) {
  BurstDownload download;
  ASSERT_TRUE(download.download(16 << 20));  // warm-up: pools and windows grow
  const uint64_t received_before = download.client_stats().packets_received;
  const uint64_t datagrams_before = download.datagrams_to_client();
  download.request(16 << 20);
  dpquic::testing::AllocationWindow window;
  const bool done = download.finish();
  const size_t allocations = window.count();
  ASSERT_TRUE(done);
  EXPECT_EQ(download.mismatches(), 0u);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(download.client_stats().packets_dropped, 0u);
  // Every datagram of the server was one 1-RTT packet, each processed once.
  EXPECT_EQ(download.client_stats().packets_received - received_before,
            download.datagrams_to_client() - datagrams_before);
  EXPECT_GT(download.datagrams_to_client() - datagrams_before, 16u << 20 >> 11);
}

TEST(BurstReceiveTest, KeyUpdatesInsideRunsLoseNothing) {
  PairOptions options;
  options.server.connection.key_update_interval_packets = 100;  // not a multiple of a burst
  BurstDownload download(options);
  ASSERT_TRUE(download.download(8 << 20));
  EXPECT_EQ(download.mismatches(), 0u);
  EXPECT_GE(download.client_stats().key_updates, 20u);
  EXPECT_EQ(download.client_stats().packets_dropped, 0u);
}

TEST(BurstReceiveTest, ForgedAndDuplicatedPacketsInARunAreDroppedAlone) {
  BurstDownload download;
  ASSERT_TRUE(download.download(1 << 20));
  const conn::ConnectionStats before = download.client_stats();
  bool mutated = false;
  uint64_t burst_size = 0;
  ASSERT_TRUE(download.download(4 << 20, [&](std::vector<conn::InboundDatagram>& burst) {
    if (mutated || burst.size() < 8) return;
    mutated = true;
    // A copy of packet 2 at the end, and packet 5's tag broken.
    std::span<uint8_t> copy = download.extra(0).first(burst[2].bytes.size());
    std::copy(burst[2].bytes.begin(), burst[2].bytes.end(), copy.begin());
    burst.push_back({burst[2].path, burst[2].ecn, copy});
    burst[5].bytes.back() ^= 0x01;
    burst_size = burst.size();
  }));
  ASSERT_TRUE(mutated);
  EXPECT_EQ(download.mismatches(), 0u);
  const conn::ConnectionStats& after = download.client_stats();
  EXPECT_EQ(after.packets_dropped - before.packets_dropped, 2u);
  EXPECT_TRUE(download.client().is_established());
  EXPECT_GT(burst_size, 8u);
}

TEST(BurstReceiveTest, LongHeaderInsideARunIsTakenAlone) {
  BurstDownload download;
  ASSERT_TRUE(download.download(1 << 20));
  const uint64_t dropped_before = download.pair().client->stats().datagrams_dropped;
  const uint64_t received_before = download.client_stats().packets_received;
  const uint64_t datagrams_before = download.datagrams_to_client();
  bool inserted = false;
  ASSERT_TRUE(download.download(2 << 20, [&](std::vector<conn::InboundDatagram>& burst) {
    if (inserted || burst.size() < 8) return;
    inserted = true;
    // A long header of an unknown version splits the run in two.
    std::span<uint8_t> odd = download.extra(0).first(1200);
    std::fill(odd.begin(), odd.end(), 0);
    odd[0] = 0xc0;
    odd[1] = 0x1a;
    odd[2] = 0x2a;
    odd[3] = 0x3a;
    odd[4] = 0x4a;
    burst.insert(burst.begin() + 4, conn::InboundDatagram{burst[0].path, burst[0].ecn, odd});
  }));
  ASSERT_TRUE(inserted);
  EXPECT_EQ(download.mismatches(), 0u);
  EXPECT_EQ(download.pair().client->stats().datagrams_dropped - dropped_before, 1u);
  EXPECT_EQ(download.client_stats().packets_dropped, 0u);
  EXPECT_EQ(download.client_stats().packets_received - received_before,
            download.datagrams_to_client() - datagrams_before - 1);
}

TEST(BurstReceiveTest, StatelessResetInsideARunEndsItThere) {
  BurstDownload download;
  ASSERT_TRUE(download.download(1 << 20));
  const crypto::StatelessResetTokens tokens(download.pair().options.server.stateless_reset_key);
  const crypto::StatelessResetToken token = tokens.token_for(download.server_cid());
  uint64_t received_before = 0;
  bool inserted = false;
  download.request(1 << 20);
  for (int round = 0; round < 100 && !inserted; ++round) {
    download.step([&](std::vector<conn::InboundDatagram>& burst) {
      if (inserted || burst.size() < 8) return;
      inserted = true;
      received_before = download.client_stats().packets_received;
      // Four packets, then a reset (here with the run's DCID, so it is in
      // the run): the client drains, and the rest of the run is ignored.
      std::span<uint8_t> reset = download.extra(0).first(100);
      std::copy(burst[0].bytes.begin(), burst[0].bytes.begin() + 100, reset.begin());
      std::copy(token.begin(), token.end(), reset.end() - token.size());
      burst.insert(burst.begin() + 4, conn::InboundDatagram{burst[0].path, burst[0].ecn, reset});
    });
  }
  ASSERT_TRUE(inserted);
  EXPECT_EQ(download.mismatches(), 0u);
  EXPECT_EQ(download.client().close_reason(), conn::CloseReason::kStatelessReset);
  EXPECT_EQ(download.client_stats().packets_received - received_before, 4u);
}

}  // namespace
}  // namespace dpquic::harness
