#include "tools/quicload/load_dpdk.h"

#include <unistd.h>

#include <functional>
#include <memory>
#include <stdexcept>

#include "dataplane/dpdk/dpdk_runtime.h"
#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/quicload/client_support.h"

namespace dpquic::tools {

namespace {

class DpdkLoadShard final : public LoadShard {
 public:
  DpdkLoadShard(dataplane::dpdk::DpdkShard& shard, const conn::SocketAddress& local)
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

dataplane::dpdk::DpdkRuntimeConfig runtime_config(const LoadOptions& options, uint16_t port) {
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
  config.udp_ports = {port};
  config.max_udp_payload = static_cast<uint32_t>(options.max_udp_payload);
  config.shards = static_cast<size_t>(options.cores);
  return config;
}

// Client shards on the EAL's worker lcores, all sending from one port.
class DpdkShards final : public ShardSet {
 public:
  // An ephemeral port unless given: every shard sends from it.
  explicit DpdkShards(const LoadOptions& options)
      : port_(options.local_port != 0 ? options.local_port
                                      : static_cast<uint16_t>(49152 + getpid() % 16384)),
        runtime_(std::make_unique<dataplane::dpdk::DpdkRuntime>(runtime_config(options, port_))) {
    local_ = options.ip->address;
    local_.port = port_;
  }
  const char* name() const override { return "dpdk"; }
  size_t shard_count() const override { return runtime_->shard_count(); }
  LoadShard& add_shard(size_t, const endpoint::EndpointConfig& config,
                       crypto::TlsContext& tls) override {
    endpoint::EndpointConfig endpoint = config;
    endpoint.connection.max_datagram_size = runtime_->max_udp_payload();
    shards_.push_back(std::make_unique<DpdkLoadShard>(runtime_->add_shard(endpoint, tls), local_));
    return *shards_.back();
  }
  void launch(const std::function<void(size_t)>& body) override {
    body_ = body;
    runtime_->launch_each([this](dataplane::dpdk::DpdkShard& shard) { body_(shard.core_id()); });
  }
  void join() override { runtime_->join(); }
  void close() override {
    shards_.clear();
    runtime_.reset();
  }

 private:
  uint16_t port_;
  std::unique_ptr<dataplane::dpdk::DpdkRuntime> runtime_;
  conn::SocketAddress local_;
  std::vector<std::unique_ptr<DpdkLoadShard>> shards_;
  std::function<void(size_t)> body_;
};

}  // namespace

LoadSummary run_dpdk_load(const LoadOptions& options, const LoadResources& resources) {
  DpdkShards backend(options);
  return run_load(options, resources, backend);
}

}  // namespace dpquic::tools
