// Our client shard and our server shards on two DPDK ring ports in one
// process (EAL without hugepages, PCI or telemetry): the handshake including
// ARP, a byte-exact 100 MB perf download, loss injected at the rings, and
// CID steering when frames reach the wrong server queue; run()'s loop
// counting its busy and total cycles.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_eal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/testbed/dpdk_rig.h"

namespace dpquic::dataplane::dpdk {
namespace {

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    init_eal("dpdk_shard_test", {"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
                                 "--no-telemetry", "--log-level=lib.eal:error", "-l", "0"});
  }
  void TearDown() override { cleanup_eal(); }
};

const auto* const kEal = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

class Outcomes final : public PerfResponseHandler {
 public:
  void on_complete(uint64_t, const PerfOutcome& outcome) override {
    ++completed;
    last = outcome;
  }
  size_t completed = 0;
  PerfOutcome last;
};

// Runs the rig until the request completes or `limit` passes.
void run_until_complete(DpdkRig& rig, const Outcomes& outcomes, Duration limit) {
  const Instant deadline = monotonic_now() + limit;
  while (outcomes.completed == 0 && monotonic_now() < deadline) rig.poll_all(monotonic_now());
}

TEST(DpdkShardTest, HandshakeResolvesTheServerAndDownloads100MegabytesByteExact) {
  DpdkRigOptions options;
  DpdkRig rig(options);
  const auto handle = rig.connect(monotonic_now());
  ASSERT_TRUE(handle.has_value());
  Outcomes outcomes;
  constexpr uint64_t kBytes = 100'000'000;
  rig.perf_client().request(*handle, kBytes, 0, &outcomes);
  run_until_complete(rig, outcomes, 120 * kSecond);

  ASSERT_EQ(outcomes.completed, 1u);
  EXPECT_EQ(outcomes.last.result, PerfResult::kOk);
  EXPECT_EQ(outcomes.last.bytes_received, kBytes);
  // The client resolved the server with ARP; the server learnt the client
  // from its request and answered.
  EXPECT_GE(rig.client().stats().solicitations, 1u);
  EXPECT_GE(rig.server(0).stats().arp_replies, 1u);
  EXPECT_EQ(rig.server(0).counters().handshakes.load(), 1u);
  EXPECT_GT(rig.server(0).stats().tx_datagrams, kBytes / 1452);
  EXPECT_EQ(rig.server(0).stats().total_frame_drops(), 0u);
  EXPECT_EQ(rig.server(0).stats().tx_dropped, 0u);
  EXPECT_EQ(rig.client().stats().total_frame_drops(), 0u);
  EXPECT_GT(rig.server(0).stats().tx_cycles, 0u);
}

TEST(DpdkShardTest, LossAtTheRingsIsRecoveredByteExact) {
  DpdkRigOptions options;
  options.loss = 0.03;
  options.seed = 42;
  DpdkRig rig(options);
  const auto handle = rig.connect(monotonic_now());
  ASSERT_TRUE(handle.has_value());
  Outcomes outcomes;
  constexpr uint64_t kBytes = 10'000'000;
  rig.perf_client().request(*handle, kBytes, 0, &outcomes);
  run_until_complete(rig, outcomes, 120 * kSecond);

  ASSERT_EQ(outcomes.completed, 1u);
  EXPECT_EQ(outcomes.last.result, PerfResult::kOk);
  EXPECT_EQ(outcomes.last.bytes_received, kBytes);
  EXPECT_GT(rig.frames_lost(), 100u);
  conn::Connection* server_connection = nullptr;
  for (size_t h = 0; h < 64 && server_connection == nullptr; ++h) {
    server_connection =
        rig.server(0).endpoint().connection(static_cast<endpoint::ConnectionHandle>(h));
  }
  ASSERT_NE(server_connection, nullptr);
  // The server's recovery saw the losses and resent what they carried.
  EXPECT_GT(server_connection->stats().packets_lost, 50u);
}

