#pragma once
// One ipsec-mb multi-buffer manager per core. It holds the job queue and
// the per-architecture function table (SSE/AVX2/AVX-512 picked at start-up by
// init_mb_mgr_auto), so it is created once per engine thread, never per
// packet, and is used by that thread only: it is not thread-safe.

#include <intel-ipsec-mb.h>

#include <cstddef>
#include <string_view>

namespace dpquic::crypto {

// Bursts are processed in chunks of this many packets; per-chunk state lives
// in fixed arrays on the stack, so there is no allocation per burst.
inline constexpr size_t kMaxBurst = 64;

class MbManager {
 public:
  // Allocates and initialises the manager for the best architecture this CPU
  // supports. Throws std::runtime_error if ipsec-mb cannot be set up (start-up
  // only).
  MbManager();
  ~MbManager();
  MbManager(const MbManager&) = delete;
  MbManager& operator=(const MbManager&) = delete;

  IMB_MGR* get() const { return manager_; }
  IMB_ARCH arch() const { return arch_; }
  std::string_view arch_name() const;

 private:
  IMB_MGR* manager_ = nullptr;
  IMB_ARCH arch_ = IMB_ARCH_NONE;
};

}  // namespace dpquic::crypto
