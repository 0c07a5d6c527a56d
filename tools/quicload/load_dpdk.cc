#include "tools/quicload/load_dpdk.h"

#include <unistd.h>

#include <memory>
#include <stdexcept>

#include "dataplane/dpdk/dpdk_runtime.h"
#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/quicload/client_support.h"

namespace dpquic::tools {

namespace {

class DpdkShardIo final : public ShardIo {
 public:
  DpdkShardIo(dataplane::dpdk::DpdkShard& shard, const conn::SocketAddress& local)
      : shard_(shard), local_(local) {}
  endpoint::Endpoint& endpoint() override { return shard_.endpoint(); }
  void set_application(dataplane::Application* application) override {
    shard_.set_application(application);
  }
  conn::SocketAddress local_address() const override { return local_; }
  // Poll mode: never sleeps.
  void turn(Instant now, Instant limit) override {
    (void)limit;
    shard_.poll_once(now);
  }

 private:
  dataplane::dpdk::DpdkShard& shard_;
  conn::SocketAddress local_;
};

}  // namespace

LoadSummary run_dpdk_load(const LoadOptions& options, const LoadResources& resources) {
  dataplane::dpdk::DpdkRuntimeConfig config;
  config.program = "quicload";
  std::string error;
  config.eal_arguments = dataplane::dpdk::split_eal_arguments(options.eal, error);
  if (!error.empty()) throw std::runtime_error("--eal: " + error);
  const dataplane::IpPrefix& ip = *options.ip;
  if (ip.address.family == conn::AddressFamily::kIpv4) {
    config.interface.ipv4 = ip.address;
    config.interface.ipv4_prefix = ip.prefix_length;
    config.interface.gateway4 = options.gateway;
  } else {
    config.interface.ipv6 = ip.address;
    config.interface.ipv6_prefix = ip.prefix_length;
    config.interface.gateway6 = options.gateway;
  }
  // An ephemeral port unless given: every shard sends from it.
  const uint16_t port = options.local_port != 0 ? options.local_port
                                                : static_cast<uint16_t>(49152 + getpid() % 16384);
  config.udp_ports = {port};
  config.max_udp_payload = static_cast<uint32_t>(options.max_udp_payload);
  config.shards = static_cast<size_t>(options.cores);
  auto runtime = std::make_unique<dataplane::dpdk::DpdkRuntime>(config);

  const size_t shards = runtime->shard_count();
  const std::vector<WorkerPlan> sizes = split_plans(options, shards, 0);
  conn::SocketAddress local = ip.address;
  local.port = port;
  std::vector<std::unique_ptr<crypto::TlsContext>> tls;
  std::vector<std::unique_ptr<DpdkShardIo>> ios;
  for (size_t i = 0; i < shards; ++i) {
    tls.push_back(make_client_tls(ClientTlsOptions{
        .alpn = options.scheme == UrlScheme::kPerf ? "perf" : "h3",
        .ca_file = options.ca_file,
        .early_data = options.zero_rtt,
    }));
    endpoint::EndpointConfig endpoint =
        client_endpoint_config(options, sizes[i].connections, resources.qlog);
    endpoint.connection.max_datagram_size = runtime->max_udp_payload();
    ios.push_back(std::make_unique<DpdkShardIo>(runtime->add_shard(endpoint, *tls.back()), local));
  }
  const Instant start = dataplane::monotonic_now();
  const std::vector<WorkerPlan> plans = split_plans(options, shards, start);
  std::vector<std::unique_ptr<LoadWorker>> workers;
  std::vector<LoadWorker*> view;
  for (size_t i = 0; i < shards; ++i) {
    workers.push_back(
        std::make_unique<LoadWorker>(options, plans[i], *ios[i], *tls[i], resources.verify));
    view.push_back(workers.back().get());
  }
  const std::atomic<bool>& interrupted = *resources.interrupted;
  runtime->launch_each([&view, &interrupted](dataplane::dpdk::DpdkShard& shard) {
    view[shard.core_id()]->run(interrupted);
  });
  watch_progress(options, view, start);
  runtime->join();
  LoadSummary summary = summarize(options, view, start, "dpdk");
  workers.clear();  // before the shards: the clients hold their endpoints' chunks
  runtime.reset();
  return summary;
}

}  // namespace dpquic::tools
