// Fuzzes ACK processing, the receive path's handling of a peer's ACK frames:
// the input is a program of sends (with skipped packet numbers), losses and
// ACK frames whose range sections come straight from the input bytes. Two
// identical sent-packet rings process every ACK, one with the XOR method and
// one with the range walk; both must agree on the verdict, on the packets
// newly acknowledged and on every observable of the ring afterwards.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/errors.h"
#include "quic/wire/varint.h"

namespace {

using namespace dpquic::recovery;
using dpquic::wire::AckRangeView;
using dpquic::wire::ByteReader;
using dpquic::wire::WireError;

void check(bool condition) {
  if (!condition) std::abort();
}

class Recorder final : public NewlyAckedVisitor {
 public:
  void on_newly_acked(uint64_t packet_number, const SentPacket& packet) override {
    acked.push_back(packet_number);
    bytes += packet.size;
  }
  std::vector<uint64_t> acked;
  uint64_t bytes = 0;
};

void check_same(const SentPackets& a, const SentPackets& b) {
  check(a.size() == b.size());
  check(a.bytes_in_flight() == b.bytes_in_flight());
  check(a.ack_eliciting_in_flight() == b.ack_eliciting_in_flight());
  check(a.largest_sent() == b.largest_sent());
  check(a.window_begin() == b.window_begin());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small rings so growth, wrap-around and the pool bound are all reached.
  SentPacketPool pool_xor(64, 4096);
  SentPacketPool pool_walk(64, 4096);
  SentPackets xor_ring(pool_xor);
  SentPackets walk_ring(pool_walk);
  AckXorBuffer buffer;
  ByteReader input({data, size});
  uint64_t next = 0;
  uint8_t op = 0;
  while (input.read_u8(op)) {
    switch (op % 4) {
      case 0: {  // send 1..16 packets, some after a skipped number
        uint8_t count = 0;
        if (!input.read_u8(count)) return 0;
        for (int i = 0; i <= (count & 15); ++i) {
          if ((count >> 4) & 1 && i == 0) ++next;  // skip one number
          const SentPacket packet{next * 7, static_cast<uint32_t>(next),
                                  static_cast<uint16_t>(20 + (next % 1300)), (next % 3) != 0,
                                  (next % 5) != 0};
          const bool stored = xor_ring.insert(next, packet);
          check(stored == walk_ring.insert(next, packet));
          if (stored) ++next;
        }
        break;
      }
      case 1: {  // an ACK frame: Largest Acknowledged near the largest sent
        uint8_t delta = 0;
        if (!input.read_u8(delta)) return 0;
        const uint64_t base = next == 0 ? 0 : next - 1;
        const uint64_t largest =
            delta < 128 ? (base > delta ? base - delta : 0) : base + (delta - 128) / 32;
        AckRangeView ranges;
        if (AckRangeView::parse(input, largest, ranges) != WireError::kOk) return 0;
        Recorder xor_seen, walk_seen;
        AckSummary xor_summary, walk_summary;
        const WireError xor_error = process_ack(ranges, xor_ring, buffer, xor_seen, xor_summary);
        const WireError walk_error =
            process_ack_range_walk(ranges, walk_ring, walk_seen, walk_summary);
        check(xor_error == walk_error);
        check(xor_error == WireError::kOk || xor_error == WireError::kProtocolViolation);
        check(xor_seen.acked == walk_seen.acked);
        check(xor_summary.newly_acked == walk_summary.newly_acked);
        check(xor_summary.newly_acked == xor_seen.acked.size());
        if (xor_summary.newly_acked != 0) {
          check(xor_summary.largest_newly_acked == walk_summary.largest_newly_acked);
          check(xor_summary.largest_newly_acked == xor_seen.acked.back());
        }
        // A rejected ACK changes nothing; an accepted one leaves no acked
        // packet behind.
        if (xor_error != WireError::kOk) check(xor_seen.acked.empty());
        for (const dpquic::wire::AckRange& range : ranges) {
          for (const SentPackets::Entry entry : xor_ring.range(range.smallest, range.largest + 1)) {
            check(xor_error != WireError::kOk);
            (void)entry;
          }
        }
        break;
      }
      case 2: {  // declare one packet lost
        uint8_t offset = 0;
        if (!input.read_u8(offset)) return 0;
        const uint64_t packet_number = xor_ring.window_begin() + offset;
        check(xor_ring.remove(packet_number).has_value() ==
              walk_ring.remove(packet_number).has_value());
        break;
      }
      default:  // lookups, including far outside the window
        for (const uint64_t probe :
             {uint64_t{0}, next, next + 1, uint64_t{1} << 62, ~uint64_t{0}}) {
          check(xor_ring.contains(probe) == walk_ring.contains(probe));
          check(xor_ring.never_sent(probe) == walk_ring.never_sent(probe));
        }
        break;
    }
    check_same(xor_ring, walk_ring);
  }
  return 0;
}
