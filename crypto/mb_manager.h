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

class PacketProtectionOverride;  // crypto/protection_override.h (fuzzing only)

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

  // Fuzz targets only (see crypto/protection_override.h): every AEAD and
  // header protection operation run on this manager goes to `replacement`
  // instead, until it is set back to null. Production never sets it, so the
  // checks for it are never-taken branches. Set before any key is used, not
  // while a connection is half through its packets.
  void set_protection_override(const PacketProtectionOverride* replacement) {
    override_ = replacement;
  }
  const PacketProtectionOverride* protection_override() const { return override_; }

 private:
  IMB_MGR* manager_ = nullptr;
  IMB_ARCH arch_ = IMB_ARCH_NONE;
  const PacketProtectionOverride* override_ = nullptr;
};

}  // namespace dpquic::crypto
