#pragma once
// The dataplane server: one shard per core, each with its own SO_REUSEPORT
// sockets, endpoint, TLS context and applications (h3, perf), sharing only
// the keys that must agree across shards (session tickets, stateless
// resets, address tokens) and the steering rings.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
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
  // every thread), printing a stats line every options.stats_seconds.
  // Returns once every shard has closed its connections and stopped.
  void run();

  // What the operator should know at start: addresses, shards, the
  // certificate fingerprint.
  std::string banner() const;
  CounterSnapshot totals() const;
  // One line of totals since start, printed at exit (tests read it).
  std::string totals_line() const;

 private:
  struct ShardApps;
  void print_stats(double seconds, const CounterSnapshot& previous, const CounterSnapshot& now);

  ServerOptions options_;
  std::unique_ptr<crypto::CertificateChain> certificate_;
  std::unique_ptr<QlogFactory> qlog_;  // shared by the shards (thread-safe)
  bool certificate_generated_ = false;
  std::vector<std::unique_ptr<crypto::TlsContext>> tls_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::unique_ptr<ShardApps>> apps_;
  std::atomic<bool> stop_{false};
};

}  // namespace dpquic::dataplane
