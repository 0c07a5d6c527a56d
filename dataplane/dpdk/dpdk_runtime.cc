#include "dataplane/dpdk/dpdk_runtime.h"

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "dataplane/dpdk/eal.h"
#include "dataplane/dpdk/telemetry.h"

namespace dpquic::dataplane::dpdk {

namespace {

struct LaunchArgument {
  DpdkShard* shard;
  const std::function<void(DpdkShard&)>* body;
};

int run_work(void* argument) {
  (*static_cast<const std::function<void()>*>(argument))();
  return 0;
}

int run_body(void* argument) {
  const auto* launch = static_cast<const LaunchArgument*>(argument);
  (*launch->body)(*launch->shard);
  delete launch;
  return 0;
}

std::string mac_text(const MacAddress& mac) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

}  // namespace

DpdkRuntime::DpdkRuntime(const DpdkRuntimeConfig& config) : config_(config) {
  if (!config_.interface.ipv4 && !config_.interface.ipv6) {
    throw std::runtime_error("--backend=dpdk needs --ip or --ip6: the engine's own address");
  }
  init_eal(config_.program, config_.eal_arguments);
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) { workers_.push_back(lcore); }
  if (workers_.empty()) {
    throw std::runtime_error(
        "--eal gives no worker lcore: the main lcore only supervises; list two or more "
        "(e.g. -l 0-1)");
  }
  if (config_.shards != 0) {
    if (config_.shards > workers_.size()) {
      throw std::runtime_error("--cores=" + std::to_string(config_.shards) + ": EAL has only " +
                               std::to_string(workers_.size()) +
                               " worker lcores (one shard each): widen -l in --eal");
    }
    workers_.resize(config_.shards);
  }
  if (available_ports() == 0) {
    throw std::runtime_error(
        "no DPDK port: bind a NIC with dpdk-devbind.py, or add --vdev=net_tap0,iface=dpq0 to "
        "--eal to try without one");
  }
  PortConfig port;
  port.port_id = config_.port_id;
  port.queues = static_cast<uint16_t>(workers_.size());
  port.max_udp_payload = config_.max_udp_payload;
  port_ = std::make_unique<Port>(port);
  config_.interface.mac = port_->capabilities().mac;
  if (workers_.size() > 1 && !config_.udp_ports.empty()) {
    steering_ = install_cid_steering(port_->id(), port.queues, config_.udp_ports.front(),
                                     conn::CidLayout{});
  } else {
    steering_.reason = "one queue";
  }
}

DpdkRuntime::~DpdkRuntime() {
  join();
  clear_telemetry_source();
  shards_.clear();
  if (port_ && steering_.installed) remove_cid_steering(port_->id());
  port_.reset();
  cleanup_eal();
}

DpdkShard& DpdkRuntime::add_shard(const endpoint::EndpointConfig& endpoint,
                                  crypto::TlsContext& tls) {
  const size_t index = shards_.size();
  if (index >= workers_.size()) throw std::logic_error("DpdkRuntime: too many shards");
  DpdkShardConfig config;
  config.endpoint = endpoint;
  config.endpoint.core_id = static_cast<uint8_t>(index);
  config.shard_count = workers_.size();
  config.port_id = port_->id();
  config.queue_id = static_cast<uint16_t>(index);
  config.pool = port_->pool();
  config.interface = config_.interface;
  config.udp_ports = config_.udp_ports;
  config.max_datagram_size = port_->capabilities().max_udp_payload;
  config.tx_ip_checksum_offload = port_->capabilities().tx_ipv4_checksum;
  config.tx_udp_checksum_offload = port_->capabilities().tx_udp_checksum;
  config.rx_checksum_offload = port_->capabilities().rx_checksum;
  config.drain_timeout = config_.drain_timeout;
  std::unique_ptr<DpdkShard> built;
  run_on_worker(index, [&] { built = std::make_unique<DpdkShard>(config, tls); });
  shards_.push_back(std::move(built));
  if (shards_.size() == workers_.size()) {
    std::vector<DpdkShard*> peers;
    std::vector<const ShardCounters*> counters;
    for (auto& shard : shards_) {
      peers.push_back(shard.get());
      counters.push_back(&shard->counters());
    }
    for (auto& shard : shards_) shard->set_peers(peers);
    set_telemetry_source(counters);
  }
  return *shards_.back();
}

void DpdkRuntime::run_on_worker(size_t index, const std::function<void()>& work) {
  if (index >= workers_.size() || launched_) throw std::logic_error("DpdkRuntime::run_on_worker");
  std::exception_ptr failure;
  const std::function<void()> guarded = [&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  };
  if (rte_eal_remote_launch(run_work, const_cast<std::function<void()>*>(&guarded),
                            workers_[index]) != 0) {
    throw std::runtime_error("rte_eal_remote_launch: lcore " + std::to_string(workers_[index]) +
                             " is busy");
  }
  rte_eal_wait_lcore(workers_[index]);
  if (failure) std::rethrow_exception(failure);
}

void DpdkRuntime::launch_each(std::function<void(DpdkShard&)> body) {
  if (shards_.size() != workers_.size()) throw std::logic_error("DpdkRuntime: shards missing");
  if (launched_) throw std::logic_error("DpdkRuntime: already launched");
  body_ = std::move(body);
  for (size_t i = 0; i < shards_.size(); ++i) {
    auto* argument = new LaunchArgument{shards_[i].get(), &body_};
    if (rte_eal_remote_launch(run_body, argument, workers_[i]) != 0) {
      delete argument;
      rte_eal_mp_wait_lcore();
      throw std::runtime_error("rte_eal_remote_launch: lcore " + std::to_string(workers_[i]) +
                               " is busy");
    }
    launched_ = true;
  }
}

void DpdkRuntime::join() {
  if (!launched_) return;
  rte_eal_mp_wait_lcore();
  launched_ = false;
}

std::string DpdkRuntime::describe() const {
  const PortCapabilities& caps = port_->capabilities();
  std::string text =
      "port " + std::to_string(port_->id()) + " (" + caps.driver + ", " + mac_text(caps.mac) +
      ", MTU " + std::to_string(caps.mtu) + ", " + std::to_string(workers_.size()) + " queue" +
      (workers_.size() == 1 ? "" : "s") + (caps.rss ? " with RSS" : "") +
      "), checksum offload tx " + (caps.tx_ipv4_checksum && caps.tx_udp_checksum ? "on" : "off") +
      " rx " + (caps.rx_checksum ? "on" : "off") + ", CID steering ";
  text += steering_.installed
              ? "by the NIC (" + std::to_string(steering_.rules) + " rte_flow rules)"
              : "in software (" + steering_.reason + ")";
  return text;
}

}  // namespace dpquic::dataplane::dpdk
