#pragma once
// A sealer without cryptography, for tests and benchmarks of the builder
// alone: each payload segment is moved into place, a fixed 16-byte tag is
// written after it, and the header is left unprotected. Never in a
// production target.

#include <cstring>
#include <span>

#include "crypto/aead_gather.h"
#include "quic/transmit/packet_sealer.h"

namespace dpquic::transmit::testing {

inline constexpr uint8_t kNullTagByte = 0xa7;

class NullSealer final : public PacketSealer {
 public:
  size_t seal(std::span<const crypto::GatherProtectOp> packets,
              std::span<crypto::PacketStatus> status) override {
    if (status.size() < packets.size()) return 0;
    for (size_t i = 0; i < packets.size(); ++i) {
      const crypto::GatherProtectOp& op = packets[i];
      for (const crypto::GatherSegment& segment : op.payload) {
        if (segment.in != segment.out && segment.length != 0) {
          std::memcpy(segment.out, segment.in, segment.length);
        }
      }
      std::memset(op.packet.data() + op.packet.size() - crypto::kAeadTagLength, kNullTagByte,
                  crypto::kAeadTagLength);
      status[i] = crypto::PacketStatus::kOk;
    }
    return packets.size();
  }
};

}  // namespace dpquic::transmit::testing
