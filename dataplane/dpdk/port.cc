#include "dataplane/dpdk/port.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dpquic::dataplane::dpdk {
namespace {

// IPv6 + UDP headers: what an MTU leaves for the UDP payload (the IPv4
// headers are smaller, so this bound holds for both families).
constexpr uint32_t kIpv6UdpOverhead = 48;
// Bursts in flight per queue on top of the descriptors (one RX and one TX
// burst being worked on).
constexpr uint32_t kBurstSize = 64;
constexpr uint32_t kMinimumMbufs = 2047;

std::string port_name(uint16_t port_id) { return "port " + std::to_string(port_id); }

[[noreturn]] void throw_call_failed(const char* call, uint16_t port_id, int result) {
  // ethdev returns -errno; rte_errno is not always set.
  const int error = result < 0 ? -result : rte_errno;
  throw std::runtime_error(std::string(call) + " failed for " + port_name(port_id) + ": " +
                           rte_strerror(error));
}

}  // namespace

uint16_t mbuf_data_room(const PortConfig& config) {
  const uint64_t needed =
      uint64_t{RTE_PKTMBUF_HEADROOM} + kMaxUdpHeaderLength + uint64_t{config.max_udp_payload};
  return static_cast<uint16_t>(
      std::min<uint64_t>(std::max<uint64_t>(RTE_MBUF_DEFAULT_BUF_SIZE, needed), UINT16_MAX));
}

uint32_t default_mbuf_count(const PortConfig& config) {
  // Every descriptor may hold an mbuf, each shard works on an RX and a TX
  // burst, and every lcore touching the pool (the shards plus the main one)
  // may park a full cache.
  const uint64_t queues = config.queues;
  const uint64_t needed =
      queues * (uint64_t{config.rx_descriptors} + config.tx_descriptors + 2 * kBurstSize) +
      (queues + 1) * config.mempool_cache;
  const uint64_t at_least = std::max<uint64_t>(needed, kMinimumMbufs);
  // Mempools are rings: 2^n - 1 elements use the ring fully.
  return static_cast<uint32_t>(std::min<uint64_t>(std::bit_ceil(at_least + 1) - 1, UINT32_MAX));
}

uint16_t available_ports() { return rte_eth_dev_count_avail(); }

namespace {

void check_port_config(const PortConfig& config) {
  const uint16_t port_id = config.port_id;
  if (!rte_eth_dev_is_valid_port(port_id)) {
    throw std::runtime_error("no DPDK port " + std::to_string(port_id) + " (EAL found " +
                             std::to_string(available_ports()) +
                             "): bind a NIC with dpdk-devbind.py or add "
                             "--vdev=net_tap0,iface=dpq0 to --eal");
  }
  if (config.queues == 0) throw std::runtime_error(port_name(port_id) + ": queues must be >= 1");
  if (config.mempool_cache > RTE_MEMPOOL_CACHE_MAX_SIZE) {
    throw std::runtime_error(port_name(port_id) + ": mempool cache " +
                             std::to_string(config.mempool_cache) + " exceeds DPDK's maximum " +
                             std::to_string(RTE_MEMPOOL_CACHE_MAX_SIZE));
  }
}

rte_eth_dev_info device_info(const PortConfig& config, PortCapabilities& capabilities) {
  const uint16_t port_id = config.port_id;
  rte_eth_dev_info info;
  if (const int result = rte_eth_dev_info_get(port_id, &info); result != 0) {
    throw_call_failed("rte_eth_dev_info_get", port_id, result);
  }
  capabilities.driver = info.driver_name != nullptr ? info.driver_name : "";
  capabilities.max_rx_queues = info.max_rx_queues;
  capabilities.max_tx_queues = info.max_tx_queues;
  const uint16_t max_queues = std::min(info.max_rx_queues, info.max_tx_queues);
  if (config.queues > max_queues) {
    throw std::runtime_error(port_name(port_id) + " (" + capabilities.driver + ") has at most " +
                             std::to_string(info.max_rx_queues) + " RX and " +
                             std::to_string(info.max_tx_queues) + " TX queues, " +
                             std::to_string(config.queues) + " asked for: use at most " +
                             std::to_string(max_queues) + " worker lcores");
  }
  return info;
}

rte_mempool* create_pool(const PortConfig& config, int socket) {
  const uint16_t data_room = mbuf_data_room(config);
  const uint32_t mbufs = config.mbufs != 0 ? config.mbufs : default_mbuf_count(config);
  const std::string pool_name = "dpq_mbufs_p" + std::to_string(config.port_id);
  rte_mempool* pool =
      rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, config.mempool_cache, 0, data_room, socket);
  if (pool != nullptr) return pool;
  const int error = rte_errno;
  std::string message = "cannot create the mbuf pool (" + std::to_string(mbufs) + " mbufs of " +
                        std::to_string(data_room) + " bytes) for " + port_name(config.port_id) +
                        ": ";
  if (error == ENOMEM) {
    message += "not enough memory: raise -m or reserve more hugepages";
  } else {
    message += std::string("rte_pktmbuf_pool_create: ") + rte_strerror(error);
  }
  throw std::runtime_error(message);
}

