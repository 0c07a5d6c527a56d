#pragma once
// Running a load, written once over a ShardSet (kernel UDP here, DPDK in
// load_dpdk.h): the workers' shares, the shards under them, the live
// progress line while they run, and the summary merged from every worker at
// the end.

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "dataplane/qlog/qlog_writer.h"
#include "quic/endpoint/endpoint.h"
#include "tools/quicload/body_check.h"
#include "tools/quicload/load_options.h"
#include "tools/quicload/load_report.h"
#include "tools/quicload/load_worker.h"

namespace dpquic::tools {

// What the run needs besides the options (all nullable but `interrupted`).
struct LoadResources {
  const MappedFile* verify = nullptr;
  dataplane::QlogFactory* qlog = nullptr;
  const std::atomic<bool>* interrupted = nullptr;
};

// `options` split over `workers` shards starting at `start`: connections and
// the request (or handshake) budget evenly, the first shards taking the
// remainders.
std::vector<WorkerPlan> split_plans(const LoadOptions& options, size_t workers, Instant start);

// The endpoint configuration of a client shard for `options`.
endpoint::EndpointConfig client_endpoint_config(const LoadOptions& options, uint64_t slots,
                                                dataplane::QlogFactory* qlog);

// Prints the progress line (one refreshed line on a TTY, else one a second)
// until every worker finished.
void watch_progress(const LoadOptions& options, const std::vector<LoadWorker*>& workers,
                    Instant start);

// Every worker's figures, after they all finished.
LoadSummary summarize(const LoadOptions& options, const std::vector<LoadWorker*>& workers,
                      Instant start, const char* backend);

// Where a load's shards come from and run: all that differs between the
// backends.
class ShardSet {
 public:
  virtual ~ShardSet() = default;
  virtual const char* name() const = 0;  // in the summary: "udp", "dpdk"
  virtual size_t shard_count() const = 0;
  // Creates shard `index` (0, 1, ... in order); `tls` outlives it.
  virtual LoadShard& add_shard(size_t index, const endpoint::EndpointConfig& config,
                               crypto::TlsContext& tls) = 0;
  // Runs body(index) for every shard, each on its own thread or lcore;
  // join() waits for them all.
  virtual void launch(const std::function<void(size_t)>& body) = 0;
  virtual void join() = 0;
  // Destroys the shards (after the workers on them).
  virtual void close() = 0;
};

// The load on `backend`.
LoadSummary run_load(const LoadOptions& options, const LoadResources& resources, ShardSet& backend);

// The load over kernel UDP: one thread per core, a socket per connection
// (per core with --shared-port).
LoadSummary run_udp_load(const LoadOptions& options, const LoadResources& resources);

}  // namespace dpquic::tools
