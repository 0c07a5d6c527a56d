// The allocation counter counts each allocation once, whichever entry point
// it comes through, and only inside a window.
#include "tools/testbed/allocation_counter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace dpquic::testing {
namespace {

// Keeps the compiler from eliding an allocation whose result is unused.
template <typename T>
void escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
}

TEST(AllocationCounterTest, OperatorNewCountsOnce) {
  AllocationWindow window;
  int* p = new int(7);
  escape(p);
  delete p;
  EXPECT_EQ(window.count(), 1u);
}

TEST(AllocationCounterTest, EveryFormOfNewCountsOnce) {
  AllocationWindow window;
  int* array = new int[4];
  escape(array);
  delete[] array;
  int* nothrow = new (std::nothrow) int(1);
  escape(nothrow);
  delete nothrow;
  struct alignas(64) Aligned {
    char bytes[64];
  };
  Aligned* aligned = new Aligned;
  escape(aligned);
  delete aligned;
  Aligned* aligned_nothrow = new (std::nothrow) Aligned;
  escape(aligned_nothrow);
  delete aligned_nothrow;
  EXPECT_EQ(window.count(), 4u);
}

TEST(AllocationCounterTest, MallocCountsWhereMallocIsReplaced) {
  AllocationWindow window;
  void* p = std::malloc(32);
  escape(p);
  std::free(p);
  EXPECT_EQ(window.count(), counts_malloc() ? 1u : 0u);
}

TEST(AllocationCounterTest, NothingCountsOutsideAWindow) {
  { AllocationWindow window; }
  auto outside = std::make_unique<std::vector<int>>(100);
  escape(outside.get());
  AllocationWindow window;
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic::testing
