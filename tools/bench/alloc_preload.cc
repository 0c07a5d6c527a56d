// LD_PRELOAD heap allocation counter for the benchmark suite.
//
// Interposes the C allocator entry points, forwards every call to the next
// definition (glibc) and counts the calls that allocate: malloc, calloc,
// realloc (other than realloc(p, 0), which frees), reallocarray,
// posix_memalign, aligned_alloc, memalign, valloc and pvalloc. free is passed
// through uncounted. C++ operator new reaches malloc through libstdc++, so
// C++ programs are counted too.
//
// Environment:
//   DPQUIC_ALLOC_REPORT=PATH       write the report here at exit (and on the
//                                  dump signal); "%p" in PATH becomes the pid.
//   DPQUIC_ALLOC_MARK_SIGNAL=SIG   on SIG (USR1, SIGUSR1 or a number), snapshot
//                                  the counter as the mark.
//   DPQUIC_ALLOC_DUMP_SIGNAL=SIG   on SIG, write the report now (the process
//                                  keeps running).
// The report is one line of JSON:
//   {"allocations": N, "allocations_since_mark": M, "marked": true|false,
//    "pid": P, "at_exit": true|false}
// allocations_since_mark equals allocations while no mark was taken.
//
// Only the process that loaded the library writes: a fork()ed child that
// exits does not overwrite its parent's report. Put LD_PRELOAD on the
// measured program only (`timeout 60 env LD_PRELOAD=... prog`), or use "%p",
// since every exec'd program that inherits it reports too.

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <new>

namespace {

using MallocFn = void* (*)(size_t);
using CallocFn = void* (*)(size_t, size_t);
using ReallocFn = void* (*)(void*, size_t);
using ReallocArrayFn = void* (*)(void*, size_t, size_t);
using FreeFn = void (*)(void*);
using PosixMemalignFn = int (*)(void**, size_t, size_t);
using AlignedAllocFn = void* (*)(size_t, size_t);
using VallocFn = void* (*)(size_t);

struct RealAllocator {
  MallocFn malloc_fn = nullptr;
  CallocFn calloc_fn = nullptr;
  ReallocFn realloc_fn = nullptr;
  ReallocArrayFn reallocarray_fn = nullptr;
  FreeFn free_fn = nullptr;
  PosixMemalignFn posix_memalign_fn = nullptr;
  AlignedAllocFn aligned_alloc_fn = nullptr;
  AlignedAllocFn memalign_fn = nullptr;
  VallocFn valloc_fn = nullptr;
  VallocFn pvalloc_fn = nullptr;
};

RealAllocator g_real;
std::atomic<bool> g_resolved{false};
// Set while dlsym runs: dlsym may allocate, and those requests must not
// recurse into the lookup. They are served from the bootstrap arena.
std::atomic<bool> g_resolving{false};

std::atomic<uint64_t> g_allocations{0};
std::atomic<uint64_t> g_mark{0};
std::atomic<bool> g_marked{false};

char g_report_path[4096];
bool g_report_enabled = false;
pid_t g_owner_pid = 0;

// --- Bootstrap arena ---------------------------------------------------------
// A bump allocator for the few requests made while the real functions are
// being looked up. Each block is preceded by its size (for realloc). Arena
// blocks are never returned; free and realloc recognise them by address.

constexpr size_t kArenaSize = 256 * 1024;
constexpr size_t kArenaHeader = 16;
alignas(64) char g_arena[kArenaSize];
std::atomic<size_t> g_arena_used{0};

bool in_arena(const void* pointer) {
  const char* p = static_cast<const char*>(pointer);
  return p >= g_arena && p < g_arena + kArenaSize;
}

void* arena_alloc(size_t size, size_t alignment) {
  if (alignment < kArenaHeader) alignment = kArenaHeader;
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(g_arena);
    uintptr_t start = (base + used + kArenaHeader + alignment - 1) & ~(uintptr_t{alignment} - 1);
    const size_t end = (start - base) + size;
    if (size > kArenaSize || end > kArenaSize) return nullptr;
    if (g_arena_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      char* block = reinterpret_cast<char*>(start);
      memcpy(block - sizeof(size_t), &size, sizeof(size_t));
      return block;
    }
  }
}

