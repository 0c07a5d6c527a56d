#pragma once
// Test-only receive path: opens every packet of a datagram with the real
// keys (header protection removed, AEAD opened) and decodes its frames, so
// tests can check what the burst builder wrote.

#include <cstdint>
#include <span>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"

namespace dpquic::transmit::testing {

struct ReaderKeys {
  const crypto::PacketKeys* initial = nullptr;
  const crypto::PacketKeys* handshake = nullptr;
  const crypto::PacketKeys* zero_rtt = nullptr;
  const crypto::PacketKeys* one_rtt = nullptr;
};

struct OpenedPacket {
  wire::PacketType type = wire::PacketType::kInitial;
  uint64_t packet_number = 0;
  size_t offset = 0;             // in the datagram
  size_t size = 0;               // on the wire
  std::vector<uint8_t> payload;  // decrypted

  // The payload's frames; PADDING runs are single frames. Empty with
  // ok = false if the payload does not decode.
  std::vector<wire::Frame> frames(bool* ok = nullptr) const;
};

// Opens every packet of `datagram`; false if any packet fails to parse or
// open, or bytes are left over.
bool open_datagram(const crypto::MbManager& mb, std::span<const uint8_t> datagram,
                   size_t local_cid_length, const ReaderKeys& keys,
                   std::vector<OpenedPacket>& packets);

}  // namespace dpquic::transmit::testing
