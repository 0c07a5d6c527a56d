// Packet sealing cost on one core: our seal plus header protection (single
// packets and bursts of 32) against raw ipsec-mb AES-128-GCM and BoringSSL's
// EVP_AEAD_CTX_seal, on the same payloads. Every variant does the same AEAD
// work: a 13-byte short header as associated data, the payload, a 16-byte
// tag; ours adds the header protection mask and its application.
//
// Target: burst seal + HP <= 1.15x the raw ipsec-mb time per
// packet. The run pins itself to the core it starts on.
#include <benchmark/benchmark.h>
#include <openssl/aead.h>
#include <sched.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"

namespace {

using namespace dpquic::crypto;

constexpr size_t kHeaderLength = 13;  // flags, 8-byte DCID, 4-byte packet number
constexpr size_t kBurst = 32;
constexpr uint8_t kFirstByte = 0x43;  // short header, 4-byte packet number

size_t payload_length(size_t packet_size) { return packet_size - kHeaderLength - kAeadTagLength; }

struct Fixture {
  MbManager mb;
  PacketKeys keys;
  KeyMaterial material;

  Fixture() {
    const std::vector<uint8_t> secret(32, 0x42);
    if (!derive_key_material(CipherSuite::kAes128Gcm, dpquic::wire::kVersion1, secret, material) ||
        !keys.install(mb, material)) {
      std::abort();
    }
  }
};

Fixture& fixture() {
  static Fixture instance;
  return instance;
}

// Packet buffers laid out as they will be in mbufs: header, then payload,
// then room for the tag.
std::vector<std::vector<uint8_t>> make_packets(size_t count, size_t packet_size) {
  std::vector<std::vector<uint8_t>> packets(count, std::vector<uint8_t>(packet_size, 0x5a));
  for (auto& packet : packets) {
    packet[0] = kFirstByte;
  }
  return packets;
}

// ns_per_packet and Gbps are reported through benchmark's rate counters, so
// the console shows them as "...s" and ".../s": read them as plain ns and Gbps.
void set_counters(benchmark::State& state, size_t packets_per_iteration, size_t packet_size) {
  const double packets = static_cast<double>(state.iterations() * packets_per_iteration);
  state.SetItemsProcessed(static_cast<int64_t>(packets));
  state.SetBytesProcessed(static_cast<int64_t>(packets * packet_size));
  state.counters["ns_per_packet"] =
      benchmark::Counter(packets / 1e9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["Gbps"] =
      benchmark::Counter(packets * packet_size * 8 / 1e9, benchmark::Counter::kIsRate);
}

void BM_OurSealHp_Single(benchmark::State& state) {
  Fixture& f = fixture();
  const size_t size = static_cast<size_t>(state.range(0));
  auto packets = make_packets(1, size);
  const std::vector<uint8_t> stream(payload_length(size), 0x17);
  uint64_t packet_number = 0;
  for (auto _ : state) {
    packets[0][0] = kFirstByte;  // a fresh header each time, as when sending
    const ProtectOp op{&f.keys, packet_number++, packets[0], kHeaderLength, stream};
    if (protect(f.mb, op) != PacketStatus::kOk) state.SkipWithError("protect failed");
    benchmark::DoNotOptimize(packets[0].data());
  }
  set_counters(state, 1, size);
}

void BM_OurSealHp_Burst32(benchmark::State& state) {
  Fixture& f = fixture();
  const size_t size = static_cast<size_t>(state.range(0));
  auto packets = make_packets(kBurst, size);
  // Out of place, as stream data will be: from a send buffer into the packet.
  const std::vector<uint8_t> stream(payload_length(size) * kBurst, 0x17);
  std::array<ProtectOp, kBurst> ops;
  std::array<PacketStatus, kBurst> status;
  uint64_t packet_number = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i) {
      packets[i][0] = kFirstByte;
      ops[i] = ProtectOp{&f.keys, packet_number++, packets[i], kHeaderLength,
                         std::span(stream).subspan(i * payload_length(size), payload_length(size))};
    }
    if (protect_burst(f.mb, ops, status) != kBurst) state.SkipWithError("protect failed");
    benchmark::DoNotOptimize(packets[kBurst - 1].data());
  }
  set_counters(state, kBurst, size);
}

// Seal alone (no header protection), burst of 32: how much HP adds.
void BM_OurSealOnly_Burst32(benchmark::State& state) {
  Fixture& f = fixture();
  const size_t size = static_cast<size_t>(state.range(0));
  auto packets = make_packets(kBurst, size);
  const std::vector<uint8_t> stream(payload_length(size) * kBurst, 0x17);
  std::array<SealOp, kBurst> ops;
  std::array<PacketStatus, kBurst> status;
  uint64_t packet_number = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i) {
      const std::span<uint8_t> packet(packets[i]);
      ops[i] = SealOp{&f.keys.aead(), packet_number++, packet.first(kHeaderLength),
                      std::span(stream).subspan(i * payload_length(size), payload_length(size)),
                      packet.subspan(kHeaderLength)};
    }
    if (seal_burst(f.mb, ops, status) != kBurst) state.SkipWithError("seal failed");
    benchmark::DoNotOptimize(packets[kBurst - 1].data());
  }
  set_counters(state, kBurst, size);
}

