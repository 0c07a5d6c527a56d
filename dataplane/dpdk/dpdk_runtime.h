#pragma once
// The DPDK side of the dataplane server: EAL, the port (one RX/TX queue pair
// per worker lcore), CID steering (rte_flow where the port can, else the
// shards' software rings), telemetry, and one DpdkShard per worker lcore.
// The main lcore only supervises (signals, stats): the caller's thread.
// Start-up errors are std::runtime_error with one line saying what to fix.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "crypto/tls_context.h"
#include "dataplane/dpdk/dpdk_shard.h"
#include "dataplane/dpdk/flow_steering.h"
#include "dataplane/dpdk/frame.h"
#include "dataplane/dpdk/port.h"
#include "dataplane/shard/shard_counters.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane::dpdk {

struct DpdkRuntimeConfig {
  std::string program = "dataplane";
  std::vector<std::string> eal_arguments;
  uint16_t port_id = 0;
  // Our addresses (the MAC is filled in from the port).
  InterfaceAddresses interface;
  std::vector<uint16_t> udp_ports;  // served on every address
  uint32_t max_udp_payload = 1452;  // PMTU ceiling, capped by the port
  // 0: one shard per worker lcore; otherwise exactly this many (checked).
  size_t shards = 0;
  // A graceful stop's bound (dataplane/shard/run_phase.h).
  Duration drain_timeout = 30 * kSecond;
};

class DpdkRuntime {
 public:
  explicit DpdkRuntime(const DpdkRuntimeConfig& config);
  ~DpdkRuntime();
  DpdkRuntime(const DpdkRuntime&) = delete;
  DpdkRuntime& operator=(const DpdkRuntime&) = delete;

  size_t shard_count() const { return workers_.size(); }
  // The largest UDP payload the shards send (config value capped by the
  // port's MTU and mbufs).
  uint32_t max_udp_payload() const { return port_->capabilities().max_udp_payload; }
  // Creates the next shard (core id = its index) on its worker lcore's
  // queue, built on that lcore so that its memory is local to it; `tls`
  // must outlive the runtime. After the last one, steering peers and
  // telemetry are set up.
  DpdkShard& add_shard(const endpoint::EndpointConfig& endpoint, crypto::TlsContext& tls);
  DpdkShard& shard(size_t i) { return *shards_[i]; }
  // Runs `work` on shard `index`'s worker lcore and waits for it; an
  // exception `work` throws is rethrown here. Start-up only: not once
  // launch_each() has started the shards.
  void run_on_worker(size_t index, const std::function<void()>& work);

  // Runs `body(shard)` on each shard's worker lcore (a server runs the
  // shard's loop there; a load generator drives its connections: an
  // endpoint belongs to one thread); join() waits for every body to return.
  void launch_each(std::function<void(DpdkShard&)> body);
  void join();

  // For the banner: port, driver, MAC, MTU, offloads, steering.
  std::string describe() const;

 private:
  DpdkRuntimeConfig config_;
  std::vector<unsigned> workers_;  // lcore ids
  std::unique_ptr<Port> port_;
  FlowSteeringResult steering_;
  std::vector<std::unique_ptr<DpdkShard>> shards_;
  std::function<void(DpdkShard&)> body_;
  bool launched_ = false;
};

}  // namespace dpquic::dataplane::dpdk
