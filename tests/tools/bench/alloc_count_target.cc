// Target program for alloc_preload_test.sh: makes an exact number of heap
// allocations between known points so the test can check the counter.
//
//   alloc_count_target N MODE
// MODE is "malloc" (malloc/calloc/realloc/posix_memalign mix, N calls) or
// "new" (operator new, N calls). The program allocates N blocks, raises
// SIGUSR1 (the mark signal in the test), allocates N more, raises SIGUSR2
// (the dump signal), copies the report named by DPQUIC_ALLOC_REPORT to
// REPORT.dump without allocating, allocates N more and exits.

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace {

// Called through volatile pointers so the compiler cannot elide the
// allocation and free pairs.
void* (*volatile g_malloc)(size_t) = std::malloc;
void* (*volatile g_calloc)(size_t, size_t) = std::calloc;
void* (*volatile g_realloc)(void*, size_t) = std::realloc;
int (*volatile g_posix_memalign)(void**, size_t, size_t) = posix_memalign;
void (*volatile g_free)(void*) = std::free;
void* (*volatile g_new)(std::size_t) = ::operator new;
void (*volatile g_delete)(void*) noexcept = ::operator delete;

// N allocation calls, each freed right away.
void allocate(long n, bool use_new) {
  for (long i = 0; i < n; ++i) {
    if (use_new) {
      g_delete(g_new(static_cast<std::size_t>(32 + i % 256)));
      continue;
    }
    void* block = nullptr;
    switch (i % 4) {
      case 0: block = g_malloc(static_cast<size_t>(16 + i % 512)); break;
      case 1: block = g_calloc(4, static_cast<size_t>(8 + i % 64)); break;
      case 2:
        block = g_realloc(nullptr, 100);  // realloc(NULL, n) allocates.
        break;
      case 3:
        if (g_posix_memalign(&block, 64, 256) != 0) block = nullptr;
        break;
    }
    if (block == nullptr) std::abort();
    g_free(block);
  }
}

// Copies the report with plain syscalls: no allocation after the dump. A
// missing report (no preload) is not an error; the test checks for the copy.
bool copy_report(const char* path) {
  char target[4200];
  const int written = std::snprintf(target, sizeof(target), "%s.dump", path);
  if (written <= 0 || static_cast<size_t>(written) >= sizeof(target)) return false;
  const int in = open(path, O_RDONLY);
  if (in < 0) return errno == ENOENT;
  char buffer[512];
  const ssize_t length = read(in, buffer, sizeof(buffer));
  close(in);
  if (length <= 0) return false;
  const int out = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) return false;
  const bool ok = write(out, buffer, static_cast<size_t>(length)) == length;
  close(out);
  return ok;
}

// Without the preload nothing handles the signals: ignore them rather than
// die. A handler installed by the preload is left alone.
void ignore_if_unhandled(int signal_number) {
  struct sigaction current;
  if (sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(signal_number, SIG_IGN);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[2], "malloc") != 0 && std::strcmp(argv[2], "new") != 0)) {
    std::fprintf(stderr, "usage: alloc_count_target N malloc|new\n");
    return 2;
  }
  const long n = std::strtol(argv[1], nullptr, 10);
  const bool use_new = std::strcmp(argv[2], "new") == 0;
  const char* report = std::getenv("DPQUIC_ALLOC_REPORT");
  ignore_if_unhandled(SIGUSR1);
  ignore_if_unhandled(SIGUSR2);
  // Any stdio buffer is set up before the counted phases.
  std::printf("alloc_count_target: %ld %s\n", n, argv[2]);
  std::fflush(stdout);

  allocate(n, use_new);
  raise(SIGUSR1);
  allocate(n, use_new);
  raise(SIGUSR2);
  if (report != nullptr && !copy_report(report)) {
    std::fprintf(stderr, "alloc_count_target: cannot copy the report\n");
    return 1;
  }
  allocate(n, use_new);
  return 0;
}
