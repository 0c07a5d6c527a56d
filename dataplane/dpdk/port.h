#pragma once
// One DPDK Ethernet port for the dataplane: its mbuf pool, one RX and one TX
// queue per shard, RSS over the queues when there is more than one, and the
// checksum offloads the port reports. Start-up only: the constructor throws
// std::runtime_error with one line saying what to fix.

#include <rte_mempool.h>

#include <cstdint>
#include <string>

#include "dataplane/dpdk/frame.h"

namespace dpquic::dataplane::dpdk {

struct PortConfig {
  uint16_t port_id = 0;
  uint16_t queues = 1;  // RX = TX queues = shards using the port
  uint16_t rx_descriptors = 1024;
  uint16_t tx_descriptors = 1024;
  // The largest UDP payload the shards will send or accept: sizes the mbuf
  // data room (payload + kMaxUdpHeaderLength + headroom, at least DPDK's
  // default) and, when the device allows it, the port MTU.
  uint32_t max_udp_payload = 1452;
  // 0: enough for every descriptor plus each shard's bursts and caches.
  uint32_t mbufs = 0;
  uint32_t mempool_cache = 256;  // per lcore
};

struct PortCapabilities {
  MacAddress mac{};
  std::string driver;
  uint16_t mtu = 1500;  // as configured
  uint16_t max_rx_queues = 1;
  uint16_t max_tx_queues = 1;
  bool rss = false;  // RSS configured (queues > 1 and supported)
  bool tx_ipv4_checksum = false;
  bool tx_udp_checksum = false;
  bool rx_checksum = false;  // RX IPv4/UDP checksum offload enabled
  // The largest UDP payload an mbuf (single segment) and the MTU allow.
  uint32_t max_udp_payload = 1452;
};

// Number of ports EAL found (0: none bound and no --vdev).
uint16_t available_ports();

class Port {
 public:
  // Configures and starts the port. Errors name the port and the fix: no
  // such port ("no DPDK port N: bind a NIC with dpdk-devbind.py or pass
  // --vdev=net_tap0,iface=dpq0 in --eal"), too many queues for the device
  // ("use at most M worker lcores"), mempool creation failing ("not enough
  // memory: raise -m or reserve more hugepages").
  explicit Port(const PortConfig& config);
  ~Port();  // stops and closes the port, frees the pool
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  uint16_t id() const { return config_.port_id; }
  uint16_t queues() const { return config_.queues; }
  rte_mempool* pool() const { return pool_; }
  const PortCapabilities& capabilities() const { return capabilities_; }
  // Link up, for the banner (ring/tap ports report up at once).
  bool link_up() const;

 private:
  PortConfig config_;
  PortCapabilities capabilities_;
  // Undoes what the constructor did so far (also its cleanup on failure).
  void release() noexcept;

  rte_mempool* pool_ = nullptr;
  bool configured_ = false;  // rte_eth_dev_configure succeeded: close on release
  bool started_ = false;
};

// Sizes the constructor derives from a PortConfig (exposed for tests and the
// banner): mbuf data room (headroom included) and, for mbufs = 0, the count.
uint16_t mbuf_data_room(const PortConfig& config);
uint32_t default_mbuf_count(const PortConfig& config);

}  // namespace dpquic::dataplane::dpdk
