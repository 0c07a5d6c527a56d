#pragma once
// Version Negotiation packets (RFC 8999 §6, RFC 9000 §6 and §17.2.1).
//
// Connection IDs here follow the version-independent rules: up to 255 bytes
// each (RFC 8999 §5.1), because a server answers a version it does not know
// and so cannot apply v1's 20-byte limit. They are spans, never copied into a
// ConnectionId.

#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/wire/errors.h"
#include "quic/wire/varint.h"

namespace dpquic::wire {

// A view of the Supported Version fields of a received packet (big-endian
// 32-bit values); nothing is copied.
class VersionList {
 public:
  VersionList() = default;
  // `bytes.size()` must be a multiple of 4 (parse_version_negotiation checks).
  explicit VersionList(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t size() const { return bytes_.size() / 4; }
  bool empty() const { return bytes_.size() < 4; }
  uint32_t operator[](size_t index) const {
    return static_cast<uint32_t>(detail::load_big_endian(bytes_.data() + 4 * index, 4));
  }
  bool contains(uint32_t version) const {
    for (size_t i = 0; i < size(); ++i) {
      if ((*this)[i] == version) return true;
    }
    return false;
  }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::span<const uint8_t> bytes_;
};

struct VersionNegotiationPacket {
  std::span<const uint8_t> dcid;  // 0..255 bytes
  std::span<const uint8_t> scid;  // 0..255 bytes
  VersionList versions;           // at least one entry
};

// Parses a whole Version Negotiation packet (it is never coalesced: it runs to
// the end of the datagram). kDrop if the first byte lacks the long-header bit,
// the version is not 0, anything is truncated, or the version list is empty
// or not a multiple of 4 bytes (RFC 8999 §6).
WireError parse_version_negotiation(std::span<const uint8_t> packet, VersionNegotiationPacket& out);

// The reserved version (form 0x?a?a?a?a, RFC 9000 §15) derived from `entropy`.
uint32_t greased_version(uint64_t entropy);

// Writes a Version Negotiation packet answering a packet that carried
// `received_dcid` and `received_scid`: the IDs are echoed swapped (RFC 8999
// §6). The list is `supported_versions` plus one greased version placed at a
// position chosen by `entropy`, which also picks the unused first-byte bits
// (0x40 is always set, RFC 9000 §17.2.1). Sans-IO code has no RNG, so the
// caller supplies `entropy` (any random 64-bit value). Returns the bytes
// written, or 0 (nothing written) if a CID exceeds 255 bytes,
// `supported_versions` is empty or contains version 0, or the writer is short.
size_t build_version_negotiation(ByteWriter& writer, std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid,
                                 std::span<const uint32_t> supported_versions, uint64_t entropy);

}  // namespace dpquic::wire
