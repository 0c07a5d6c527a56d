// Per-packet CPU cost of the whole endpoint, with null I/O: a server
// endpoint streams a perf download to a client endpoint in the same thread;
// datagrams go from one's poll_transmit straight into the other's
// handle_datagram (no sockets, no simulator, real TLS 1.3 and AES-128-GCM).
// Counters, from rdtsc around each side's calls:
// - send_cycles_per_packet: the server's poll_transmit (burst building,
//   sealing, recovery bookkeeping, stream scheduling) per data packet;
// - receive_cycles_per_packet: the client's handle_datagram (header and
//   packet protection removal, frame parsing, reassembly, ACK tracking) per
//   data packet; with the second argument 1, handle_datagrams per burst
//   (one AEAD burst per run of packets);
// - app_read_cycles_per_packet: the test application reading the bytes in
//   place (Endpoint::peek and consume) and checking each one against the
//   generator;
// - ack_generation_cycles_per_packet: the client's poll_transmit, which
//   builds and seals its ACK packets, per data packet acknowledged;
// - receive_path_cycles_per_packet: receive + app_read + ack_generation, the
//   whole receive path as the performance issue defines it (an upper bound:
//   it includes the test application's check of every byte);
// - ack_cycles_per_packet: the server's handle_datagram for the client's
//   ACK packets, per data packet acknowledged;
// - raw_open_cycles and raw_seal_cycles: ipsec-mb's direct AES-128-GCM of
//   one full packet in a hot buffer, measured after each repetition's
//   download on the same core, and the ratios against them:
//   receive_path_over_raw_open and send_over_raw_seal (the targets);
// - allocations_per_packet after the first iteration (warm-up).
// BM_RawIpsecMbSealAndOpen is the same crypto floor as a benchmark of its own.
#include <benchmark/benchmark.h>
#include <intel-ipsec-mb.h>
#include <sched.h>
#include <x86intrin.h>

#include <array>
#include <optional>
#include <string>

#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "tools/bench/bench_keys.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/lent_buffers.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace {

using namespace dpquic;
using namespace dpquic::harness;

constexpr size_t kSegment = 1472;
constexpr size_t kBurst = 32;

// ipsec-mb's direct AES-128-GCM seal and open of one full 1-RTT packet
// (1472-byte datagram, 20-byte short header), no header protection, no
// framing: the crypto floor, in TSC cycles per packet.
struct RawAead {
  double seal_cycles = 0;
  double open_cycles = 0;
};

class RawAeadLoop {
 public:
  RawAeadLoop() {
    plaintext_.fill(0x17);
    packet_.fill(0x40);
  }
  bool ready() { return bench::derive_bench_keys(mb_, keys_); }
  // Seals and opens one packet; adds the cycles of each.
  void once(uint64_t& seal_cycles, uint64_t& open_cycles) {
    keys_.aead().nonce(packet_number_++, nonce_);
    uint64_t start = __rdtsc();
    IMB_AES128_GCM_ENC(mb_.get(), &keys_.aead().gcm(), &context_, packet_.data() + kHeader,
                       plaintext_.data(), kPayload, nonce_.data(), packet_.data(), kHeader,
                       packet_.data() + kHeader + kPayload, crypto::kAeadTagLength);
    seal_cycles += __rdtsc() - start;
    start = __rdtsc();
    IMB_AES128_GCM_DEC(mb_.get(), &keys_.aead().gcm(), &context_, opened_.data(),
                       packet_.data() + kHeader, kPayload, nonce_.data(), packet_.data(), kHeader,
                       tag_.data(), crypto::kAeadTagLength);
    open_cycles += __rdtsc() - start;
    benchmark::DoNotOptimize(opened_.data());
  }
  RawAead measure(size_t packets) {
    uint64_t seal = 0, open = 0;
    for (size_t i = 0; i < packets; ++i) once(seal, open);
    const double n = static_cast<double>(packets);
    return {static_cast<double>(seal) / n, static_cast<double>(open) / n};
  }

 private:
  static constexpr size_t kHeader = 20;
  static constexpr size_t kPayload = kSegment - kHeader - crypto::kAeadTagLength;
  crypto::MbManager mb_;
  crypto::PacketKeys keys_;
  std::array<uint8_t, kPayload> plaintext_{};
  std::array<uint8_t, kPayload> opened_{};
  std::array<uint8_t, kSegment> packet_{};
  std::array<uint8_t, crypto::kAeadTagLength> tag_{};
  struct gcm_context_data context_ {};
  crypto::AeadNonce nonce_{};
  uint64_t packet_number_ = 0;
};

