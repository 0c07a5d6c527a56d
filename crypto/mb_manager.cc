#include "crypto/mb_manager.h"

#include <stdexcept>
#include <string>

namespace dpquic::crypto {

MbManager::MbManager() {
  manager_ = alloc_mb_mgr(0);
  if (manager_ == nullptr) throw std::runtime_error("ipsec-mb: alloc_mb_mgr failed");
  init_mb_mgr_auto(manager_, &arch_);
  const int error = imb_get_errno(manager_);
  if (error != 0 || arch_ == IMB_ARCH_NONE) {
    free_mb_mgr(manager_);
    manager_ = nullptr;
    throw std::runtime_error(std::string("ipsec-mb: init_mb_mgr_auto failed: ") +
                             (error != 0 ? imb_get_strerror(error) : "no usable architecture"));
  }
}

MbManager::~MbManager() {
  if (manager_ != nullptr) free_mb_mgr(manager_);
}

std::string_view MbManager::arch_name() const {
  switch (arch_) {
    case IMB_ARCH_NOAESNI: return "no-aesni";
    case IMB_ARCH_SSE: return "sse";
    case IMB_ARCH_AVX: return "avx";
    case IMB_ARCH_AVX2: return "avx2";
    case IMB_ARCH_AVX512: return "avx512";
    default: return "none";
  }
}

}  // namespace dpquic::crypto
