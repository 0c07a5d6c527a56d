// ACK processing: the XOR method (process_ack) against a range walk
// (process_ack_range_walk) on the same ACK frames, for windows of 64, 1024
// and 16384 packets in flight.
//
// Pattern: W packets in flight; each ACK acknowledges the oldest K of them
// except every packet numbered 7 mod 8 (reordered: the next ACK covers it),
// and repeats ranges down to 256 below the window (duplicates the peer sends
// until it sees an ACK of its ACK); then K new packets are sent. K = 2 (an
// ACK every two packets) and K = W / 4 (a large ACK). Each iteration is one
// ACK plus the K sends that refill the window, so both methods carry the same
// send cost. The frames are parsed once up front; every 256 ACKs the ring is
// rebuilt with timing paused.
//
// ns_per_ack is printed with an "s" unit: read it as plain ns.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "quic/recovery/ack_processing.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/varint.h"
#include "tools/testbed/allocation_counter.h"

namespace {

using namespace dpquic::recovery;
using dpquic::wire::AckRange;
using dpquic::wire::AckRangeView;

constexpr uint64_t kCycle = 256;  // ACKs per rebuilt ring
constexpr uint64_t kDuplicateSpan = 256;

class Counter final : public NewlyAckedVisitor {
 public:
  void on_newly_acked(uint64_t packet_number, const SentPacket& packet) override {
    ++count;
    checksum += packet_number + packet.size;
  }
  uint64_t count = 0;
  uint64_t checksum = 0;
};

struct Frames {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<AckRangeView> views;
};

// The kCycle ACK frames of the pattern, for window W and K per ACK.
Frames make_frames(uint64_t window, uint64_t k) {
  Frames frames;
  frames.bytes.resize(kCycle);
  for (uint64_t i = 0; i < kCycle; ++i) {
    const uint64_t first = i * k;  // the oldest block
    const uint64_t top = first + k - 1;
    const uint64_t lo = first > kDuplicateSpan ? first - kDuplicateSpan : 0;
    std::vector<AckRange> ranges;  // descending
    uint64_t high = top;
    for (uint64_t pn = top + 1; pn-- > first;) {
      if (pn % 8 != 7) continue;
      if (pn < high) ranges.push_back({pn + 1, high});
      high = pn - 1;
      if (pn == first) break;
    }
    if (high + 1 > lo && high >= lo) ranges.push_back({lo, high});
    std::vector<uint8_t>& bytes = frames.bytes[i];
    bytes.resize(16 + 16 * ranges.size());
    dpquic::wire::ByteWriter writer(bytes);
    if (!dpquic::wire::encode_ack_ranges(writer, ranges)) std::abort();
    bytes.resize(writer.position());
  }
  for (uint64_t i = 0; i < kCycle; ++i) {
    dpquic::wire::ByteReader reader(frames.bytes[i]);
    AckRangeView view;
    const uint64_t top = i * k + k - 1;
    if (AckRangeView::parse(reader, top, view) != dpquic::wire::WireError::kOk) std::abort();
    frames.views.push_back(view);
  }
  (void)window;
  return frames;
}

void fill(SentPackets& sent, uint64_t first, uint64_t end) {
  for (uint64_t pn = first; pn < end; ++pn) {
    sent.insert(pn, SentPacket{pn * 1000, static_cast<uint32_t>(pn), 1200, true, true});
  }
}

template <bool kXor>
void BM_Ack(benchmark::State& state) {
  const uint64_t window = static_cast<uint64_t>(state.range(0));
  const uint64_t k = state.range(1) == 0 ? 2 : window / 4;
  const Frames frames = make_frames(window, k);
  SentPacketPool pool;
  AckXorBuffer buffer;
  Counter counter;
  auto sent = std::make_unique<SentPackets>(pool);
  fill(*sent, 0, window);
  uint64_t i = 0, errors = 0;
  // Warm-up: one cycle, so pool and buffer have their sizes.
  for (; i < kCycle; ++i) {
    AckSummary summary;
    errors += kXor ? process_ack(frames.views[i], *sent, buffer, counter, summary) !=
                         dpquic::wire::WireError::kOk
                   : process_ack_range_walk(frames.views[i], *sent, counter, summary) !=
                         dpquic::wire::WireError::kOk;
    fill(*sent, window + i * k, window + (i + 1) * k);
  }
  const dpquic::testing::AllocationWindow allocation_window;
  const uint64_t allocations_before = allocation_window.count();
  uint64_t rebuild_allocations = 0;  // the paused rebuilds' own (new SentPackets)
  for (auto _ : state) {
    const uint64_t step = i % kCycle;
    if (step == 0) {
      state.PauseTiming();
      const uint64_t before_rebuild = allocation_window.count();
      sent.reset();
      sent = std::make_unique<SentPackets>(pool);
      fill(*sent, 0, window);
      rebuild_allocations += allocation_window.count() - before_rebuild;
      state.ResumeTiming();
    }
    AckSummary summary;
    errors += kXor ? process_ack(frames.views[step], *sent, buffer, counter, summary) !=
                         dpquic::wire::WireError::kOk
                   : process_ack_range_walk(frames.views[step], *sent, counter, summary) !=
                         dpquic::wire::WireError::kOk;
    fill(*sent, window + step * k, window + (step + 1) * k);
    ++i;
  }
  const uint64_t allocations = allocation_window.count() - allocations_before - rebuild_allocations;
  benchmark::DoNotOptimize(counter.checksum);
  if (errors != 0) state.SkipWithError("an ACK was rejected");
  const double acks = static_cast<double>(state.iterations());
  state.counters["ns_per_ack"] =
      benchmark::Counter(acks / 1e9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["newly_per_ack"] = static_cast<double>(counter.count) / (acks + kCycle);
  state.counters["allocs_per_ack"] = static_cast<double>(allocations) / acks;
}

void Args(benchmark::internal::Benchmark* b) {
  for (const int64_t window : {64, 1024, 16384}) {
    b->Args({window, 0});
    b->Args({window, 1});
  }
  b->ArgNames({"window", "large_ack"});
}

BENCHMARK_TEMPLATE(BM_Ack, true)->Apply(Args)->Name("BM_AckXor");
BENCHMARK_TEMPLATE(BM_Ack, false)->Apply(Args)->Name("BM_AckRangeWalk");

}  // namespace

BENCHMARK_MAIN();