// One timed loop: its rdtsc boundaries, the allocation window and the
// counters stay in one function so that what is measured does not move
// with the code around it (a split version measured 70 more receive cycles
// per packet for the same engine): long for that reason.
void BM_EndpointDownload(benchmark::State& state) {
  const uint64_t bytes_per_iteration = static_cast<uint64_t>(state.range(0)) << 20;
  // 0: the client takes each datagram with handle_datagram; 1: each burst
  // with handle_datagrams, as the backends hand over a GRO batch or RX burst.
  const bool burst_receive = state.range(1) != 0;
  std::array<conn::InboundDatagram, kBurst> inbound;
  PairOptions options;
  options.client.connection.transport.max_stream_window = 64 << 20;
  options.client.connection.transport.max_connection_window = 64 << 20;
  QuicPair pair(options);
  PerfServer server_app(*pair.server, 64 * 1024);
  PerfClient client_app(*pair.client);
  LentBuffers ferry(kBurst, kSegment);
  Instant now = kSimulationStart;
  const auto handle = pair.connect();
  uint64_t send_cycles = 0, receive_cycles = 0, read_cycles = 0, ack_cycles = 0, data_packets = 0;
  uint64_t ack_generation_cycles = 0;
  RawAeadLoop raw;
  if (!raw.ready()) {
    state.SkipWithError("key derivation failed");
    return;
  }
  uint64_t bursts = 0;
  uint64_t allocations = 0, measured_packets = 0;
  bool warm = false;

  for (auto _ : state) {
    const uint64_t target = client_app.completed() + 1;
    client_app.request(handle, bytes_per_iteration);
    std::optional<dpquic::testing::AllocationWindow> window;
    if (warm) window.emplace();
    const uint64_t packets_before = data_packets;
    while (client_app.completed() < target) {
      now += 20'000;  // 20 us per round: the "RTT" the endpoints see
      pair.server->handle_timeout(now);
      pair.client->handle_timeout(now);
      server_app.run(now);
      transmit::BurstDescriptor out;
      conn::PathAddresses path;
      for (;;) {
        uint64_t start = __rdtsc();
        const bool more = pair.server->poll_transmit(now, ferry.buffers(), out, path);
        send_cycles += __rdtsc() - start;
        if (!more) break;
        ++bursts;
        start = __rdtsc();
        if (burst_receive) {
          for (size_t i = 0; i < out.datagram_count; ++i) {
            inbound[i] = {{path.remote, path.local}, out.ecn, {ferry.datagram(i), out.lengths[i]}};
          }
          pair.client->handle_datagrams(now, {inbound.data(), out.datagram_count});
        } else {
          for (size_t i = 0; i < out.datagram_count; ++i) {
            pair.client->handle_datagram(now, {path.remote, path.local}, out.ecn,
                                         {ferry.datagram(i), out.lengths[i]});
          }
        }
        receive_cycles += __rdtsc() - start;
        start = __rdtsc();
        client_app.run(now);
        read_cycles += __rdtsc() - start;
        data_packets += out.datagram_count;
      }
      client_app.run(now);
      for (;;) {
        uint64_t start = __rdtsc();
        const bool more = pair.client->poll_transmit(now, ferry.buffers(), out, path);
        ack_generation_cycles += __rdtsc() - start;
        if (!more) break;
        start = __rdtsc();
        for (size_t i = 0; i < out.datagram_count; ++i) {
          pair.server->handle_datagram(now, {path.remote, path.local}, out.ecn,
                                       {ferry.datagram(i), out.lengths[i]});
        }
        ack_cycles += __rdtsc() - start;
      }
    }
    if (window) {
      allocations += window->count();
      measured_packets += data_packets - packets_before;
    }
    warm = true;
  }
  if (client_app.mismatches() != 0) state.SkipWithError("byte mismatch");
  const RawAead floor = raw.measure(20'000);
  const double packets = static_cast<double>(data_packets);
  const double send = static_cast<double>(send_cycles) / packets;
  const double receive_path =
      static_cast<double>(receive_cycles + read_cycles + ack_generation_cycles) / packets;
  state.counters["send_cycles_per_packet"] = send;
  state.counters["receive_cycles_per_packet"] = static_cast<double>(receive_cycles) / packets;
  state.counters["app_read_cycles_per_packet"] = static_cast<double>(read_cycles) / packets;
  state.counters["ack_generation_cycles_per_packet"] =
      static_cast<double>(ack_generation_cycles) / packets;
  state.counters["receive_path_cycles_per_packet"] = receive_path;
  state.counters["ack_cycles_per_packet"] = static_cast<double>(ack_cycles) / packets;
  state.counters["raw_seal_cycles"] = floor.seal_cycles;
  state.counters["raw_open_cycles"] = floor.open_cycles;
  state.counters["send_over_raw_seal"] = send / floor.seal_cycles;
  state.counters["receive_path_over_raw_open"] = receive_path / floor.open_cycles;
  state.counters["allocations_per_packet"] =
      measured_packets == 0
          ? 0.0
          : static_cast<double>(allocations) / static_cast<double>(measured_packets);
  state.counters["packets"] = packets;
  state.counters["datagrams_per_burst"] = packets / static_cast<double>(bursts);
  state.SetBytesProcessed(static_cast<int64_t>(client_app.bytes_received()));
}
BENCHMARK(BM_EndpointDownload)
    ->Args({64, 0})
    ->Args({64, 1})
    ->Iterations(4)
    ->Unit(benchmark::kMillisecond);

// The crypto floor on the same core, as a benchmark of its own.
void BM_RawIpsecMbSealAndOpen(benchmark::State& state) {
  RawAeadLoop raw;
  if (!raw.ready()) {
    state.SkipWithError("key derivation failed");
    return;
  }
  uint64_t seal_cycles = 0, open_cycles = 0, packets = 0;
  for (auto _ : state) {
    raw.once(seal_cycles, open_cycles);
    ++packets;
  }
  state.counters["seal_cycles_per_packet"] =
      static_cast<double>(seal_cycles) / static_cast<double>(packets);
  state.counters["open_cycles_per_packet"] =
      static_cast<double>(open_cycles) / static_cast<double>(packets);
}
BENCHMARK(BM_RawIpsecMbSealAndOpen);

}  // namespace

int main(int argc, char** argv) {
  // One core, as a shard would run.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The raw AEAD the ratios divide by depends on the code path ipsec-mb
  // picks for this CPU (AVX-512 with VAES, AVX2, SSE...).
  benchmark::AddCustomContext("ipsec_mb_arch", std::string(crypto::MbManager().arch_name()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
