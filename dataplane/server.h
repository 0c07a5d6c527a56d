#pragma once
// The dataplane server: one shard per core, each with its own endpoint, TLS
// context and applications (h3, perf), sharing only the keys that must
// agree across shards (session tickets, stateless resets, address tokens)
// and the steering rings. On kernel UDP each shard is a thread with its own
// SO_REUSEPORT sockets; on DPDK each is a worker lcore with its own queue
// pair, and the calling thread (the main lcore) only supervises.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "dataplane/dpdk/dpdk_runtime.h"
#include "dataplane/metrics/metrics_http.h"
#include "dataplane/qlog/qlog_writer.h"
#include "dataplane/server_options.h"
#include "dataplane/shard/shard.h"
#include "dataplane/shard/shard_counters.h"

namespace dpquic::dataplane {

class Server {
 public:
  // Loads or generates the certificate, opens every socket and builds the
  // shards. Throws std::runtime_error with one line on bad configuration.
  explicit Server(const ServerOptions& options);
  ~Server();

  // Serves until SIGINT/SIGTERM (which the caller must have blocked in
  // every thread, with SIGHUP, which reloads credentials), printing a stats line every
  // options.stats_seconds. The first signal starts a graceful stop (dataplane/shard/run_phase.h, at
  // most options.drain_timeout_seconds), a second one stops at once.
  // Returns once every shard has closed its connections and stopped.
  void run();

  // What the operator should know at start: addresses, shards, the
  // certificate fingerprint, the open-file limit.
  std::string banner() const;
  CounterSnapshot totals() const;
  // One line of totals since start, printed at exit (tests read it).
  std::string totals_line() const;
  // Every shard's counters and handshake histogram as Prometheus text
  // (what GET /metrics answers with --metrics).
  std::string metrics_text() const;

 private:
  struct ShardApps;
  void print_stats(double seconds, const CounterSnapshot& previous, const CounterSnapshot& now);

  void build_udp_shards(const endpoint::EndpointConfig& endpoint,
                        const crypto::TlsServerConfig& tls, size_t cores, size_t per_shard);
  void build_dpdk_shards(const endpoint::EndpointConfig& endpoint,
                         const crypto::TlsServerConfig& tls);
  void add_apps(endpoint::Endpoint& endpoint, size_t per_shard);

  ServerOptions options_;
  // RLIMIT_NOFILE's soft limit before and after start raised it to the hard
  // one (each file response holds a descriptor).
  uint64_t descriptors_at_start_ = 0;
  uint64_t descriptors_ = 0;
  std::shared_ptr<const crypto::CertificateChain> certificate_;
  std::unique_ptr<QlogFactory> qlog_;  // shared by the shards (thread-safe)
  bool certificate_generated_ = false;
  std::vector<std::unique_ptr<crypto::TlsContext>> tls_;
  std::vector<std::unique_ptr<Shard>> shards_;  // kernel UDP
  std::unique_ptr<dpdk::DpdkRuntime> dpdk_;
  std::vector<endpoint::Endpoint*> endpoints_;  // of every shard, either backend
  std::vector<const ShardCounters*> counters_;
  // --metrics: bound at start, answering from its own thread once the
  // shards exist; stopped first, before the counters it reads go.
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::vector<std::unique_ptr<ShardApps>> apps_;
  // SIGHUP: re-reads the certificate, key, host keys and ticket keys and
  // hands them to every shard; on any error the running ones stay, and one
  // line says why.
  void reload();
  std::vector<ShardCore*> cores_;  // of every shard, either backend
  // Moves the shards to the next phase: a first signal drains, a second
  // stops at once.
  void advance_phase();
  void wake_shards();

  std::atomic<RunPhase> phase_{RunPhase::kServe};
  std::atomic<size_t> shards_finished_{0};
};

}  // namespace dpquic::dataplane
