#pragma once
// AES-128-GCM 1-RTT packet keys from a fixed secret, for the benchmarks that
// measure against raw ipsec-mb on the same core.

#include <cstdint>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"

namespace dpquic::bench {

inline bool derive_bench_keys(const crypto::MbManager& mb, crypto::PacketKeys& keys) {
  return keys.derive(mb, crypto::CipherSuite::kAes128Gcm, wire::kVersion1,
                     std::vector<uint8_t>(32, 0x42));
}

}  // namespace dpquic::bench
