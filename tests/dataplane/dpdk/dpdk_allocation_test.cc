// The DPDK shards' steady state allocates nothing from the heap: after a
// warm-up download on the same connection, the packets of a second 40 MB
// perf download between our client and server shards over ring ports
// (receive, steering checks, endpoint, sealing into mbufs, headers, TX) make
// no allocation. Counting starts once the second stream is open on both
// sides: opening a stream still allocates its buffers (quic/conn).
#include <gtest/gtest.h>

#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/dpdk_rig.h"

namespace dpquic::dataplane::dpdk {
namespace {

class Outcome final : public PerfResponseHandler {
 public:
  void on_complete(uint64_t, const PerfOutcome& outcome) override {
    ++completed;
    last = outcome;
  }
  size_t completed = 0;
  PerfOutcome last;
};

bool run_until(DpdkRig& rig, const Outcome& outcome, size_t completed) {
  const Instant deadline = monotonic_now() + 60 * kSecond;
  while (outcome.completed < completed && monotonic_now() < deadline) {
    rig.poll_all(monotonic_now());
  }
  return outcome.completed == completed;
}

TEST(DpdkAllocationTest, SteadyStateDownloadAllocatesNothing) {
  init_eal("dpdk_allocation_test", {"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
                                    "--no-telemetry", "--log-level=lib.eal:error", "-l", "0"});
  {
    DpdkRig rig(DpdkRigOptions{});
    const auto handle = rig.connect(monotonic_now());
    ASSERT_TRUE(handle.has_value());
    Outcome outcome;
    constexpr uint64_t kWarmUp = 40'000'000;
    constexpr uint64_t kCounted = 40'000'000;
    rig.perf_client().request(*handle, kWarmUp, 0, &outcome);
    ASSERT_TRUE(run_until(rig, outcome, 1));
    ASSERT_EQ(outcome.last.result, PerfResult::kOk);

    const uint64_t request = rig.perf_client().request(*handle, kCounted, 0, &outcome);
    const Instant deadline = monotonic_now() + 60 * kSecond;
    for (;;) {
      const auto progress = rig.perf_client().progress(request);
      if ((progress && progress->bytes_received >= 1'000'000) || monotonic_now() > deadline) break;
      rig.poll_all(monotonic_now());
    }
    const uint64_t datagrams_before = rig.server(0).stats().tx_datagrams;
    size_t allocations = 0;
    {
      testing::AllocationWindow window;
      ASSERT_TRUE(run_until(rig, outcome, 2));
      allocations = window.count();
    }
    EXPECT_EQ(outcome.last.result, PerfResult::kOk);
    EXPECT_EQ(outcome.last.bytes_received, kCounted);
    EXPECT_GT(rig.server(0).stats().tx_datagrams - datagrams_before, (kCounted - 2'000'000) / 1452);
    EXPECT_EQ(allocations, 0u);
  }
  cleanup_eal();
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
