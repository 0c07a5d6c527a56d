#include "tests/quic/transmit/packet_reader.h"

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/wire/coalesced.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"

namespace dpquic::transmit::testing {

std::vector<wire::Frame> OpenedPacket::frames(bool* ok) const {
  std::vector<wire::Frame> out;
  wire::FrameDecoder decoder(payload);
  while (!decoder.done()) {
    wire::Frame frame;
    if (decoder.next(frame) != wire::WireError::kOk) {
      if (ok != nullptr) *ok = false;
      return {};
    }
    out.push_back(frame);
  }
  if (ok != nullptr) *ok = true;
  return out;
}

namespace {

const crypto::PacketKeys* keys_for(wire::PacketType type, const ReaderKeys& keys) {
  switch (type) {
    case wire::PacketType::kInitial: return keys.initial;
    case wire::PacketType::kHandshake: return keys.handshake;
    case wire::PacketType::kZeroRtt: return keys.zero_rtt;
    case wire::PacketType::kOneRtt: return keys.one_rtt;
    default: return nullptr;
  }
}

}  // namespace

bool open_datagram(const crypto::MbManager& mb, std::span<const uint8_t> datagram,
                   size_t local_cid_length, const ReaderKeys& keys,
                   std::vector<OpenedPacket>& packets) {
  std::vector<uint8_t> copy(datagram.begin(), datagram.end());
  wire::DatagramSplitter splitter(copy, local_cid_length);
  wire::CoalescedPacket coalesced;
  while (splitter.next(coalesced)) {
    const crypto::PacketKeys* packet_keys = keys_for(coalesced.header.type, keys);
    if (packet_keys == nullptr) return false;
    std::span<uint8_t> packet(copy.data() + coalesced.offset, coalesced.bytes.size());
    std::span<const uint8_t> sample;
    if (wire::header_protection_sample(coalesced.bytes, coalesced.header, sample) !=
        wire::WireError::kOk) {
      return false;
    }
    crypto::HeaderProtectionMask mask;
    if (!crypto::compute_mask(mb, packet_keys->header_protection(), sample.data(), mask) ||
        crypto::remove_header_protection(packet, coalesced.header.packet_number_offset, mask) ==
            0) {
      return false;
    }
    wire::PacketNumberFields fields;
    if (wire::decode_packet_number_fields(packet, coalesced.header, std::nullopt, fields) !=
        wire::WireError::kOk) {
      return false;
    }
    OpenedPacket opened;
    opened.type = coalesced.header.type;
    opened.packet_number = fields.packet_number;
    opened.offset = coalesced.offset;
    opened.size = coalesced.bytes.size();
    opened.payload.resize(fields.payload_size - crypto::kAeadTagLength);
    const crypto::OpenOp op{
        &packet_keys->aead(), fields.packet_number, packet.first(fields.payload_offset),
        packet.subspan(fields.payload_offset, fields.payload_size), opened.payload};
    if (crypto::open(mb, op) != crypto::PacketStatus::kOk) return false;
    packets.push_back(std::move(opened));
  }
  return splitter.error() == wire::WireError::kOk && splitter.remaining() == 0;
}

}  // namespace dpquic::transmit::testing
