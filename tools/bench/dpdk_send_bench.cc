// The DPDK backend's send path, measured side by side in one run:
//   - one connection, perf download of --bytes between our client shard (main
//     lcore) and our server shard (a worker lcore) over two ring ports wired
//     straight to each other (hugepage mbufs with --in-memory);
//   - the server shard's TSC cycles in its transmit path per datagram
//     (poll_transmit, sealing, headers, TX burst), and its busy cycles per
//     datagram over the whole loop (receive and ACK processing included);
//   - ipsec-mb's raw AES-128-GCM seal of a datagram of the same average size
//     on the same lcore right after: the floor (target: the send path as a
//     port with checksum offload costs it <= 2.5x). The software UDP
//     checksum that ring ports need is reported on its own;
//   - goodput, and heap allocations in the process after the handshake.
// `bazel run -c opt //tools/bench:dpdk_send_bench -- --help`.
#include <intel-ipsec-mb.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/testbed/allocation_counter.h"
#include "tools/testbed/dpdk_rig.h"

namespace dpquic::dataplane::dpdk {
namespace {

constexpr const char* kDefaultEal =
    "--in-memory --no-pci --no-telemetry -l 0-1 --log-level=*:error";

struct Options {
  uint64_t bytes = 10'000'000'000ull;
  uint32_t max_udp_payload = 1452;
  std::string eal = kDefaultEal;
  bool verify_udp_checksum = false;
};

const char kUsage[] =
    "usage: dpdk_send_bench [--bytes=N] [--max-udp-payload=N] [--eal=\"ARGS\"]\n"
    "                       [--verify-udp-checksum]\n"
    "  --bytes=N              perf download size (default 10000000000)\n"
    "  --max-udp-payload=N    datagram ceiling, 1200..9000 (default 1452)\n"
    "  --eal=\"ARGS\"           EAL arguments; two lcores at least (default\n"
    "                         \"--in-memory --no-pci --no-telemetry -l 0-1 --log-level=*:error\":\n"
    "                         needs hugepages, e.g. echo 512 > /proc/sys/vm/nr_hugepages;\n"
    "                         use \"--no-huge -m 1024 --no-pci --no-telemetry -l 0-1\" without)\n"
    "  --verify-udp-checksum  check UDP checksums on receive in software (the\n"
    "                         shards' default relies on QUIC's AEAD instead)\n";

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t equals = arg.find('=');
    const std::string_view flag = arg.substr(0, equals);
    const std::string value(equals == std::string_view::npos ? "" : arg.substr(equals + 1));
    char* end = nullptr;
    if (flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--bytes") {
      options.bytes = std::strtoull(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || options.bytes == 0) return false;
    } else if (flag == "--max-udp-payload") {
      const unsigned long v = std::strtoul(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || v < 1200 || v > 9000) return false;
      options.max_udp_payload = static_cast<uint32_t>(v);
    } else if (flag == "--eal") {
      options.eal = value;
    } else if (flag == "--verify-udp-checksum") {
      options.verify_udp_checksum = true;
    } else {
      return false;
    }
  }
  return true;
}

struct ServerLoop {
  DpdkShard* shard = nullptr;
  std::atomic<bool> stop{false};
  uint64_t busy_cycles = 0;
};

int run_server(void* argument) {
  auto* loop = static_cast<ServerLoop*>(argument);
  const TscClock clock;
  while (!loop->stop.load(std::memory_order_acquire)) {
    const uint64_t start = rte_rdtsc();
    if (loop->shard->poll_once(clock.now())) loop->busy_cycles += rte_rdtsc() - start;
  }
  return 0;
}

struct RawSeal {
  size_t payload = 1452;
  size_t packets = 200'000;
  rte_mempool* pool = nullptr;  // the server port's mbufs, as the transfer left them
  double cycles_per_packet = 0;
  double recycled_cycles_per_packet = 0;
  size_t recycled_mbufs = 0;
};

