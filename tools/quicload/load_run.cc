#include "tools/quicload/load_run.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "dataplane/shard/shard.h"
#include "tools/quicload/client_support.h"
#include "tools/quicload/udp_load_shard.h"

namespace dpquic::tools {

namespace {

uint64_t share_of(uint64_t total, size_t parts, size_t index) {
  return total / parts + (index < total % parts ? 1 : 0);
}

// Descriptors besides the connections' sockets and qlog files: standard
// streams, each shard's epoll and eventfd, the JSON report, the key log.
constexpr uint64_t kSpareDescriptors = 64;

// A socket per connection (and a qlog file, with --qlog-dir) needs the
// open-file limit to cover every connection at once; the soft limit is
// raised for the most a shard's endpoint may hold (closing ones linger).
void check_descriptor_limit(const LoadOptions& options, size_t shards) {
  const uint64_t each = options.qlog_dir.empty() ? 1 : 2;
  uint64_t wanted = kSpareDescriptors;
  for (size_t i = 0; i < shards; ++i) {
    wanted += each * worker_max_connections(options, share_of(options.connections, shards, i));
  }
  const uint64_t needed = each * options.connections + kSpareDescriptors;
  const uint64_t limit = raise_descriptor_limit(wanted);
  if (limit >= needed) return;
  throw std::runtime_error(
      "--connections=" + std::to_string(options.connections) + " needs " + std::to_string(needed) +
      " open files (a UDP socket per connection) but RLIMIT_NOFILE allows " +
      std::to_string(limit) + ": raise the limit (ulimit -n) or use --shared-port");
}

// One thread per shard; a socket per connection, or one per shard with
// --shared-port.
class UdpShards final : public ShardSet {
 public:
  explicit UdpShards(const LoadOptions& options)
      : options_(options),
        local_(local_address_for(options.server)),
        shards_(static_cast<size_t>(std::min(options.cores, options.connections))) {
    if (!options.shared_port) check_descriptor_limit(options, shards_.size());
  }
  const char* name() const override { return "udp"; }
  size_t shard_count() const override { return shards_.size(); }
  LoadShard& add_shard(size_t index, const endpoint::EndpointConfig& endpoint,
                       crypto::TlsContext& tls) override {
    dataplane::ShardConfig config = client_shard_config(local_, 0);
    config.endpoint = endpoint;
    config.max_datagram_size = options_.max_udp_payload;
    shards_[index] = std::make_unique<UdpLoadShard>(std::move(config), options_.shared_port, tls);
    return *shards_[index];
  }
  void launch(const std::function<void(size_t)>& body) override {
    body_ = body;
    for (size_t i = 0; i < shards_.size(); ++i) threads_.emplace_back([this, i] { body_(i); });
  }
  void join() override {
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  void close() override { shards_.clear(); }

 private:
  const LoadOptions& options_;
  conn::SocketAddress local_;
  std::vector<std::unique_ptr<UdpLoadShard>> shards_;
  std::function<void(size_t)> body_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::vector<WorkerPlan> split_plans(const LoadOptions& options, size_t workers, Instant start) {
  std::vector<WorkerPlan> plans(workers);
  for (size_t i = 0; i < workers; ++i) {
    plans[i].connections = share_of(options.connections, workers, i);
    plans[i].budget = share_of(options.requests, workers, i);
    plans[i].start = start;
    plans[i].end = options.duration != 0 ? start + options.duration : kNever;
  }
  return plans;
}

endpoint::EndpointConfig client_endpoint_config(const LoadOptions& options, uint64_t slots,
                                                dataplane::QlogFactory* qlog) {
  endpoint::EndpointConfig config;
  config.role = wire::Role::kClient;
  config.max_connections = worker_max_connections(options, slots);
  config.connection.congestion_control = options.congestion_control;
  config.connection.handshake_timeout = options.timeout;
  // Accept any datagram; send up to what PMTU discovery finds below the
  // ceiling (the shard's buffers are sized the same).
  config.connection.transport.max_udp_payload_size = wire::kDefaultMaxUdpPayloadSize;
  config.connection.max_datagram_size = options.max_udp_payload;
  config.tracer_factory = qlog;
  if (options.idle_mode) config.connection.keep_alive_interval = kIdleKeepAlive;
  return config;
}

void watch_progress(const LoadOptions& options, const std::vector<LoadWorker*>& workers,
                    Instant start) {
  const bool tty = isatty(STDOUT_FILENO) == 1;
  const Duration interval = tty ? 250 * kMillisecond : kSecond;
  const uint64_t total = options.duration != 0 ? 0 : options.requests;
  LoadCounters before;
  Instant last = start;
  bool printed = false;
  LoadCounters part;
  LatencyHistogram part_latency, latency;
  for (;;) {
    const bool done = std::all_of(workers.begin(), workers.end(),
                                  [](const LoadWorker* w) { return w->finished(); });
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const Instant now = dataplane::monotonic_now();
    if (!options.progress || now - last < interval) continue;
    LoadCounters merged;
    latency.clear();
    for (const LoadWorker* worker : workers) {
      worker->snapshot(part, part_latency);
      merged.add(part);
      latency.merge(part_latency);
    }
    const std::string line = format_progress(static_cast<double>(now - start) / kSecond,
                                             static_cast<double>(now - last) / kSecond, total,
                                             options.handshake_only, merged, before, latency);
    if (tty) {
      std::printf("\r%s\033[K", line.c_str());
    } else {
      std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
    printed = true;
    before = merged;
    last = now;
  }
  if (tty && printed) std::printf("\n");
}

LoadSummary summarize(const LoadOptions& options, const std::vector<LoadWorker*>& workers,
                      Instant start, const char* backend) {
  LoadSummary summary;
  summary.mode = options.idle_mode ? "idle" : options.handshake_only ? "handshakes" : "requests";
  summary.backend = backend;
  summary.connections = options.connections;
  summary.streams = options.handshake_only || options.idle_mode ? 0 : options.streams;
  summary.cores = workers.size();
  Instant end = start;
  for (const LoadWorker* worker : workers) {
    summary.counters.add(worker->counters());
    summary.latency.merge(worker->latency());
    summary.handshake.merge(worker->handshake_latency());
    end = std::max(end, worker->finished_at());
    if (options.idle_mode && worker->all_established_at() != 0) {
      summary.idle_established_sec =
          std::max(summary.idle_established_sec,
                   static_cast<double>(worker->all_established_at() - start) / kSecond);
    }
  }
  if (options.idle_mode) summary.idle_sec = static_cast<double>(options.idle) / kSecond;
  std::vector<uint64_t> ports(65536 / 64);
  for (const LoadWorker* worker : workers) {
    for (size_t i = 0; i < ports.size(); ++i) ports[i] |= worker->source_ports()[i];
  }
  for (uint64_t word : ports) summary.source_ports += static_cast<uint64_t>(std::popcount(word));
  summary.duration_sec = static_cast<double>(end - start) / kSecond;
  return summary;
}

LoadSummary run_load(const LoadOptions& options, const LoadResources& resources,
                     ShardSet& backend) {
  const size_t shards = backend.shard_count();
  const std::vector<WorkerPlan> sizes = split_plans(options, shards, 0);
  std::vector<std::unique_ptr<crypto::TlsContext>> tls;
  std::vector<LoadShard*> io;
  for (size_t i = 0; i < shards; ++i) {
    tls.push_back(make_client_tls(ClientTlsOptions{
        .alpn = options.scheme == UrlScheme::kPerf ? "perf" : "h3",
        .ca_file = options.ca_file,
        .early_data = options.zero_rtt,
    }));
    io.push_back(&backend.add_shard(
        i, client_endpoint_config(options, sizes[i].connections, resources.qlog), *tls.back()));
  }
  // The clock starts once the shards and contexts are ready.
  const Instant start = dataplane::monotonic_now();
  const std::vector<WorkerPlan> plans = split_plans(options, shards, start);
  std::vector<std::unique_ptr<LoadWorker>> workers;
  std::vector<LoadWorker*> view;
  for (size_t i = 0; i < shards; ++i) {
    workers.push_back(
        std::make_unique<LoadWorker>(options, plans[i], *io[i], *tls[i], resources.verify));
    view.push_back(workers.back().get());
  }
  const std::atomic<bool>& interrupted = *resources.interrupted;
  backend.launch([&view, &interrupted](size_t index) { view[index]->run(interrupted); });
  watch_progress(options, view, start);
  backend.join();
  LoadSummary summary = summarize(options, view, start, backend.name());
  workers.clear();  // before the shards: the clients hold their endpoints' chunks
  backend.close();  // before the TLS contexts the shards' endpoints use
  return summary;
}

LoadSummary run_udp_load(const LoadOptions& options, const LoadResources& resources) {
  UdpShards backend(options);
  return run_load(options, resources, backend);
}

}  // namespace dpquic::tools
