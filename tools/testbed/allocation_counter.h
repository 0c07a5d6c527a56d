#pragma once
// Counts heap allocations, to prove a code path allocates nothing.
//
// Linking //tools/testbed:allocation_counter replaces the global operator new
// family and, outside sanitizer builds, malloc/calloc/realloc with counting
// versions. Allocations are counted only inside an AllocationWindow:
//
//   AllocationWindow window;
//   ... code under test ...
//   EXPECT_EQ(window.count(), 0u);

#include <cstddef>

namespace dpquic::testing {

// False in sanitizer builds: their runtimes own malloc, so only operator new
// is counted there.
bool counts_malloc();

// Opens a counting window for its lifetime. Windows do not nest.
class AllocationWindow {
 public:
  AllocationWindow();
  ~AllocationWindow();
  AllocationWindow(const AllocationWindow&) = delete;
  AllocationWindow& operator=(const AllocationWindow&) = delete;

  // Allocations seen since the window opened.
  size_t count() const;
};

}  // namespace dpquic::testing
