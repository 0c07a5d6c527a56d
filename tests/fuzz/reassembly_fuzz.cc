// Fuzzes stream reassembly (quic/conn/receive_stream + receive_buffer) with a
// script of STREAM frames, reads, RESET_STREAM, STOP_SENDING and window
// updates, checked against a simple model: every verdict (flow control,
// final size, too many gaps), every byte read (byte at offset o is
// pattern(o), so duplicates and overlaps must agree), the FIN, the received
// ranges (and the invariants of the tree that holds them) and the blocks
// held.
//
// Input: byte 0 configures (max gaps 1..16, initial window 1..8 KiB); then
// operations, each an opcode byte and its arguments:
//   op 0/1 STREAM:  offset u16 (bit 6 of the opcode: near 2^62), length u8
//                   (bit 3: x16), FIN = bit 7
//   op 2   read:    u8, up to 1 + 16 * u8 bytes
//   op 3   peek + consume u8 bytes
//   op 4   RESET_STREAM: final size u16
//   op 5   STOP_SENDING
//   op 6   MAX_STREAM_DATA sent if due
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <span>
#include <vector>

#include "quic/conn/block_pool.h"
#include "quic/conn/range_tree.h"
#include "quic/conn/receive_stream.h"

namespace {

using dpquic::conn::RangeTree;
using dpquic::conn::ReceiveStream;
using dpquic::conn::ReceiveStreamState;
using dpquic::conn::TransportError;
using dpquic::wire::TransportErrorCode;

constexpr uint64_t kMaxOffset = (uint64_t{1} << 62) - 1;
constexpr size_t kBlockSize = 4096;

void check(bool condition) {
  if (!condition) std::abort();
}

uint8_t pattern(uint64_t offset) {
  return static_cast<uint8_t>((offset * 131 + (offset >> 8)) ^ 0x5a);
}

class Script {
 public:
  explicit Script(std::span<const uint8_t> input) : input_(input) {}
  bool empty() const { return position_ >= input_.size(); }
  uint8_t u8() { return position_ < input_.size() ? input_[position_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }

 private:
  std::span<const uint8_t> input_;
  size_t position_ = 0;
};

// What the stream should hold: the contiguous end and the received ranges
// beyond it (sorted, disjoint, non-adjacent), as ReceiveBuffer keeps them.
struct Model {
  uint64_t read_offset = 0;
  uint64_t contiguous_end = 0;
  std::map<uint64_t, uint64_t> ranges;  // start -> end
  uint64_t highest = 0;
  bool final_known = false;
  uint64_t final_size = 0;
  bool reset = false;
  bool reset_reported = false;
  bool stopped = false;

  bool all_received() const { return final_known && contiguous_end == final_size; }
  bool receiving() const { return !reset && !all_received(); }

  // The ranges after storing [start, end), or false if that leaves more
  // than max_gaps holes (then nothing changes).
  // The buffer holds exactly `ranges`, in a valid tree.
  bool matches(const RangeTree& tree) const {
    auto expected = ranges.begin();
    bool same = tree.valid();
    tree.for_each([&](const RangeTree::Range& r) {
      same = same && expected != ranges.end() && expected->first == r.start &&
             expected->second == r.end;
      if (expected != ranges.end()) ++expected;
    });
    return same && expected == ranges.end();
  }

