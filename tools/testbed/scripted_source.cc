#include "tools/testbed/scripted_source.h"

#include <algorithm>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/version.h"

namespace dpquic::transmit::testing {

namespace {

// Writes CRYPTO frames of the script's crypto data while they fit; true when
// it wrote any.
bool write_crypto_frames(LevelScript& script, PacketPayloadWriter& writer) {
  bool wrote = false;
  while (script.crypto_sent < script.crypto_data.size()) {
    const uint64_t offset = script.crypto_offset + script.crypto_sent;
    const size_t length =
        std::min<size_t>(script.crypto_data.size() - script.crypto_sent,
                         wire::max_crypto_data_length(writer.remaining(), offset));
    if (length == 0 ||
        !writer.write_crypto_frame(offset, script.crypto_data, script.crypto_sent, length)) {
      break;
    }
    script.crypto_sent += length;
    wrote = true;
  }
  return wrote;
}

// Writes STREAM frames of the script's stream data while they fit, within
// its per-frame and per-packet limits; true when it wrote any.
bool write_stream_frames(LevelScript& script, PacketPayloadWriter& writer) {
  size_t stream_frames = 0;
  while (script.stream_sent < script.stream_data.size() &&
         (script.max_stream_frames_per_packet == 0 ||
          stream_frames < script.max_stream_frames_per_packet)) {
    const uint64_t offset = script.stream_offset + script.stream_sent;
    size_t length = std::min<size_t>(
        script.stream_data.size() - script.stream_sent,
        wire::max_stream_data_length(writer.remaining(), script.stream_id, offset, false));
    if (script.max_stream_frame != 0) length = std::min(length, script.max_stream_frame);
    // With a Length field the frame may carry a byte or two less.
    while (length > 0 &&
           !writer.write_stream_frame(
               script.stream_id, offset,
               script.stream_fin && script.stream_sent + length == script.stream_data.size(),
               script.stream_data, script.stream_sent, length)) {
      --length;
    }
    if (length == 0) break;
    script.stream_sent += length;
    ++stream_frames;
  }
  return stream_frames > 0;
}

}  // namespace

bool ScriptedSource::has_ack_eliciting(const LevelScript& script) const {
  return script.ping || script.crypto_sent < script.crypto_data.size() ||
         script.stream_sent < script.stream_data.size();
}

bool ScriptedSource::next_packet(EncryptionLevel level, const SendAllowance& allowance,
                                 PacketHeader& header) {
  const LevelScript& script = levels_[static_cast<size_t>(level)];
  if (script.keys == nullptr) return false;
  if (!script.ack && !script.close && !(allowance.ack_eliciting && has_ack_eliciting(script))) {
    return false;
  }
  // The builder reuses the header object: set every field of the form used
  // (see transmit_source.h), without value-initialising the whole header.
  header.keys = script.keys;
  if (level == EncryptionLevel::kApplication) {
    header.long_header = false;
    header.short_fields =
        wire::ShortHeaderFields{.dcid = dcid_,
                                .packet_number = script.next_packet_number,
                                .packet_number_length = script.packet_number_length,
                                .largest_acked = script.largest_acked};
    return true;
  }
  header.long_header = true;
  header.long_fields = wire::LongHeaderFields{
      .version = wire::kVersion1,
      .type = level == EncryptionLevel::kInitial     ? wire::PacketType::kInitial
              : level == EncryptionLevel::kHandshake ? wire::PacketType::kHandshake
                                                     : wire::PacketType::kZeroRtt,
      .dcid = dcid_,
      .scid = scid_,
      .packet_number = script.next_packet_number,
      .packet_number_length = script.packet_number_length};
  return true;
}

PacketContents ScriptedSource::write_frames(EncryptionLevel level, PacketPayloadWriter& writer,
                                            const SendAllowance& allowance) {
  LevelScript& script = levels_[static_cast<size_t>(level)];
  PacketContents contents;
  if (script.ack) {
    const wire::AckRange range{script.ack_smallest, script.ack_largest};
    if (wire::encode_ack_frame(writer.frames(), {&range, 1}, 0)) script.ack = false;
  }
  if (script.close) {
    wire::Frame close;
    close.type = wire::FrameType::kConnectionCloseTransport;
    close.connection_close = wire::ConnectionCloseFrame{script.close_error, 0, {}};
    if (wire::encode_frame(writer.frames(), close)) {
      script.close = false;
      contents.connection_close = true;
    }
  } else if (allowance.ack_eliciting) {
    if (script.ping && writer.frames().write_u8(0x01)) {
      script.ping = false;
      contents.ack_eliciting = true;
    }
    if (write_crypto_frames(script, writer)) contents.ack_eliciting = true;
    if (write_stream_frames(script, writer)) contents.ack_eliciting = true;
  }
  contents.in_flight = contents.ack_eliciting;
  // RFC 9000 §14.1: a client pads every Initial datagram, a server those with
  // ack-eliciting Initial packets.
  contents.needs_initial_padding = level == EncryptionLevel::kInitial &&
                                   (role_ == wire::Role::kClient || contents.ack_eliciting) &&
                                   writer.written() > 0;
  if (writer.written() > 0) ++script.next_packet_number;
  return contents;
}

}  // namespace dpquic::transmit::testing