TEST(DpdkShardTest, FramesOnTheWrongQueueAreSteeredToTheOwningShard) {
  DpdkRigOptions options;
  options.server_shards = 2;
  DpdkRig rig(options);
  // The Initial lands on queue 0: shard 0 owns the connection and issues
  // connection IDs naming core 0.
  rig.force_server_queue(0);
  const auto handle = rig.connect(monotonic_now());
  ASSERT_TRUE(handle.has_value());
  Outcomes outcomes;
  constexpr uint64_t kBytes = 20'000'000;
  rig.perf_client().request(*handle, kBytes, 0, &outcomes);
  const Instant deadline = monotonic_now() + 60 * kSecond;
  bool moved = false;
  while (outcomes.completed == 0 && monotonic_now() < deadline) {
    conn::Connection* c = rig.client().endpoint().connection(*handle);
    if (!moved && c != nullptr && c->handshake_confirmed()) {
      // From now on every client frame reaches shard 1's queue.
      rig.force_server_queue(1);
      moved = true;
    }
    rig.poll_all(monotonic_now());
  }
  ASSERT_TRUE(moved);
  // Shard 0 takes what shard 1 handed it in their last iteration.
  rig.server(0).poll_once(monotonic_now());
  ASSERT_EQ(outcomes.completed, 1u);
  EXPECT_EQ(outcomes.last.result, PerfResult::kOk);
  EXPECT_EQ(outcomes.last.bytes_received, kBytes);
  EXPECT_EQ(rig.server(0).counters().handshakes.load(), 1u);
  EXPECT_EQ(rig.server(1).counters().handshakes.load(), 0u);
  // Shard 1 received the ACKs and handed every one to shard 0.
  EXPECT_GT(rig.server(1).stats().steered_out, 100u);
  EXPECT_EQ(rig.server(0).stats().steered_in, rig.server(1).stats().steered_out);
  EXPECT_EQ(rig.server(1).stats().steering_drops, 0u);
  EXPECT_EQ(rig.server(1).stats().rx_datagrams, 0u);
  EXPECT_EQ(rig.server(1).endpoint().connection_count(), 0u);
}

// run() on a thread of its own (the direct wiring: the client's frames go
// straight to the server's RX ring and back), while this thread drives the
// client through a handshake and a download, then leaves the server idle.
TEST(DpdkShardTest, RunCountsTheCyclesOfItsLoopAndOfItsBusyIterations) {
  DpdkRigOptions options;
  options.wiring = DpdkRigOptions::Wiring::kDirect;
  DpdkRig rig(options);
  DpdkShard& server = rig.server(0);
  std::atomic<RunPhase> phase{RunPhase::kServe};
  const Instant started = monotonic_now();
  std::thread loop([&] { server.run(phase); });

  const auto handle = rig.connect(monotonic_now());
  ASSERT_TRUE(handle.has_value());
  Outcomes outcomes;
  constexpr uint64_t kBytes = 10'000'000;
  rig.perf_client().request(*handle, kBytes, 0, &outcomes);
  const Instant deadline = monotonic_now() + 60 * kSecond;
  while (outcomes.completed == 0 && monotonic_now() < deadline) {
    rig.client().poll_once(monotonic_now());
  }
  // Nothing arrives now: the loop spins through idle iterations.
  constexpr Duration kIdle = 300 * kMillisecond;
  std::this_thread::sleep_for(std::chrono::nanoseconds(kIdle));
  phase.store(RunPhase::kStop, std::memory_order_release);
  loop.join();
  const double wall = static_cast<double>(monotonic_now() - started) / kSecond;

  ASSERT_EQ(outcomes.completed, 1u);
  EXPECT_EQ(outcomes.last.bytes_received, kBytes);
  EXPECT_EQ(server.counters().handshakes.load(), 1u);
  const DpdkShardStats& stats = server.stats();
  const double hz = static_cast<double>(rte_get_tsc_hz());
  const double poll = static_cast<double>(stats.poll_cycles) / hz;
  const double busy = static_cast<double>(stats.busy_cycles) / hz;
  // The loop ran from the thread's start to its last iteration: all the
  // time the thread lived, less its start and its exit.
  EXPECT_LE(poll, wall);
  EXPECT_GE(poll, 0.9 * wall - 0.05) << "wall " << wall << " s";
  // The download kept it busy; the idle spell did not count.
  EXPECT_GT(stats.busy_cycles, 0u);
  EXPECT_LE(busy, poll - 0.8 * static_cast<double>(kIdle) / kSecond)
      << "busy " << busy << " s of " << poll << " s";
  // What the metrics read: the same, in nanoseconds, published as the
  // loop ended.
  const double poll_published = static_cast<double>(server.counters().poll_ns.load()) / kSecond;
  const double busy_published = static_cast<double>(server.counters().busy_ns.load()) / kSecond;
  EXPECT_NEAR(poll_published, poll, 1e-6);
  EXPECT_NEAR(busy_published, busy, 1e-6);
  // A loop driven through poll_once (the other tests) is the caller's: it
  // counts nothing.
  EXPECT_EQ(rig.client().stats().poll_cycles, 0u);
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
