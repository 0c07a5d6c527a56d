// Fuzzes the frame decoder: every frame decoded from the input is checked
// against the validity tables for every packet type, re-encoded, decoded
// again, and must come back with the same fields. Nothing may read past the
// input.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frame_validity.h"
#include "quic/wire/frames.h"

namespace {

using namespace dpquic::wire;

void check(bool condition) {
  if (!condition) std::abort();
}

void check_validity(FrameType type) {
  // Every frame may appear in 1-RTT packets; none in Retry or VN; the rest
  // must be a definite yes or PROTOCOL_VIOLATION.
  check(check_frame_allowed(type, PacketType::kOneRtt) == WireError::kOk);
  check(check_frame_allowed(type, PacketType::kRetry) == WireError::kProtocolViolation);
  check(check_frame_allowed(type, PacketType::kVersionNegotiation) ==
        WireError::kProtocolViolation);
  for (PacketType packet : {PacketType::kInitial, PacketType::kHandshake, PacketType::kZeroRtt}) {
    const WireError error = check_frame_allowed(type, packet);
    check(error == WireError::kOk || error == WireError::kProtocolViolation);
    // A server is never more permissive than the table.
    if (error != WireError::kOk) check(check_frame_allowed(type, packet, Role::kServer) == error);
    check(check_frame_allowed(type, packet, Role::kClient) == error);
  }
  // RFC 9002 §2: in flight means ack-eliciting or PADDING.
  check(counts_in_flight(type) == (is_ack_eliciting(type) || type == FrameType::kPadding));
}

void check_round_trip(const Frame& frame, std::span<const uint8_t> original) {
  // Re-encoding uses minimal varints, so it is never longer than the input:
  // an exactly input-sized buffer must do.
  std::vector<uint8_t> out(original.size());
  ByteWriter writer(out);
  check(encode_frame(writer, frame));
  check(writer.position() <= original.size());
  ByteReader reader(writer.written());
  Frame again;
  check(decode_frame(reader, again) == WireError::kOk);
  check(reader.empty());
  check(same_frame(frame, again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  ByteReader reader(input);
  Frame frame;
  while (!reader.empty()) {
    const size_t start = reader.position();
    const WireError error = decode_frame(reader, frame);
    if (error != WireError::kOk) {
      check(error == WireError::kFrameEncodingError || error == WireError::kProtocolViolation);
      break;
    }
    check(reader.position() > start);
    check_validity(frame.type);
    check_round_trip(frame, input.subspan(start, reader.position() - start));
  }
  return 0;
}
