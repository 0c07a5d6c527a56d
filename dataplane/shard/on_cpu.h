#pragma once
// Start-up work run on the core that will use what it builds.
//
// A shard's memory (endpoint tables, connection slots, pools, rings) is
// first written by the thread that builds it. Linux places a page on the
// NUMA node of the CPU that first touches it, so a shard built on the main
// thread would live on the main thread's node, and every packet its core
// handles would reach across the interconnect. Built on its own core, it
// lives where it is used.
//
// Start-up only: this starts a thread per call.

#include <functional>

namespace dpquic::dataplane {

// Pins the calling thread to `cpu`; false when the kernel refused (the CPU
// is outside the process's allowed set).
bool pin_current_thread(int cpu);

// Runs `work` on a thread pinned to `cpu` and waits for it; an exception
// `work` throws is rethrown here. With `cpu` < 0, or a CPU the process may
// not use, `work` runs on an unpinned thread.
void run_on_cpu(int cpu, const std::function<void()>& work);

}  // namespace dpquic::dataplane