// RSS across the queues and the checksum offloads the device has.
rte_eth_conf device_conf(const PortConfig& config, const rte_eth_dev_info& info,
                         PortCapabilities& capabilities) {
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  // RSS only spreads flows when there is somewhere to spread them.
  const uint64_t rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
  if (config.queues > 1 && rss_hf != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // the PMD's default key
    conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
    capabilities.rss = true;
  }
  const uint64_t rx_checksums = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  conf.rxmode.offloads = info.rx_offload_capa & rx_checksums;
  capabilities.rx_checksum = conf.rxmode.offloads == rx_checksums;
  capabilities.tx_ipv4_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
  capabilities.tx_udp_checksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
  conf.txmode.offloads =
      info.tx_offload_capa & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM);
  // Keep the current MTU through configure (0 would reset it to 1500).
  uint16_t mtu = RTE_ETHER_MTU;
  if (const int result = rte_eth_dev_get_mtu(config.port_id, &mtu); result != 0) {
    throw_call_failed("rte_eth_dev_get_mtu", config.port_id, result);
  }
  conf.rxmode.mtu = mtu;
  return conf;
}

// A larger MTU only when the payload asks for it, the device allows it and
// a received frame still fits one mbuf; otherwise the MTU stays.
void raise_mtu(const PortConfig& config, const rte_eth_dev_info& info, uint16_t mtu,
               PortCapabilities& capabilities) {
  const uint32_t frame_room = mbuf_data_room(config) - RTE_PKTMBUF_HEADROOM;
  const uint64_t wanted_mtu =
      std::min<uint64_t>(uint64_t{config.max_udp_payload} + kIpv6UdpOverhead,
                         frame_room - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
  // ethdev's own frame overhead rule: what max_rx_pktlen adds to max_mtu,
  // or Ethernet header + CRC when the device does not say.
  const uint32_t frame_overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
                                      ? info.max_rx_pktlen - info.max_mtu
                                      : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (wanted_mtu > mtu && wanted_mtu <= info.max_mtu &&
      wanted_mtu + frame_overhead <= info.max_rx_pktlen &&
      rte_eth_dev_set_mtu(config.port_id, static_cast<uint16_t>(wanted_mtu)) == 0) {
    mtu = static_cast<uint16_t>(wanted_mtu);
  }
  capabilities.mtu = mtu;
  capabilities.max_udp_payload =
      std::min({uint32_t{mtu} > kIpv6UdpOverhead ? uint32_t{mtu} - kIpv6UdpOverhead : 0,
                frame_room - static_cast<uint32_t>(kMaxUdpHeaderLength), config.max_udp_payload});
}

void setup_queues(const PortConfig& config, const rte_eth_dev_info& info, const rte_eth_conf& conf,
                  int socket, rte_mempool* pool) {
  const uint16_t port_id = config.port_id;
  uint16_t rx_descriptors = config.rx_descriptors;
  uint16_t tx_descriptors = config.tx_descriptors;
  if (const int result =
          rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_descriptors, &tx_descriptors);
      result != 0) {
    throw_call_failed("rte_eth_dev_adjust_nb_rx_tx_desc", port_id, result);
  }
  rte_eth_rxconf rxconf = info.default_rxconf;
  rxconf.offloads = conf.rxmode.offloads;
  rte_eth_txconf txconf = info.default_txconf;
  txconf.offloads = conf.txmode.offloads;
  for (uint16_t queue = 0; queue < config.queues; ++queue) {
    if (const int result = rte_eth_rx_queue_setup(port_id, queue, rx_descriptors,
                                                  static_cast<unsigned>(socket), &rxconf, pool);
        result != 0) {
      throw_call_failed("rte_eth_rx_queue_setup", port_id, result);
    }
    if (const int result = rte_eth_tx_queue_setup(port_id, queue, tx_descriptors,
                                                  static_cast<unsigned>(socket), &txconf);
        result != 0) {
      throw_call_failed("rte_eth_tx_queue_setup", port_id, result);
    }
  }
}

}  // namespace

Port::Port(const PortConfig& config) : config_(config) {
  const uint16_t port_id = config.port_id;
  check_port_config(config);
  try {
    const rte_eth_dev_info info = device_info(config, capabilities_);
    // The pool lives on the port's NUMA node (vdevs report none: any).
    int socket = rte_eth_dev_socket_id(port_id);
    if (socket < 0) socket = SOCKET_ID_ANY;
    pool_ = create_pool(config, socket);
    const rte_eth_conf conf = device_conf(config, info, capabilities_);
    if (const int result = rte_eth_dev_configure(port_id, config.queues, config.queues, &conf);
        result != 0) {
      throw_call_failed("rte_eth_dev_configure", port_id, result);
    }
    configured_ = true;
    raise_mtu(config, info, conf.rxmode.mtu, capabilities_);
    setup_queues(config, info, conf, socket, pool_);
    if (const int result = rte_eth_dev_start(port_id); result != 0) {
      throw_call_failed("rte_eth_dev_start", port_id, result);
    }
    started_ = true;
    rte_ether_addr mac;
    if (const int result = rte_eth_macaddr_get(port_id, &mac); result != 0) {
      throw_call_failed("rte_eth_macaddr_get", port_id, result);
    }
    std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), capabilities_.mac.begin());
  } catch (...) {
    release();
    throw;
  }
}

Port::~Port() { release(); }

void Port::release() noexcept {
  if (started_) rte_eth_dev_stop(config_.port_id);
  started_ = false;
  // Closing releases the queues (which reference the pool) before the pool
  // goes; vdev ports disappear from ethdev with it.
  if (configured_) rte_eth_dev_close(config_.port_id);
  configured_ = false;
  rte_mempool_free(pool_);
  pool_ = nullptr;
}

bool Port::link_up() const {
  rte_eth_link link;
  std::memset(&link, 0, sizeof(link));
  if (rte_eth_link_get_nowait(config_.port_id, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

}  // namespace dpquic::dataplane::dpdk
