#include "tools/quicload/load_dpdk.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "dataplane/dpdk/dpdk_runtime.h"
#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tools/quicload/client_support.h"
#include "tools/quicload/port_pool.h"

namespace dpquic::tools {

namespace {

// Each connection takes a source port of the `ports` from local.port on;
// with --shared-port (`ports` 0) every connection sends from `local`.
class DpdkLoadShard final : public LoadShard {
 public:
  DpdkLoadShard(dataplane::dpdk::DpdkShard& shard, const conn::SocketAddress& local, size_t ports)
      : shard_(shard), local_(local), ports_(local.port, ports) {}
  endpoint::Endpoint& endpoint() override { return shard_.endpoint(); }
  void set_application(dataplane::Application* application) override {
    shard_.set_application(application);
  }
  std::optional<conn::SocketAddress> open_local() override {
    if (ports_.size() == 0) return local_;
    const std::optional<uint16_t> port = ports_.take();
    if (!port) return std::nullopt;
    conn::SocketAddress local = local_;
    local.port = *port;
    return local;
  }
  void close_local(const conn::SocketAddress& local) override { ports_.give_back(local.port); }
  // Poll mode: never sleeps.
  void turn(Instant now, Instant limit) override {
    (void)limit;
    shard_.poll_once(now);
  }

 private:
  dataplane::dpdk::DpdkShard& shard_;
  conn::SocketAddress local_;
  PortPool ports_;
};

// Where the connections' source ports start unless --local-port says: the
// client owns its --ip, so any range is free.
constexpr uint16_t kFirstPort = 32768;

uint64_t slots_per_shard(const LoadOptions& options) {
  return (options.connections + options.cores - 1) / options.cores;
}

// Source ports per shard: as many as its endpoint may hold connections
// (closing ones linger), within what is left above the first port; 0 with
// --shared-port.
size_t ports_per_shard(const LoadOptions& options, uint16_t first) {
  if (options.shared_port) return 0;
  const size_t room = (65536 - size_t{first}) / options.cores;
  const size_t wanted = worker_max_connections(options, slots_per_shard(options));
  const size_t ports = std::min(room, wanted);
  if (ports < slots_per_shard(options)) {
    throw std::runtime_error("--connections=" + std::to_string(options.connections) +
                             " needs a source port per connection above " + std::to_string(first) +
                             ": lower --local-port, or use --shared-port");
  }
  return ports;
}

dataplane::dpdk::DpdkRuntimeConfig runtime_config(const LoadOptions& options, uint16_t first,
                                                  size_t ports_per_shard) {
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
  config.udp_ports = {first};
  for (size_t i = 1; i < ports_per_shard * options.cores; ++i) {
    config.udp_ports.push_back(static_cast<uint16_t>(first + i));
  }
  config.max_udp_payload = static_cast<uint32_t>(options.max_udp_payload);
  config.shards = static_cast<size_t>(options.cores);
  return config;
}

// Client shards on the EAL's worker lcores, each with a range of source
// ports, one per connection (or, with --shared-port, all sending from one).
class DpdkShards final : public ShardSet {
 public:
  explicit DpdkShards(const LoadOptions& options)
      : port_(first_port(options)),
        ports_per_shard_(ports_per_shard(options, port_)),
        runtime_(std::make_unique<dataplane::dpdk::DpdkRuntime>(
            runtime_config(options, port_, ports_per_shard_))) {
    local_ = options.ip->address;
  }
  const char* name() const override { return "dpdk"; }
  size_t shard_count() const override { return runtime_->shard_count(); }
  LoadShard& add_shard(size_t, const endpoint::EndpointConfig& config,
                       crypto::TlsContext& tls) override {
    endpoint::EndpointConfig endpoint = config;
    endpoint.connection.max_datagram_size = runtime_->max_udp_payload();
    conn::SocketAddress local = local_;
    local.port = static_cast<uint16_t>(port_ + shards_.size() * ports_per_shard_);
    shards_.push_back(std::make_unique<DpdkLoadShard>(runtime_->add_shard(endpoint, tls), local,
                                                      ports_per_shard_));
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
  // An ephemeral port unless given (--shared-port: every shard sends from
  // it), else kFirstPort.
  static uint16_t first_port(const LoadOptions& options) {
    if (options.local_port != 0) return options.local_port;
    return options.shared_port ? static_cast<uint16_t>(49152 + getpid() % 16384) : kFirstPort;
  }

  uint16_t port_;
  size_t ports_per_shard_;
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