size_t arena_block_size(const void* block) {
  size_t size;
  memcpy(&size, static_cast<const char*>(block) - sizeof(size_t), sizeof(size_t));
  return size;
}

// --- Resolution --------------------------------------------------------------

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void resolve() {
  if (g_resolved.load(std::memory_order_acquire)) return;
  g_resolving.store(true, std::memory_order_relaxed);
  RealAllocator real;
  real.malloc_fn = next_symbol<MallocFn>("malloc");
  real.calloc_fn = next_symbol<CallocFn>("calloc");
  real.realloc_fn = next_symbol<ReallocFn>("realloc");
  real.reallocarray_fn = next_symbol<ReallocArrayFn>("reallocarray");
  real.free_fn = next_symbol<FreeFn>("free");
  real.posix_memalign_fn = next_symbol<PosixMemalignFn>("posix_memalign");
  real.aligned_alloc_fn = next_symbol<AlignedAllocFn>("aligned_alloc");
  real.memalign_fn = next_symbol<AlignedAllocFn>("memalign");
  real.valloc_fn = next_symbol<VallocFn>("valloc");
  real.pvalloc_fn = next_symbol<VallocFn>("pvalloc");
  if (real.malloc_fn == nullptr || real.calloc_fn == nullptr || real.realloc_fn == nullptr ||
      real.free_fn == nullptr || real.posix_memalign_fn == nullptr) {
    static const char kMessage[] = "alloc_preload: cannot find the real allocator\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    _exit(127);
  }
  g_real = real;
  g_resolving.store(false, std::memory_order_relaxed);
  g_resolved.store(true, std::memory_order_release);
}

// True when the call must be served from the arena (lookup in progress).
bool bootstrapping() {
  if (g_resolved.load(std::memory_order_acquire)) return false;
  if (g_resolving.load(std::memory_order_relaxed)) return true;
  resolve();
  return false;
}

void count_allocation() { g_allocations.fetch_add(1, std::memory_order_relaxed); }

// --- Report (async-signal-safe: no stdio, no allocation) ---------------------

size_t append_text(char* out, size_t at, size_t capacity, const char* text) {
  while (*text != '\0' && at + 1 < capacity) out[at++] = *text++;
  return at;
}

size_t append_u64(char* out, size_t at, size_t capacity, uint64_t value) {
  char digits[24];
  size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (count > 0 && at + 1 < capacity) out[at++] = digits[--count];
  return at;
}

void write_report(bool at_exit) {
  if (!g_report_enabled || getpid() != g_owner_pid) return;
  const uint64_t total = g_allocations.load(std::memory_order_relaxed);
  const bool marked = g_marked.load(std::memory_order_acquire);
  const uint64_t since_mark = marked ? total - g_mark.load(std::memory_order_relaxed) : total;
  char line[256];
  size_t n = 0;
  n = append_text(line, n, sizeof(line), "{\"allocations\": ");
  n = append_u64(line, n, sizeof(line), total);
  n = append_text(line, n, sizeof(line), ", \"allocations_since_mark\": ");
  n = append_u64(line, n, sizeof(line), since_mark);
  n = append_text(line, n, sizeof(line), ", \"marked\": ");
  n = append_text(line, n, sizeof(line), marked ? "true" : "false");
  n = append_text(line, n, sizeof(line), ", \"pid\": ");
  n = append_u64(line, n, sizeof(line), static_cast<uint64_t>(g_owner_pid));
  n = append_text(line, n, sizeof(line), ", \"at_exit\": ");
  n = append_text(line, n, sizeof(line), at_exit ? "true" : "false");
  n = append_text(line, n, sizeof(line), "}\n");
  // Written to a temporary name and renamed, so a reader never sees half a line.
  char temporary[sizeof(g_report_path) + 8];
  size_t t = append_text(temporary, 0, sizeof(temporary), g_report_path);
  t = append_text(temporary, t, sizeof(temporary), ".tmp");
  temporary[t] = '\0';
  const int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t written = 0;
  while (written < n) {
    const ssize_t r = write(fd, line + written, n - written);
    if (r <= 0) break;
    written += static_cast<size_t>(r);
  }
  close(fd);
  if (written == n) rename(temporary, g_report_path);
}

