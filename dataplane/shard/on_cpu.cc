#include "dataplane/shard/on_cpu.h"

#include <pthread.h>
#include <sched.h>

#include <exception>
#include <thread>

namespace dpquic::dataplane {

bool pin_current_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void run_on_cpu(int cpu, const std::function<void()>& work) {
  std::exception_ptr failure;
  std::thread thread([&] {
    if (cpu >= 0) pin_current_thread(cpu);
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace dpquic::dataplane
