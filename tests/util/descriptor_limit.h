#pragma once
// Lowers the process's open-file limit (RLIMIT_NOFILE, soft) so that no new
// descriptor can be opened, for tests of what code does on EMFILE; the old
// limit comes back when this goes out of scope. Keep gtest assertions
// outside its lifetime: a failing one may need a descriptor.

#include <sys/resource.h>
#include <unistd.h>

namespace dpquic::testing {

class NoFreeDescriptors {
 public:
  NoFreeDescriptors() {
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
    ok_ = ok_ && ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~NoFreeDescriptors() {
    if (ok_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  NoFreeDescriptors(const NoFreeDescriptors&) = delete;
  NoFreeDescriptors& operator=(const NoFreeDescriptors&) = delete;

  // False if the limit could not be lowered (the test cannot run).
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

}  // namespace dpquic::testing
