#include "quic/wire/version_negotiation.h"

#include "quic/wire/header.h"
#include "quic/wire/version.h"

namespace dpquic::wire {

namespace {

// splitmix64's finalizer: spreads every input bit over the output, so a
// caller's counter or weak value still yields varied grease.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool read_invariant_cid(ByteReader& reader, std::span<const uint8_t>& out) {
  uint8_t length = 0;
  return reader.read_u8(length) && reader.read_bytes(length, out);
}

}  // namespace

WireError parse_version_negotiation(std::span<const uint8_t> packet,
                                    VersionNegotiationPacket& out) {
  out = VersionNegotiationPacket{};
  ByteReader reader(packet);
  uint8_t first = 0;
  uint32_t version = 0;
  VersionNegotiationPacket parsed;
  if (!reader.read_u8(first) || (first & kHeaderFormBit) == 0 || !reader.read_u32(version) ||
      version != kVersionNegotiationVersion || !read_invariant_cid(reader, parsed.dcid) ||
      !read_invariant_cid(reader, parsed.scid)) {
    return WireError::kDrop;
  }
  if (reader.remaining() == 0 || reader.remaining() % 4 != 0) return WireError::kDrop;
  parsed.versions = VersionList(reader.rest());
  out = parsed;
  return WireError::kOk;
}

uint32_t greased_version(uint64_t entropy) {
  // Keep the high nibble of each byte random and force the low nibble to 0xa.
  return (static_cast<uint32_t>(mix(entropy)) & 0xf0f0f0f0u) | 0x0a0a0a0au;
}

size_t build_version_negotiation(ByteWriter& writer, std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid,
                                 std::span<const uint32_t> supported_versions, uint64_t entropy) {
  if (received_dcid.size() > kMaxInvariantConnectionIdLength ||
      received_scid.size() > kMaxInvariantConnectionIdLength || supported_versions.empty()) {
    return 0;
  }
  for (const uint32_t version : supported_versions) {
    if (version == kVersionNegotiationVersion) return 0;
  }
  const size_t count = supported_versions.size() + 1;
  const size_t size = 1 + 4 + 1 + received_scid.size() + 1 + received_dcid.size() + 4 * count;
  if (writer.remaining() < size) return 0;

  const uint64_t bits = mix(entropy ^ 0x5bd1e995u);
  const uint8_t first = kHeaderFormBit | kFixedBit | static_cast<uint8_t>(bits & 0x3f);
  const size_t grease_at = static_cast<size_t>((bits >> 8) % count);
  const uint32_t grease = greased_version(entropy);
  // Room was checked above, so none of these writes can fail.
  bool ok = writer.write_u8(first) && writer.write_u32(kVersionNegotiationVersion) &&
            writer.write_u8(static_cast<uint8_t>(received_scid.size())) &&
            writer.write_bytes(received_scid) &&
            writer.write_u8(static_cast<uint8_t>(received_dcid.size())) &&
            writer.write_bytes(received_dcid);
  for (size_t i = 0, next = 0; ok && i < count; ++i) {
    ok = writer.write_u32(i == grease_at ? grease : supported_versions[next++]);
  }
  return ok ? size : 0;
}

}  // namespace dpquic::wire