// ipsec-mb's AES-128-GCM seal alone, out of place, 16-byte tag, a 20-byte
// header as AAD: what a datagram of `payload` bytes costs at the least,
// into one hot buffer, and once into each of the server's mbufs as the
// transfer left them (the client core freed them after reading them: the
// cache lines the send path writes come from the other core, which a NIC's
// TX completion on the sending core would not cause).
int run_raw_seal(void* argument) {
  auto* raw = static_cast<RawSeal*>(argument);
  IMB_MGR* manager = alloc_mb_mgr(0);
  if (manager == nullptr) return -1;
  init_mb_mgr_auto(manager, nullptr);
  alignas(64) gcm_key_data key;
  const uint8_t key_bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  IMB_AES128_GCM_PRE(manager, key_bytes, &key);
  gcm_context_data context;
  std::vector<uint8_t> in(raw->payload, 0x17), out(raw->payload + 16);
  uint8_t iv[12] = {};
  uint8_t header[20] = {0x40};
  std::vector<rte_mbuf*> mbufs(4096);
  size_t count = mbufs.size();
  while (count != 0 && rte_pktmbuf_alloc_bulk(raw->pool, mbufs.data(), count) != 0) count /= 2;
  if (count != 0 && rte_pktmbuf_tailroom(mbufs[0]) >= raw->payload) {
    const uint64_t start = rte_rdtsc();
    for (size_t i = 0; i < count; ++i) {
      uint8_t* data = rte_pktmbuf_mtod(mbufs[i], uint8_t*);
      std::memcpy(iv + 4, &i, sizeof(i));
      IMB_AES128_GCM_ENC(manager, &key, &context, data, in.data(), raw->payload - 36, iv, header,
                         sizeof(header), data + raw->payload - 36, 16);
    }
    raw->recycled_cycles_per_packet =
        static_cast<double>(rte_rdtsc() - start) / static_cast<double>(count);
    raw->recycled_mbufs = count;
  }
  if (count != 0) rte_pktmbuf_free_bulk(mbufs.data(), static_cast<unsigned>(count));
  for (int pass = 0; pass < 2; ++pass) {  // the first pass warms caches and clocks
    const uint64_t start = rte_rdtsc();
    for (size_t i = 0; i < raw->packets; ++i) {
      std::memcpy(iv + 4, &i, sizeof(i));
      IMB_AES128_GCM_ENC(manager, &key, &context, out.data(), in.data(), raw->payload - 36, iv,
                         header, sizeof(header), out.data() + raw->payload - 36, 16);
    }
    raw->cycles_per_packet =
        static_cast<double>(rte_rdtsc() - start) / static_cast<double>(raw->packets);
  }
  free_mb_mgr(manager);
  return 0;
}

class Outcome final : public PerfResponseHandler {
 public:
  void on_complete(uint64_t, const PerfOutcome& outcome) override {
    done = true;
    result = outcome;
  }
  bool done = false;
  PerfOutcome result;
};

// What the server shard did during the measured transfer.
struct Transfer {
  DpdkShardStats before, after;  // the server shard's, around the transfer
  uint64_t busy_cycles = 0;      // the server loop's, during the transfer
  double seconds = 0;
  size_t allocations = 0;  // heap allocations in the process
};

// The server shard's send path per datagram over the transfer, in TSC cycles.
struct SendCycles {
  uint64_t datagrams = 0;
  double total = 0;     // the transmit path
  double build = 0;     // QUIC packets built and sealed
  double header = 0;    // Ethernet/IP/UDP headers, as a port with checksum offload has them
  double checksum = 0;  // the UDP checksum in software (ring ports have no offload)
  double flush = 0;     // TX burst
  double other = 0;     // mbufs and events
  double loop = 0;      // the whole server loop
};

std::unique_ptr<DpdkRig> make_rig(const Options& options) {
  DpdkRigOptions rig_options;
  rig_options.wiring = DpdkRigOptions::Wiring::kDirect;
  rig_options.max_udp_payload = options.max_udp_payload;
  rig_options.verify_udp_checksum = options.verify_udp_checksum;
  return std::make_unique<DpdkRig>(rig_options);
}

// Runs the server shard on `worker` while the client downloads `bytes`, and
// stops it once the download is complete.
Transfer run_transfer(DpdkRig& rig, unsigned worker, uint64_t bytes, Outcome& outcome) {
  ServerLoop server;
  server.shard = &rig.server(0);
  rte_eal_remote_launch(run_server, &server, worker);

  const TscClock clock;
  const auto handle = rig.connect(clock.now());
  rig.perf_client().request(*handle, bytes, 0, &outcome);
  // Handshake first (allocations there are expected), then the transfer.
  while (!outcome.done) {
    rig.client().poll_once(clock.now());
    const conn::Connection* c = rig.client().endpoint().connection(*handle);
    if (c != nullptr && c->handshake_confirmed()) break;
  }
  Transfer transfer;
  transfer.before = rig.server(0).stats();
  const uint64_t busy_before = server.busy_cycles;
  const Instant start = monotonic_now();
  {
    testing::AllocationWindow window;
    while (!outcome.done) rig.client().poll_once(clock.now());
    transfer.allocations = window.count();
  }
  transfer.seconds = static_cast<double>(monotonic_now() - start) / kSecond;
  server.stop.store(true, std::memory_order_release);
  rte_eal_wait_lcore(worker);
  transfer.after = rig.server(0).stats();
  transfer.busy_cycles = server.busy_cycles - busy_before;
  return transfer;
}

