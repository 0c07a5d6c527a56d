// Fuzzes ACK generation with the packet numbers, ack-eliciting flags and ECN
// marks a hostile peer chooses: the input is a sequence of received packets
// and ACK writes. Every ACK frame written must decode with the wire decoder,
// carry its ranges largest first, report only packet numbers that were
// received, and never report one twice; duplicates must change nothing.
#include <cstdint>
#include <cstdlib>
#include <set>

#include "quic/recovery/ack_tracker.h"
#include "quic/time.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/varint.h"

namespace {

using namespace dpquic;
using recovery::AckTracker;
using recovery::AckTrackerConfig;

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wire::ByteReader input({data, size});
  uint8_t setup = 0;
  if (!input.read_u8(setup)) return 0;
  AckTrackerConfig config;
  config.space = static_cast<wire::PacketNumberSpace>(setup % 3);
  config.ack_eliciting_threshold = (setup >> 2) & 3;
  config.ack_delay_exponent = static_cast<uint8_t>((setup >> 4) % 21);
  config.max_ranges = 1 + (setup >> 4);  // 1..16
  AckTracker tracker(config);
  std::set<uint64_t> received;  // every packet number accepted, ever
  Instant now = kSecond;
  uint64_t largest = 0;
  uint8_t op = 0;
  while (input.read_u8(op)) {
    now += (op & 7) * kMillisecond;
    if ((op & 0xc0) != 0xc0) {
      // A received packet, numbered relative to the largest so far (a
      // varint from the input, below or above it).
      uint64_t delta = 0;
      if (!input.read_varint(delta)) return 0;
      const bool below = (op & 0x20) != 0;
      const uint64_t packet_number =
          below ? (delta > largest ? 0 : largest - delta) : largest + (delta & 0xffff);
      const bool was_duplicate = tracker.is_duplicate(packet_number);
      const bool duplicate =
          tracker.on_packet_received(now, packet_number, (op & 0x08) != 0, (op >> 3) & 3);
      check(duplicate == was_duplicate);
      // A number received before is always refused the second time.
      if (received.count(packet_number) != 0) check(duplicate);
      if (!duplicate) {
        received.insert(packet_number);
        largest = packet_number > largest ? packet_number : largest;
        check(tracker.received().contains(packet_number));
      }
    } else if ((op & 0x20) == 0) {
      // Write an ACK into a buffer of input-chosen size, then decode it.
      uint8_t room = 0;
      if (!input.read_u8(room)) return 0;
      uint8_t buffer[256];
      wire::ByteWriter writer({buffer, room});
      const size_t written = tracker.write_ack_frame(writer, now);
      check(written <= room);
      if (written == 0) continue;
      wire::ByteReader reader({buffer, written});
      wire::Frame frame;
      check(wire::decode_frame(reader, frame) == wire::WireError::kOk);
      check(reader.empty());
      check(frame.type == wire::FrameType::kAck || frame.type == wire::FrameType::kAckEcn);
      uint64_t previous_smallest = UINT64_MAX;
      for (const wire::AckRange& range : frame.ack.ranges) {
        check(range.largest < previous_smallest);
        previous_smallest = range.smallest;
        // Only received numbers: every one of the (bounded) range.
        for (uint64_t pn = range.smallest; pn <= range.largest && pn - range.smallest < 4096;
             ++pn) {
          check(received.count(pn) != 0);
        }
      }
      const uint64_t acknowledged = tracker.on_ack_sent(now);
      check(acknowledged == frame.ack.ranges.largest());
      if (op & 0x10) tracker.on_ack_frame_acknowledged(acknowledged);
    } else {
      // The timer: a deadline, when set, is never in the past of the last
      // packet that armed it by more than max_ack_delay.
      const Instant deadline = tracker.ack_deadline();
      if (deadline != kNever) check(deadline <= now + config.max_ack_delay);
      check(tracker.ack_required(now) == (deadline <= now));
    }
  }
  return 0;
}
