#include "quic/conn/cid_generator.h"

#include <array>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace dpquic::conn {

void CidGenerator::validate(const CidLayout& layout) {
  if (layout.server_id.size() > CidLayout::kMaxServerIdLength) {
    throw std::invalid_argument("CidLayout: server_id longer than 15 bytes");
  }
  if (layout.config_rotation >= CidLayout::kUnroutableConfigRotation) {
    throw std::invalid_argument("CidLayout: config_rotation must be 0..6");
  }
  if (layout.cid_length < CidLayout::kMinCidLength ||
      layout.cid_length > wire::kMaxConnectionIdLength) {
    throw std::invalid_argument("CidLayout: cid_length must be 8..20");
  }
  if (1 + layout.server_id.size() + 1 + CidLayout::kMinNonceLength > layout.cid_length) {
    throw std::invalid_argument("CidLayout: cid_length leaves fewer than 4 nonce bytes");
  }
}

uint8_t CidGenerator::first_octet(const CidLayout& layout) {
  return static_cast<uint8_t>(layout.config_rotation << 5 | (layout.cid_length - 1));
}

CidGenerator::CidGenerator(CidLayout layout, uint8_t core_id, RandomSource& random)
    : layout_(std::move(layout)), core_id_(core_id), random_(random) {
  validate(layout_);
}

wire::ConnectionId CidGenerator::generate() {
  std::array<uint8_t, wire::kMaxConnectionIdLength> bytes;
  const size_t sid_length = layout_.server_id.size();
  bytes[0] = first_octet(layout_);
  if (sid_length != 0) std::memcpy(bytes.data() + 1, layout_.server_id.data(), sid_length);
  bytes[1 + sid_length] = core_id_;
  const size_t nonce_offset = 2 + sid_length;
  random_.fill(std::span<uint8_t>(bytes.data() + nonce_offset, layout_.cid_length - nonce_offset));
  return wire::ConnectionId(std::span<const uint8_t>(bytes.data(), layout_.cid_length));
}

std::optional<uint8_t> CidGenerator::core_of(std::span<const uint8_t> cid,
                                             const CidLayout& layout) {
  const size_t sid_length = layout.server_id.size();
  // A layout that could not have generated anything names no core (and the
  // checks below could not read out of bounds for it).
  if (layout.cid_length < 2 + sid_length + CidLayout::kMinNonceLength) return std::nullopt;
  if (cid.size() != layout.cid_length) return std::nullopt;
  if (cid[0] != first_octet(layout)) return std::nullopt;
  if (sid_length != 0 && std::memcmp(cid.data() + 1, layout.server_id.data(), sid_length) != 0) {
    return std::nullopt;
  }
  return cid[1 + sid_length];
}

}  // namespace dpquic::conn