// Runs run_raw_seal on `worker` for datagrams of the transfer's average
// payload (`max_udp_payload` when it sent none).
RawSeal measure_raw_seal(const DpdkRig& rig, const Transfer& transfer, unsigned worker,
                         uint32_t max_udp_payload) {
  const uint64_t datagrams = transfer.after.tx_cycle_datagrams - transfer.before.tx_cycle_datagrams;
  const uint64_t payload_bytes = transfer.after.tx_bytes - transfer.before.tx_bytes;
  RawSeal raw;
  raw.payload = datagrams == 0 ? max_udp_payload : payload_bytes / datagrams;
  raw.pool = rig.server_port().pool();
  rte_eal_remote_launch(run_raw_seal, &raw, worker);
  rte_eal_wait_lcore(worker);
  return raw;
}

SendCycles send_cycles(const Transfer& transfer) {
  const DpdkShardStats& before = transfer.before;
  const DpdkShardStats& after = transfer.after;
  SendCycles cycles;
  cycles.datagrams = after.tx_cycle_datagrams - before.tx_cycle_datagrams;
  const auto per_datagram = [&](uint64_t count) {
    return static_cast<double>(count) /
           static_cast<double>(std::max<uint64_t>(cycles.datagrams, 1));
  };
  cycles.total = per_datagram(after.tx_cycles - before.tx_cycles);
  cycles.build = per_datagram(after.build_cycles - before.build_cycles);
  cycles.header = per_datagram(after.header_cycles - before.header_cycles);
  cycles.checksum = per_datagram(after.checksum_cycles - before.checksum_cycles);
  cycles.flush = per_datagram(after.flush_cycles - before.flush_cycles);
  cycles.other = cycles.total - cycles.build - cycles.header - cycles.checksum - cycles.flush;
  cycles.loop = per_datagram(transfer.busy_cycles);
  return cycles;
}

// The send path as a port with UDP checksum offload would cost it (all but
// the software checksum; the pseudo-header sum such a port needs is in the
// header cycles), against the raw seal.
double offload_ratio(const SendCycles& cycles, const RawSeal& raw) {
  return (cycles.total - cycles.checksum) / raw.cycles_per_packet;
}

// The human lines after the first: datagrams, cycles, the raw seal and
// allocations.
void print_details(const Transfer& transfer, const RawSeal& raw, const SendCycles& cycles) {
  const DpdkShardStats& before = transfer.before;
  const DpdkShardStats& after = transfer.after;
  const uint64_t bursts = after.tx_bursts - before.tx_bursts;
  std::printf(
      "  server datagrams %llu in %llu bursts (%.1f per burst), average UDP payload %zu bytes, "
      "TSC %.2f GHz\n",
      static_cast<unsigned long long>(cycles.datagrams), static_cast<unsigned long long>(bursts),
      static_cast<double>(after.tx_datagrams - before.tx_datagrams) /
          static_cast<double>(std::max<uint64_t>(bursts, 1)),
      raw.payload, static_cast<double>(rte_get_tsc_hz()) / 1e9);
  std::printf(
      "  send path %.0f cycles/datagram: QUIC packets built and sealed %.0f, Ethernet/IP/UDP "
      "headers %.0f, software UDP checksum %.0f, TX burst %.0f, mbufs and events %.0f; whole "
      "server loop %.0f\n",
      cycles.total, cycles.build, cycles.header, cycles.checksum, cycles.flush, cycles.other,
      cycles.loop);
  std::printf(
      "  raw ipsec-mb AES-128-GCM seal of %zu bytes: %.0f cycles (send path %.2fx with checksum "
      "offload, %.2fx with the software checksum)\n",
      raw.payload, raw.cycles_per_packet, offload_ratio(cycles, raw),
      cycles.total / raw.cycles_per_packet);
  std::printf(
      "  the same seal into each of %zu server mbufs as the transfer left them: %.0f cycles "
      "(send path with checksum offload %.2fx)\n",
      raw.recycled_mbufs, raw.recycled_cycles_per_packet,
      (cycles.total - cycles.checksum) / std::max(raw.recycled_cycles_per_packet, 1.0));
  std::printf("  heap allocations after the handshake: %zu (both shards, whole process)\n",
              transfer.allocations);
}

