#pragma once
// open_descriptors(): how many descriptors the process has open.
//
// NoFreeDescriptors: lowers the process's open-file limit (RLIMIT_NOFILE) so that no new
// descriptor can be opened, for tests of what code does on EMFILE; the old
// limit comes back when this goes out of scope. Keep gtest assertions
// outside its lifetime: a failing one may need a descriptor.
//
// The hard limit is lowered with the soft one, so that nothing can undo it
// by raising the soft limit to the hard one (as dataplane's start-up does),
// where the process may raise a hard limit back (root outside a sandbox).
// Elsewhere (an unprivileged user, Bazel's sandbox) that could not be
// undone at the end, and only the soft limit is lowered: hard_lowered()
// says which. Nothing these tests run raises a limit; a test starting
// dataplane itself lowers both in the process it starts it from.

#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

namespace dpquic::testing {

// The entries of /proc/self/fd (the listing's own descriptor included).
inline size_t open_descriptors() {
  DIR* directory = ::opendir("/proc/self/fd");
  if (directory == nullptr) return 0;
  size_t count = 0;
  while (const dirent* entry = ::readdir(directory)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(directory);
  return count;
}

// Whether this process may raise its hard RLIMIT_NOFILE back after lowering
// it (CAP_SYS_RESOURCE in the initial user namespace: a sandbox's user
// namespace grants the capability but not this). Tried in a child process,
// so this one keeps its limits whatever the answer.
inline bool may_raise_hard_limits() {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == 0) ::_exit(1);
    rlimit lowered = limit;
    lowered.rlim_max = limit.rlim_max - 1;
    lowered.rlim_cur = std::min(limit.rlim_cur, lowered.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) ::_exit(1);
    ::_exit(::setrlimit(RLIMIT_NOFILE, &limit) == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class NoFreeDescriptors {
 public:
  NoFreeDescriptors() {
    const bool lower_hard = may_raise_hard_limits();
    ok_ = ::getrlimit(RLIMIT_NOFILE, &saved_) == 0;
    // The lowest free descriptor number: the limit set to it refuses every
    // new one.
    const int lowest_free = ::dup(0);
    if (lowest_free < 0) {
      ok_ = false;
      return;
    }
    ::close(lowest_free);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
    if (lower_hard) lowered.rlim_max = lowered.rlim_cur;
    ok_ = ok_ && ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
    hard_lowered_ = ok_ && lower_hard;
  }
  ~NoFreeDescriptors() {
    if (ok_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  NoFreeDescriptors(const NoFreeDescriptors&) = delete;
  NoFreeDescriptors& operator=(const NoFreeDescriptors&) = delete;

  // False if the limit could not be lowered (the test cannot run).
  bool ok() const { return ok_; }
  // Whether the hard limit was lowered too.
  bool hard_lowered() const { return hard_lowered_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
  bool hard_lowered_ = false;
};

}  // namespace dpquic::testing
