#pragma once
// Removing the protection of one received packet (RFC 9001 §5.3, §5.4), in
// place: header protection and the packet number first, then the AEAD. The
// connection's receive path and the endpoint's check that a first Initial
// opens before it keeps any state both go through here.

#include <cstdint>
#include <optional>
#include <span>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/errors.h"
#include "quic/wire/header.h"

namespace dpquic::conn {

// Unmasks the first byte and packet number of `packet` (as parsed into
// `header`) and decodes the packet number against `largest_received`. kDrop
// if the packet is too short or no mask can be computed; otherwise what
// wire::decode_packet_number_fields says (kProtocolViolation for reserved
// bits, with `fields` filled in: the caller opens the packet first).
inline wire::WireError remove_packet_header_protection(const crypto::MbManager& mb,
                                                       const crypto::HeaderProtectionKey& key,
                                                       std::span<uint8_t> packet,
                                                       const wire::ParsedHeader& header,
                                                       std::optional<uint64_t> largest_received,
                                                       wire::PacketNumberFields& fields) {
  std::span<const uint8_t> sample;
  if (wire::header_protection_sample(packet, header, sample) != wire::WireError::kOk) {
    return wire::WireError::kDrop;
  }
  crypto::HeaderProtectionMask mask;
  if (!crypto::compute_mask(mb, key, sample.data(), mask) ||
      crypto::remove_header_protection(packet, header.packet_number_offset, mask) == 0) {
    return wire::WireError::kDrop;
  }
  return wire::decode_packet_number_fields(packet, header, largest_received, fields);
}

// Opens the payload described by `fields` in place; on success `plaintext`
// is the decrypted frames. Anything but kOk leaves no plaintext behind.
inline crypto::PacketStatus open_packet_payload(const crypto::MbManager& mb,
                                                const crypto::AeadKey& key,
                                                std::span<uint8_t> packet,
                                                const wire::PacketNumberFields& fields,
                                                std::span<const uint8_t>& plaintext) {
  const std::span<uint8_t> body = packet.subspan(fields.payload_offset, fields.payload_size);
  if (body.size() < crypto::kAeadTagLength) return crypto::PacketStatus::kInvalidArgument;
  crypto::OpenOp op;
  op.key = &key;
  op.packet_number = fields.packet_number;
  op.header = packet.first(fields.payload_offset);
  op.ciphertext = body;
  op.out = body.first(body.size() - crypto::kAeadTagLength);
  const crypto::PacketStatus status = crypto::open(mb, op);
  if (status == crypto::PacketStatus::kOk) plaintext = op.out;
  return status;
}

}  // namespace dpquic::conn
