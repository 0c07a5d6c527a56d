#pragma once
// Sealing a built burst: AEAD over each packet's gather segments, the tag
// after them, then header protection. Behind an interface so tests and
// benchmarks can measure the builder alone with a null cipher; production
// uses CryptoPacketSealer with the core's ipsec-mb manager.

#include <cstddef>
#include <span>

#include "crypto/aead_burst.h"
#include "crypto/aead_gather.h"
#include "crypto/mb_manager.h"

namespace dpquic::transmit {

class PacketSealer {
 public:
  virtual ~PacketSealer() = default;
  // Protects every packet; status.size() >= packets.size(). Returns how many
  // succeeded.
  virtual size_t seal(std::span<const crypto::GatherProtectOp> packets,
                      std::span<crypto::PacketStatus> status) = 0;
};

class CryptoPacketSealer final : public PacketSealer {
 public:
  explicit CryptoPacketSealer(const crypto::MbManager& mb) : mb_(mb) {}
  size_t seal(std::span<const crypto::GatherProtectOp> packets,
              std::span<crypto::PacketStatus> status) override {
    return crypto::protect_gather_burst(mb_, packets, status);
  }

 private:
  const crypto::MbManager& mb_;
};

}  // namespace dpquic::transmit
