// Burst building cost on one core: cycles per datagram for bursts of 32
// datagrams (1200-byte GSO segments) of 1-RTT STREAM data, each with an ACK,
// from a refcounted chunk.
// - BM_BurstNullSeal: the builder alone (the non-crypto share of the send
//   path): a null sealer moves the stream bytes into place and writes a fixed
//   tag; no AEAD, no header protection.
// - BM_BurstAes128Gcm: the same with the real sealer (AES-128-GCM gather seal
//   straight from the chunk, header protection) on ipsec-mb.
// - BM_RawIpsecMbAes128Gcm: the floor, on the same core in the same run:
//   ipsec-mb's direct AES-128-GCM call sealing the same 32 payloads (1200-byte
//   packets, contiguous plaintext), with no header protection and no framing.
// Counters: cycles_per_datagram (rdtsc around the measured work) and
// datagrams/s.
#include <benchmark/benchmark.h>
#include <intel-ipsec-mb.h>
#include <sched.h>
#include <x86intrin.h>

#include <array>
#include <memory>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/wire/version.h"
#include "tools/bench/bench_keys.h"
#include "tools/testbed/null_sealer.h"
#include "tools/testbed/scripted_source.h"

namespace {

using namespace dpquic;
using namespace dpquic::transmit;

constexpr uint8_t kDcid[] = {1, 2, 3, 4, 5, 6, 7, 8};
constexpr size_t kSegment = 1200;
constexpr size_t kDatagrams = 32;

void pin_to_current_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sched_getcpu(), &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void run_bursts(benchmark::State& state, PacketSealer& sealer, const crypto::MbManager& mb) {
  pin_to_current_core();
  crypto::PacketKeys keys;
  if (!bench::derive_bench_keys(mb, keys)) {
    state.SkipWithError("key derivation failed");
    return;
  }
  auto builder = std::make_unique<BurstBuilder>(sealer);
  ChunkPool pool(64 * 1024, 1);
  // Exactly 32 full datagrams of stream data (with the ACK in the first).
  std::vector<uint8_t> data(kDatagrams * 1171 - 16);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  const Chunk chunk = pool.copy_from(data);

  testing::ScriptedSource source(wire::Role::kServer, kDcid, {});
  auto& app = source.level(crypto::EncryptionLevel::kApplication);
  app.keys = &keys;
  app.stream_id = 0;
  app.stream_data = chunk;
  std::vector<uint8_t> buffer(kDatagrams * kSegment);
  std::array<uint8_t*, kDatagrams> slices;
  lend_gso_buffer(buffer.data(), kSegment, slices);
  const BurstBuffers buffers{slices, kSegment, kSegment, BurstMode::kGsoTrain};

  BurstDescriptor out;
  uint64_t cycles = 0;
  uint64_t datagrams = 0;
  uint64_t round = 0;
  for (auto _ : state) {
    source.clear_sent();
    app.ack = true;
    app.ack_largest = round;
    app.stream_sent = 0;
    app.stream_offset = round * data.size();
    ++round;
    const uint64_t start = __rdtsc();
    const BurstStatus status = builder->build(source, buffers, {}, out);
    cycles += __rdtsc() - start;
    if (status != BurstStatus::kOk || out.datagram_count != kDatagrams) {
      state.SkipWithError("burst not built");
      return;
    }
    datagrams += out.datagram_count;
    benchmark::DoNotOptimize(buffer.data());
  }
  state.counters["cycles_per_datagram"] =
      benchmark::Counter(static_cast<double>(cycles) / static_cast<double>(datagrams));
  state.counters["datagrams"] =
      benchmark::Counter(static_cast<double>(datagrams), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(datagrams * kSegment));
}

void BM_BurstNullSeal(benchmark::State& state) {
  crypto::MbManager mb;
  testing::NullSealer sealer;
  run_bursts(state, sealer, mb);
}
BENCHMARK(BM_BurstNullSeal);

void BM_BurstAes128Gcm(benchmark::State& state) {
  crypto::MbManager mb;
  CryptoPacketSealer sealer(mb);
  run_bursts(state, sealer, mb);
}
BENCHMARK(BM_BurstAes128Gcm);

void BM_RawIpsecMbAes128Gcm(benchmark::State& state) {
  pin_to_current_core();
  crypto::MbManager mb;
  crypto::PacketKeys keys;
  if (!bench::derive_bench_keys(mb, keys)) {
    state.SkipWithError("key derivation failed");
    return;
  }
  // A short header with an 8-byte DCID and a 2-byte packet number, as the
  // builder writes them here.
  constexpr size_t kHeader = 11;
  constexpr size_t kPayload = kSegment - kHeader - crypto::kAeadTagLength;
  std::vector<uint8_t> plaintext(kDatagrams * kPayload, 0x17);
  std::vector<uint8_t> buffer(kDatagrams * kSegment, 0x40);
  struct gcm_context_data context;
  crypto::AeadNonce nonce;
  uint64_t packet_number = 0;
  uint64_t cycles = 0;
  uint64_t datagrams = 0;
  for (auto _ : state) {
    const uint64_t start = __rdtsc();
    for (size_t i = 0; i < kDatagrams; ++i) {
      uint8_t* packet = buffer.data() + i * kSegment;
      keys.aead().nonce(packet_number++, nonce);
      IMB_AES128_GCM_ENC(mb.get(), &keys.aead().gcm(), &context, packet + kHeader,
                         plaintext.data() + i * kPayload, kPayload, nonce.data(), packet, kHeader,
                         packet + kHeader + kPayload, crypto::kAeadTagLength);
    }
    cycles += __rdtsc() - start;
    datagrams += kDatagrams;
    benchmark::DoNotOptimize(buffer.data());
  }
  state.counters["cycles_per_datagram"] =
      benchmark::Counter(static_cast<double>(cycles) / static_cast<double>(datagrams));
  state.counters["datagrams"] =
      benchmark::Counter(static_cast<double>(datagrams), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(datagrams * kSegment));
}
BENCHMARK(BM_RawIpsecMbAes128Gcm);

}  // namespace

BENCHMARK_MAIN();