  bool insert(uint64_t start, uint64_t end, size_t max_gaps) {
    start = std::max(start, contiguous_end);
    if (start >= end) return true;
    std::map<uint64_t, uint64_t> next = ranges;
    uint64_t new_contiguous = contiguous_end;
    // Merge with every range touching [start, end].
    auto it = next.lower_bound(start);
    if (it != next.begin() && std::prev(it)->second >= start) --it;
    while (it != next.end() && it->first <= end) {
      start = std::min(start, it->first);
      end = std::max(end, it->second);
      it = next.erase(it);
    }
    if (start <= new_contiguous) {
      new_contiguous = end;
    } else {
      next.emplace(start, end);
    }
    if (next.size() > max_gaps) return false;
    ranges = std::move(next);
    contiguous_end = new_contiguous;
    return true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Script script(std::span<const uint8_t>(data, size));
  const uint8_t config = script.u8();
  const size_t max_gaps = 1 + (config & 0x0f);
  const uint64_t initial_window = uint64_t{1024} << ((config >> 4) & 3);
  const uint64_t max_window = initial_window * 8;
  // Room for the whole window plus a block either side: never out of memory.
  dpquic::conn::BlockPool pool(kBlockSize, 4, max_window / kBlockSize + 4);
  ReceiveStream stream(pool, initial_window, max_window, max_gaps);
  Model model;
  dpquic::Instant now = dpquic::kSecond;
  std::vector<uint8_t> payload(255 * 16);
  std::vector<uint8_t> out(1 + 255 * 16);

  for (int steps = 0; steps < 4096 && !script.empty(); ++steps) {
    const uint8_t opcode = script.u8();
    now += dpquic::kMillisecond;
    switch (opcode % 7) {
      case 0:
      case 1: {
        uint64_t offset = script.u16();
        if (opcode & 0x40) offset = kMaxOffset - 4096 + (offset & 0x1fff);
        const size_t length = script.u8() * ((opcode & 0x08) ? 16u : 1u);
        const bool fin = (opcode & 0x80) != 0;
        for (size_t i = 0; i < length; ++i) payload[i] = pattern(offset + i);
        const uint64_t end = offset + length;
        const uint64_t limit = stream.window().limit();
        // The expected verdict, in the order RFC 9000 §4.5 / §4.1 apply.
        TransportErrorCode expected = TransportErrorCode::kNoError;
        if (end > kMaxOffset) {
          expected = TransportErrorCode::kFlowControlError;
        } else if (model.final_known &&
                   (end > model.final_size || (fin && end != model.final_size))) {
          expected = TransportErrorCode::kFinalSizeError;
        } else if (!model.final_known && fin && end < model.highest) {
          expected = TransportErrorCode::kFinalSizeError;
        } else if (end > limit) {
          expected = TransportErrorCode::kFlowControlError;
        } else if (model.receiving() && length > 0 && !model.insert(offset, end, max_gaps)) {
          expected = TransportErrorCode::kProtocolViolation;
        }
        uint64_t newly_received = 0;
        const TransportError error = stream.on_stream_frame(
            offset, std::span<const uint8_t>(payload.data(), length), fin, newly_received);
        check(error.code == expected);
        if (error) {
          check(newly_received == 0);
          break;
        }
        check(newly_received == (end > model.highest ? end - model.highest : 0));
        model.highest = std::max(model.highest, end);
        if (fin) {
          model.final_known = true;
          model.final_size = end;
        }
        if (model.stopped && !model.reset) model.read_offset = model.contiguous_end;
        break;
      }
      case 2: {
        const size_t want = 1 + size_t{script.u8()} * 16;
        bool fin = false;
        const size_t n =
            stream.read(std::span<uint8_t>(out.data(), want), fin, now, 10 * dpquic::kMillisecond);
        if (model.reset || model.stopped) {
          check(n == 0 && !fin);
          if (model.reset) model.reset_reported = true;
          break;
        }
        check(n == std::min<uint64_t>(want, model.contiguous_end - model.read_offset));
        for (size_t i = 0; i < n; ++i) check(out[i] == pattern(model.read_offset + i));
        model.read_offset += n;
        check(fin == (model.all_received() && model.read_offset == model.final_size));
        break;
      }
      case 3: {
        bool fin = true;
        const std::span<const uint8_t> piece = stream.peek(fin);
        const size_t want = script.u8();
        if (model.reset || model.stopped) {
          check(piece.empty() && !fin);
          check(stream.consume(want, fin, now, 10 * dpquic::kMillisecond) == 0 && !fin);
          if (model.reset) model.reset_reported = true;
          break;
        }
        check(piece.size() <= model.contiguous_end - model.read_offset);
        check(piece.empty() == (model.contiguous_end == model.read_offset));
        check(fin ==
              (model.all_received() && model.read_offset + piece.size() == model.final_size));
        for (size_t i = 0; i < piece.size(); ++i) check(piece[i] == pattern(model.read_offset + i));
        const size_t n = std::min<size_t>(piece.size(), want);
        check(stream.consume(n, fin, now, 10 * dpquic::kMillisecond) == n);
        model.read_offset += n;
        check(fin == (model.all_received() && model.read_offset == model.final_size));
        break;
      }
      case 4: {
        const uint64_t final_size = script.u16();
        TransportErrorCode expected = TransportErrorCode::kNoError;
        if (model.final_known && final_size != model.final_size) {
          expected = TransportErrorCode::kFinalSizeError;
        } else if (!model.final_known && final_size < model.highest) {
          expected = TransportErrorCode::kFinalSizeError;
        } else if (final_size > stream.window().limit()) {
          expected = TransportErrorCode::kFlowControlError;
        }
        uint64_t newly_received = 0;
        const TransportError error = stream.on_reset_stream(7, final_size, newly_received);
        check(error.code == expected);
        if (error) break;
        check(newly_received == (final_size > model.highest ? final_size - model.highest : 0));
        model.highest = std::max(model.highest, final_size);
        const bool ignored = model.reset || model.all_received();
        model.final_known = true;
        model.final_size = final_size;
        if (!ignored) {
          model.reset = true;
          check(stream.reset_received() && stream.reset_error_code() == 7);
        }
        break;
      }
      case 5:
        stream.stop_sending(9);
        if (!model.stopped && !model.reset) model.read_offset = model.contiguous_end;
        model.stopped = true;
        check(stream.stopped() && !stream.readable());
        break;
      case 6:
        if (stream.window().update_due()) {
          const uint64_t next = stream.window().next_limit();
          check(next >= stream.window().limit());
          stream.window().on_update_sent(next);
        }
        break;
    }
    // Invariants after every operation.
    check(stream.highest_received() == model.highest);
    check(stream.final_size_known() == model.final_known);
    if (model.final_known) check(stream.final_size() == model.final_size);
    check(stream.highest_received() <= stream.window().limit() || model.reset);
    const auto& buffer = stream.buffer();
    check(buffer.gap_count() <= max_gaps);
    check(buffer.read_offset() <= buffer.contiguous_end());
    if (!model.reset) {
      check(buffer.read_offset() == model.read_offset);
      check(buffer.contiguous_end() == model.contiguous_end);
      check(buffer.gap_count() == model.ranges.size());
      check(model.matches(buffer.ranges()));
      const uint64_t held_end = std::max(model.highest, buffer.read_offset());
      const uint64_t span_blocks =
          held_end == buffer.read_offset()
              ? 0
              : (held_end - 1) / kBlockSize - buffer.read_offset() / kBlockSize + 1;
      check(buffer.blocks_held() <= span_blocks);
    } else {
      check(model.reset_reported ? stream.state() == ReceiveStreamState::kResetRead
                                 : stream.state() == ReceiveStreamState::kResetRecvd);
      check(buffer.blocks_held() == 0);
    }
  }
  return 0;
}