void print_json(uint64_t bytes_received, double gbps, bool ok, const Transfer& transfer,
                const RawSeal& raw, const SendCycles& cycles) {
  std::printf(
      "JSON {\"bytes\":%llu,\"seconds\":%.3f,\"goodput_gbps\":%.3f,\"datagrams\":%llu,"
      "\"payload\":%zu,\"send_cycles_per_datagram\":%.1f,\"loop_cycles_per_datagram\":%.1f,"
      "\"build_cycles_per_datagram\":%.1f,\"header_cycles_per_datagram\":%.1f,"
      "\"checksum_cycles_per_datagram\":%.1f,\"tx_burst_cycles_per_datagram\":%.1f,"
      "\"other_cycles_per_datagram\":%.1f,\"raw_gcm_cycles\":%.1f,"
      "\"raw_gcm_recycled_mbuf_cycles\":%.1f,\"ratio\":%.3f,\"ratio_software_checksum\":%.3f,"
      "\"tsc_hz\":%llu,\"allocations\":%zu,\"ok\":%s}\n",
      static_cast<unsigned long long>(bytes_received), transfer.seconds, gbps,
      static_cast<unsigned long long>(cycles.datagrams), raw.payload, cycles.total, cycles.loop,
      cycles.build, cycles.header, cycles.checksum, cycles.flush, cycles.other,
      raw.cycles_per_packet, raw.recycled_cycles_per_packet, offload_ratio(cycles, raw),
      cycles.total / raw.cycles_per_packet, static_cast<unsigned long long>(rte_get_tsc_hz()),
      transfer.allocations, ok ? "true" : "false");
}

// Prints the results; true when the transfer was byte-exact.
bool report(const Options& options, const PerfOutcome& result, const Transfer& transfer,
            const RawSeal& raw) {
  const SendCycles cycles = send_cycles(transfer);
  const double gbps = static_cast<double>(result.bytes_received) * 8 / transfer.seconds / 1e9;
  const bool ok = result.result == PerfResult::kOk && result.bytes_received == options.bytes;
  std::printf("dpdk_send_bench: %s, %.3f GB in %.2f s, goodput %.2f Gbps (1 server lcore)\n",
              ok ? "transfer byte-exact" : "TRANSFER FAILED",
              static_cast<double>(result.bytes_received) / 1e9, transfer.seconds, gbps);
  print_details(transfer, raw, cycles);
  print_json(result.bytes_received, gbps, ok, transfer, raw, cycles);
  return ok;
}

int bench(const Options& options) {
  std::string error;
  const auto arguments = split_eal_arguments(options.eal, error);
  if (!error.empty()) {
    std::fprintf(stderr, "dpdk_send_bench: --eal: %s\n", error.c_str());
    return 2;
  }
  init_eal("dpdk_send_bench", arguments);
  const unsigned worker = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
  if (worker >= RTE_MAX_LCORE) {
    std::fprintf(stderr, "dpdk_send_bench: needs two lcores (e.g. -l 0-1 in --eal)\n");
    return 2;
  }
  auto rig = make_rig(options);
  Outcome outcome;
  const Transfer transfer = run_transfer(*rig, worker, options.bytes, outcome);
  const RawSeal raw = measure_raw_seal(*rig, transfer, worker, options.max_udp_payload);
  const bool ok = report(options, outcome.result, transfer, raw);
  rig.reset();
  cleanup_eal();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk

int main(int argc, char** argv) {
  dpquic::dataplane::dpdk::Options options;
  if (!dpquic::dataplane::dpdk::parse(argc, argv, options)) {
    std::fprintf(stderr, "dpdk_send_bench: bad arguments\n%s", dpquic::dataplane::dpdk::kUsage);
    return 2;
  }
  try {
    return dpquic::dataplane::dpdk::bench(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpdk_send_bench: %s\n", e.what());
    return 2;
  }
}