void on_mark_signal(int) {
  const int saved_errno = errno;
  g_mark.store(g_allocations.load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_marked.store(true, std::memory_order_release);
  errno = saved_errno;
}

void on_dump_signal(int) {
  const int saved_errno = errno;
  write_report(false);
  errno = saved_errno;
}

// "USR1", "SIGUSR1" or a number; 0 when unset or not understood.
int parse_signal(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  if (strncmp(text, "SIG", 3) == 0) text += 3;
  if (strcmp(text, "USR1") == 0) return SIGUSR1;
  if (strcmp(text, "USR2") == 0) return SIGUSR2;
  if (strcmp(text, "HUP") == 0) return SIGHUP;
  if (strcmp(text, "WINCH") == 0) return SIGWINCH;
  int number = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || number > 64) return 0;
    number = number * 10 + (*c - '0');
  }
  return number;
}

void install_handler(const char* variable, void (*handler)(int)) {
  const char* value = getenv(variable);
  const int signal_number = parse_signal(value);
  if (value != nullptr && signal_number == 0) {
    static const char kMessage[] = "alloc_preload: unknown signal in DPQUIC_ALLOC_*_SIGNAL\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    return;
  }
  if (signal_number == 0) return;
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
}

// Copies PATH, replacing "%p" with the pid.
void set_report_path(const char* path) {
  size_t n = 0;
  for (const char* c = path; *c != '\0' && n + 1 < sizeof(g_report_path); ++c) {
    if (c[0] == '%' && c[1] == 'p') {
      n = append_u64(g_report_path, n, sizeof(g_report_path), static_cast<uint64_t>(g_owner_pid));
      ++c;
    } else {
      g_report_path[n++] = *c;
    }
  }
  g_report_path[n] = '\0';
  g_report_enabled = n > 0;
}

__attribute__((constructor(101))) void alloc_preload_init() {
  resolve();
  g_owner_pid = getpid();
  const char* path = getenv("DPQUIC_ALLOC_REPORT");
  if (path != nullptr) set_report_path(path);
  install_handler("DPQUIC_ALLOC_MARK_SIGNAL", on_mark_signal);
  install_handler("DPQUIC_ALLOC_DUMP_SIGNAL", on_dump_signal);
}

// Priority 101 runs this destructor after the program's own default-priority
// destructors, so their allocations count too.
__attribute__((destructor(101))) void alloc_preload_fini() { write_report(true); }

}  // namespace

// --- Interposed entry points -------------------------------------------------

