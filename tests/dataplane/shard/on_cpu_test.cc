#include "dataplane/shard/on_cpu.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <stdexcept>
#include <thread>
#include <vector>

namespace dpquic::dataplane {
namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(OnCpu, WorkRunsOnTheCpuAskedFor) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  for (int cpu : cpus) {
    int seen = -1;
    run_on_cpu(cpu, [&] { seen = sched_getcpu(); });
    EXPECT_EQ(seen, cpu);
  }
}

TEST(OnCpu, WorkRunsOnAnotherThreadAndIsWaitedFor) {
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id worker;
  int steps = 0;
  run_on_cpu(-1, [&] {
    worker = std::this_thread::get_id();
    ++steps;
  });
  EXPECT_NE(worker, caller);
  EXPECT_EQ(steps, 1);
}

TEST(OnCpu, AnExceptionReachesTheCaller) {
  EXPECT_THROW(run_on_cpu(allowed_cpus().front(), [] { throw std::runtime_error("no memory"); }),
               std::runtime_error);
}

TEST(OnCpu, ACpuOutsideTheSetRunsUnpinned) {
  bool ran = false;
  EXPECT_FALSE(pin_current_thread(CPU_SETSIZE));
  run_on_cpu(CPU_SETSIZE + 1, [&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace dpquic::dataplane