// ipsec-mb's direct AES-128-GCM call with the same key data, nonce
// derivation included, out of place like ours: the floor we measure against.
void BM_RawImbAes128GcmEnc(benchmark::State& state) {
  Fixture& f = fixture();
  const size_t size = static_cast<size_t>(state.range(0));
  auto packets = make_packets(kBurst, size);
  const std::vector<uint8_t> stream(payload_length(size) * kBurst, 0x17);
  struct gcm_context_data context;
  AeadNonce nonce;
  uint64_t packet_number = 0;
  IMB_MGR* manager = f.mb.get();
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i) {
      uint8_t* packet = packets[i].data();
      f.keys.aead().nonce(packet_number++, nonce);
      IMB_AES128_GCM_ENC(manager, &f.keys.aead().gcm(), &context, packet + kHeaderLength,
                         stream.data() + i * payload_length(size), payload_length(size),
                         nonce.data(), packet, kHeaderLength,
                         packet + kHeaderLength + payload_length(size), kAeadTagLength);
    }
    benchmark::DoNotOptimize(packets[kBurst - 1].data());
  }
  set_counters(state, kBurst, size);
}

void BM_BoringSslAes128GcmSeal(benchmark::State& state) {
  Fixture& f = fixture();
  const size_t size = static_cast<size_t>(state.range(0));
  auto packets = make_packets(kBurst, size);
  const std::vector<uint8_t> stream(payload_length(size) * kBurst, 0x17);
  EVP_AEAD_CTX ctx;
  if (EVP_AEAD_CTX_init(&ctx, EVP_aead_aes_128_gcm(), f.material.key.data(), 16, kAeadTagLength,
                        nullptr) != 1) {
    state.SkipWithError("EVP_AEAD_CTX_init failed");
    return;
  }
  AeadNonce nonce;
  uint64_t packet_number = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i) {
      uint8_t* packet = packets[i].data();
      f.keys.aead().nonce(packet_number++, nonce);
      size_t written = 0;
      EVP_AEAD_CTX_seal(&ctx, packet + kHeaderLength, &written, size - kHeaderLength, nonce.data(),
                        nonce.size(), stream.data() + i * payload_length(size),
                        payload_length(size), packet, kHeaderLength);
    }
    benchmark::DoNotOptimize(packets[kBurst - 1].data());
  }
  EVP_AEAD_CTX_cleanup(&ctx);
  set_counters(state, kBurst, size);
}

// Header protection masks alone, 32 samples: one ECB job for all of them
// (compute_masks) against one-block AES per sample (compute_mask).
void BM_HpMasks_EcbJob32(benchmark::State& state) {
  Fixture& f = fixture();
  std::vector<uint8_t> samples(16 * kBurst, 0x33);
  std::array<MaskRequest, kBurst> requests;
  std::array<HeaderProtectionMask, kBurst> masks;
  for (size_t i = 0; i < kBurst; ++i) requests[i] = {&f.keys.header_protection(), &samples[16 * i]};
  for (auto _ : state) {
    if (!compute_masks(f.mb, requests, masks)) state.SkipWithError("masks failed");
    benchmark::DoNotOptimize(masks.data());
  }
  set_counters(state, kBurst, 16);
}

void BM_HpMasks_OneBlock32(benchmark::State& state) {
  Fixture& f = fixture();
  std::vector<uint8_t> samples(16 * kBurst, 0x33);
  std::array<HeaderProtectionMask, kBurst> masks;
  for (auto _ : state) {
    for (size_t i = 0; i < kBurst; ++i) {
      compute_mask(f.mb, f.keys.header_protection(), &samples[16 * i], masks[i]);
    }
    benchmark::DoNotOptimize(masks.data());
  }
  set_counters(state, kBurst, 16);
}

BENCHMARK(BM_HpMasks_EcbJob32);
BENCHMARK(BM_HpMasks_OneBlock32);
BENCHMARK(BM_OurSealHp_Single)->Arg(1200)->Arg(1400);
BENCHMARK(BM_OurSealHp_Burst32)->Arg(1200)->Arg(1400);
BENCHMARK(BM_OurSealOnly_Burst32)->Arg(1200)->Arg(1400);
BENCHMARK(BM_RawImbAes128GcmEnc)->Arg(1200)->Arg(1400);
BENCHMARK(BM_BoringSslAes128GcmSeal)->Arg(1200)->Arg(1400);

}  // namespace

int main(int argc, char** argv) {
  // Same core for every variant: pin to the CPU we start on.
  const int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (cpu >= 0 && sched_setaffinity(0, sizeof(set), &set) == 0) {
    std::printf("pinned to cpu %d; ipsec-mb arch %s\n", cpu,
                std::string(fixture().mb.arch_name()).c_str());
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