extern "C" {

__attribute__((visibility("default"))) void* malloc(size_t size) {
  count_allocation();
  if (bootstrapping()) return arena_alloc(size, 16);
  return g_real.malloc_fn(size);
}

__attribute__((visibility("default"))) void* calloc(size_t count, size_t size) {
  count_allocation();
  if (bootstrapping()) {
    if (size != 0 && count > SIZE_MAX / size) return nullptr;
    // Static storage starts zeroed and arena blocks are never reused.
    return arena_alloc(count * size, 16);
  }
  return g_real.calloc_fn(count, size);
}

__attribute__((visibility("default"))) void free(void* pointer) {
  if (pointer == nullptr || in_arena(pointer)) return;
  if (bootstrapping()) return;  // Cannot happen for a pointer we handed out.
  g_real.free_fn(pointer);
}

__attribute__((visibility("default"))) void* realloc(void* pointer, size_t size) {
  if (pointer != nullptr && size == 0) {
    free(pointer);
    return nullptr;
  }
  count_allocation();
  if (pointer != nullptr && in_arena(pointer)) {
    void* moved = bootstrapping() ? arena_alloc(size, 16) : g_real.malloc_fn(size);
    if (moved == nullptr) return nullptr;
    const size_t old_size = arena_block_size(pointer);
    memcpy(moved, pointer, old_size < size ? old_size : size);
    return moved;
  }
  if (bootstrapping()) return arena_alloc(size, 16);
  return g_real.realloc_fn(pointer, size);
}

__attribute__((visibility("default"))) void* reallocarray(void* pointer, size_t count,
                                                          size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(pointer, count * size);
}

__attribute__((visibility("default"))) int posix_memalign(void** out, size_t alignment,
                                                          size_t size) {
  count_allocation();
  if (bootstrapping()) {
    *out = arena_alloc(size, alignment);
    return *out == nullptr ? ENOMEM : 0;
  }
  return g_real.posix_memalign_fn(out, alignment, size);
}

__attribute__((visibility("default"))) void* aligned_alloc(size_t alignment, size_t size) {
  count_allocation();
  if (bootstrapping()) return arena_alloc(size, alignment);
  if (g_real.aligned_alloc_fn != nullptr) return g_real.aligned_alloc_fn(alignment, size);
  void* block = nullptr;
  return g_real.posix_memalign_fn(&block, alignment, size) == 0 ? block : nullptr;
}

__attribute__((visibility("default"))) void* memalign(size_t alignment, size_t size) {
  count_allocation();
  if (bootstrapping()) return arena_alloc(size, alignment);
  if (g_real.memalign_fn != nullptr) return g_real.memalign_fn(alignment, size);
  void* block = nullptr;
  return g_real.posix_memalign_fn(&block, alignment, size) == 0 ? block : nullptr;
}

__attribute__((visibility("default"))) void* valloc(size_t size) {
  count_allocation();
  const size_t page = 4096;
  if (bootstrapping()) return arena_alloc(size, page);
  if (g_real.valloc_fn != nullptr) return g_real.valloc_fn(size);
  void* block = nullptr;
  return g_real.posix_memalign_fn(&block, page, size) == 0 ? block : nullptr;
}

__attribute__((visibility("default"))) void* pvalloc(size_t size) {
  count_allocation();
  const size_t page = 4096;
  if (bootstrapping()) return arena_alloc((size + page - 1) & ~(page - 1), page);
  if (g_real.pvalloc_fn != nullptr) return g_real.pvalloc_fn(size);
  void* block = nullptr;
  return g_real.posix_memalign_fn(&block, page, (size + page - 1) & ~(page - 1)) == 0 ? block
                                                                                      : nullptr;
}

}  // extern "C"

// --- C++ operator new/delete ------------------------------------------------
// Counted through malloc: a binary linked with another allocator (the
// dataplane and quicload link mimalloc) gets that allocator's own operator
// new, which never calls malloc. These definitions come first in symbol
// lookup (LD_PRELOAD), so every C++ allocation reaches the counted malloc.

namespace {

size_t at_least_one(size_t size) { return size == 0 ? 1 : size; }

void* aligned_or_throw(size_t size, std::align_val_t alignment) {
  const size_t align = std::max(static_cast<size_t>(alignment), sizeof(void*));
  void* block = nullptr;
  if (posix_memalign(&block, align, at_least_one(size)) != 0) throw std::bad_alloc();
  return block;
}

}  // namespace

void* operator new(size_t size) {
  void* block = malloc(at_least_one(size));
  if (block == nullptr) throw std::bad_alloc();
  return block;
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return malloc(at_least_one(size));
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return malloc(at_least_one(size));
}
void* operator new(size_t size, std::align_val_t alignment) {
  return aligned_or_throw(size, alignment);
}
void* operator new[](size_t size, std::align_val_t alignment) {
  return aligned_or_throw(size, alignment);
}
void operator delete(void* block) noexcept { free(block); }
void operator delete[](void* block) noexcept { free(block); }
void operator delete(void* block, size_t) noexcept { free(block); }
void operator delete[](void* block, size_t) noexcept { free(block); }
void operator delete(void* block, std::align_val_t) noexcept { free(block); }
void operator delete[](void* block, std::align_val_t) noexcept { free(block); }
void operator delete(void* block, size_t, std::align_val_t) noexcept { free(block); }
void operator delete[](void* block, size_t, std::align_val_t) noexcept { free(block); }
