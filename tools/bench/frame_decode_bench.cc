// Frame decoding of a typical 1-RTT packet payload (an ACK with a few ranges
// plus one STREAM frame filling the packet to 1200 bytes) against a plain
// memcpy of the same bytes. Decoding is zero-copy, so the stream data itself
// is never touched: the cost is the headers and the ACK ranges.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "quic/wire/frame_codec.h"

namespace {

using namespace dpquic::wire;

constexpr size_t kPayloadSize = 1200;

// ACK of four ranges, then STREAM (OFF, no LEN) to the end of the payload.
std::vector<uint8_t> typical_payload() {
  std::vector<uint8_t> payload(kPayloadSize);
  ByteWriter writer(payload);
  const AckRange ranges[] = {{10'400, 10'420}, {10'380, 10'397}, {10'300, 10'360}, {9'000, 10'250}};
  if (!encode_ack_frame(writer, ranges, 1'250)) std::abort();
  const uint64_t stream_id = 4, offset = 1'234'567;
  const uint64_t data_length = max_stream_data_length(writer.remaining(), stream_id, offset, false);
  if (!encode_stream_frame_header(writer, stream_id, offset, data_length, false, false) ||
      !writer.fill(0x5a, data_length) || writer.remaining() != 0)
    std::abort();
  return payload;
}

void BM_DecodeTypicalPacket(benchmark::State& state) {
  const std::vector<uint8_t> payload = typical_payload();
  uint64_t frames = 0;
  for (auto _ : state) {
    FrameDecoder decoder(payload);
    Frame frame;
    while (!decoder.done()) {
      if (decoder.next(frame) != WireError::kOk) std::abort();
      ++frames;
      benchmark::DoNotOptimize(frame);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload.size()));
  state.counters["frames_per_sec"] =
      benchmark::Counter(static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["packets_per_sec"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeTypicalPacket);

// The same, also walking the ACK's ranges as recovery would.
void BM_DecodeTypicalPacketAndAckRanges(benchmark::State& state) {
  const std::vector<uint8_t> payload = typical_payload();
  uint64_t frames = 0;
  for (auto _ : state) {
    FrameDecoder decoder(payload);
    Frame frame;
    uint64_t acked = 0;
    while (!decoder.done()) {
      if (decoder.next(frame) != WireError::kOk) std::abort();
      ++frames;
      if (frame.type == FrameType::kAck) {
        for (const AckRange& range : frame.ack.ranges) acked += range.largest - range.smallest + 1;
      }
      benchmark::DoNotOptimize(frame);
    }
    benchmark::DoNotOptimize(acked);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload.size()));
  state.counters["frames_per_sec"] =
      benchmark::Counter(static_cast<double>(frames), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeTypicalPacketAndAckRanges);

void BM_MemcpyTypicalPacket(benchmark::State& state) {
  const std::vector<uint8_t> payload = typical_payload();
  std::vector<uint8_t> out(payload.size());
  for (auto _ : state) {
    std::memcpy(out.data(), payload.data(), payload.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload.size()));
  state.counters["packets_per_sec"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemcpyTypicalPacket);

}  // namespace

BENCHMARK_MAIN();
