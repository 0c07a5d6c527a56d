// Replacement allocation functions that count while an AllocationWindow is
// open; see allocation_counter.h.
#include "tools/testbed/allocation_counter.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

// Whether malloc and friends are counted too (glibc builds).
// Sanitizer runtimes own malloc themselves; replacing it there would mix
// allocators, so those builds count operator new only.
#if defined(__SANITIZE_ADDRESS__)
#define DPQUIC_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DPQUIC_COUNT_MALLOC 0
#endif
#endif
#ifndef DPQUIC_COUNT_MALLOC
#define DPQUIC_COUNT_MALLOC 1
#endif

#if DPQUIC_COUNT_MALLOC
extern "C" void* __libc_malloc(size_t);
#endif

namespace {

std::atomic<bool> g_counting{false};
std::atomic<size_t> g_allocations{0};

// operator new allocates through this, so one allocation counts once even
// when malloc is counted as well.
void* uncounted_malloc(size_t size) {
#if DPQUIC_COUNT_MALLOC
  return __libc_malloc(size);
#else
  return std::malloc(size);
#endif
}

void note_allocation() {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// --- operator new/delete: each form counts, then uses malloc. -------------
// They pair malloc with free by construction; GCC cannot see that once the
// replacements are inlined into each other.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(size_t size) {
  note_allocation();
  if (void* p = uncounted_malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return ::operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  note_allocation();
  return uncounted_malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void* operator new(size_t size, std::align_val_t align) {
  note_allocation();
  void* p = nullptr;
  if (posix_memalign(&p, std::max(sizeof(void*), static_cast<size_t>(align)), size) != 0)
    throw std::bad_alloc();
  return p;
}
void* operator new[](size_t size, std::align_val_t align) { return ::operator new(size, align); }
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  note_allocation();
  void* p = nullptr;
  if (posix_memalign(&p, std::max(sizeof(void*), static_cast<size_t>(align)), size) != 0)
    return nullptr;
  return p;
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, align, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

// --- malloc family: glibc's own entry points, counted. ------------------------
#if DPQUIC_COUNT_MALLOC
extern "C" {
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  note_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  note_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  note_allocation();
  return __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
}
#endif

namespace dpquic::testing {

bool counts_malloc() { return DPQUIC_COUNT_MALLOC != 0; }

AllocationWindow::AllocationWindow() {
  g_allocations = 0;
  g_counting = true;
}

AllocationWindow::~AllocationWindow() { g_counting = false; }

size_t AllocationWindow::count() const { return g_allocations.load(); }

}  // namespace dpquic::testing
