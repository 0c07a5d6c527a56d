// Varint codec throughput against a plain memcpy of the same bytes: the codec
// sits under every frame parser, so its cost relative to touching the bytes
// at all is what matters.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "quic/wire/varint.h"

namespace {

using dpquic::wire::ByteReader;
using dpquic::wire::ByteWriter;

// A mix of lengths typical of frames: mostly 1- and 2-byte values (types,
// lengths, stream IDs), some 4-byte offsets and a few 8-byte ones.
std::vector<uint64_t> typical_values(size_t count) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> values(count);
  for (auto& value : values) {
    const uint64_t pick = rng() % 100;
    const uint64_t bits = pick < 50 ? 6 : pick < 80 ? 14 : pick < 97 ? 30 : 62;
    value = rng() & ((uint64_t{1} << bits) - 1);
  }
  return values;
}

std::vector<uint8_t> encode_all(const std::vector<uint64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  ByteWriter writer(bytes);
  for (uint64_t value : values) {
    if (!writer.write_varint(value)) std::abort();
  }
  bytes.resize(writer.position());
  return bytes;
}

void BM_VarintDecode(benchmark::State& state) {
  const auto bytes = encode_all(typical_values(4096));
  for (auto _ : state) {
    ByteReader reader(bytes);
    uint64_t sum = 0, value = 0;
    while (reader.read_varint(value)) sum += value;
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * 4096));
}
BENCHMARK(BM_VarintDecode);

void BM_VarintEncode(benchmark::State& state) {
  const auto values = typical_values(4096);
  std::vector<uint8_t> out(values.size() * 8);
  for (auto _ : state) {
    ByteWriter writer(out);
    for (uint64_t value : values) benchmark::DoNotOptimize(writer.write_varint(value));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * values.size()));
}
BENCHMARK(BM_VarintEncode);

void BM_MemcpySameBytes(benchmark::State& state) {
  const auto bytes = encode_all(typical_values(4096));
  std::vector<uint8_t> out(bytes.size());
  for (auto _ : state) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_MemcpySameBytes);

}  // namespace

BENCHMARK_MAIN();
