// Ports, rte_flow steering and telemetry on ring ports, in one EAL process
// (EAL starts once per process: the environment below starts it, the tests
// run in declaration order).
#include "dataplane/dpdk/port.h"

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/dpdk/eal.h"
#include "dataplane/dpdk/flow_steering.h"
#include "dataplane/dpdk/telemetry.h"
#include "dataplane/shard/shard_counters.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace dpquic::dataplane::dpdk {
namespace {

const std::vector<std::string> kEalArguments = {"--no-huge",
                                                "-m",
                                                "256",
                                                "--no-pci",
                                                "--no-shconf",
                                                "--no-telemetry",
                                                "--log-level=lib.eal:error",
                                                "--vdev=net_ring0",
                                                "--vdev=net_ring1",
                                                "--vdev=net_ring2"};

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { init_eal("port_test", kEalArguments); }
  void TearDown() override { cleanup_eal(); }
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

uint16_t port_by_name(const char* name) {
  uint16_t port_id = RTE_MAX_ETHPORTS;
  EXPECT_EQ(rte_eth_dev_get_port_by_name(name, &port_id), 0) << name;
  return port_id;
}

std::string constructor_error(const PortConfig& config) {
  try {
    Port port(config);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "Port " << config.port_id << " started";
  return "";
}

// Sends `length` patterned bytes on `queue` and expects them back on the
// same queue (a net_ring port created by --vdev shares one ring per queue
// between TX and RX).
void expect_loopback(const Port& port, uint16_t queue, uint16_t length) {
  rte_mbuf* sent = rte_pktmbuf_alloc(port.pool());
  ASSERT_NE(sent, nullptr);
  char* bytes = rte_pktmbuf_append(sent, length);
  ASSERT_NE(bytes, nullptr);
  for (uint16_t i = 0; i < length; ++i) bytes[i] = static_cast<char>(i * 7 + queue);
  ASSERT_EQ(rte_eth_tx_burst(port.id(), queue, &sent, 1), 1);

  std::array<rte_mbuf*, 4> received{};
  ASSERT_EQ(rte_eth_rx_burst(port.id(), queue, received.data(), received.size()), 1);
  ASSERT_EQ(rte_pktmbuf_pkt_len(received[0]), length);
  const char* back = rte_pktmbuf_mtod(received[0], const char*);
  for (uint16_t i = 0; i < length; ++i) {
    ASSERT_EQ(back[i], static_cast<char>(i * 7 + queue)) << i;
  }
  rte_pktmbuf_free(received[0]);
  // Nothing else is pending on any queue.
  for (uint16_t q = 0; q < port.queues(); ++q) {
    EXPECT_EQ(rte_eth_rx_burst(port.id(), q, received.data(), received.size()), 0);
  }
}

TEST(Eal, SecondInitThrowsAlreadyInitialised) {
  try {
    init_eal("port_test", kEalArguments);
    FAIL() << "EAL started twice";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              std::string("EAL init failed (") + rte_strerror(EALREADY) +
                  "): EAL already initialised in this process (it cannot be started twice)");
  }
}

TEST(Eal, FindsTheRingPorts) { EXPECT_EQ(available_ports(), 3); }

TEST(PortSizes, MbufDataRoom) {
  PortConfig config;
  EXPECT_EQ(mbuf_data_room(config), RTE_MBUF_DEFAULT_BUF_SIZE);
  config.max_udp_payload = 9000;
  EXPECT_EQ(mbuf_data_room(config), RTE_PKTMBUF_HEADROOM + 62 + 9000);
  config.max_udp_payload = 70000;
  EXPECT_EQ(mbuf_data_room(config), UINT16_MAX);
}

TEST(PortSizes, DefaultMbufCount) {
  PortConfig config;                             // 1 queue, 1024 + 1024 descriptors, cache 256
  EXPECT_EQ(default_mbuf_count(config), 4095u);  // 1024 + 1024 + 128 + 2 * 256 = 2688
  config.queues = 4;
  EXPECT_EQ(default_mbuf_count(config), 16383u);  // 4 * 2176 + 5 * 256 = 9984
  config.queues = 1;
  config.rx_descriptors = config.tx_descriptors = 64;
  config.mempool_cache = 32;
  EXPECT_EQ(default_mbuf_count(config), 2047u);  // 320: the minimum
}

TEST(Port, UnknownPortNamesTheFix) {
  const std::string error = constructor_error({.port_id = 99});
  EXPECT_EQ(error,
            "no DPDK port 99 (EAL found 3): bind a NIC with dpdk-devbind.py or add "
            "--vdev=net_tap0,iface=dpq0 to --eal");
  EXPECT_EQ(available_ports(), 3);
}

TEST(Port, TooManyQueuesNamesTheLimit) {
  const uint16_t id = port_by_name("net_ring2");
  rte_eth_dev_info info;
  ASSERT_EQ(rte_eth_dev_info_get(id, &info), 0);
  const uint16_t limit = std::min(info.max_rx_queues, info.max_tx_queues);
  const std::string error =
      constructor_error({.port_id = id, .queues = static_cast<uint16_t>(limit + 1)});
  EXPECT_EQ(error, "port " + std::to_string(id) + " (net_ring) has at most " +
                       std::to_string(info.max_rx_queues) + " RX and " +
                       std::to_string(info.max_tx_queues) + " TX queues, " +
                       std::to_string(limit + 1) + " asked for: use at most " +
                       std::to_string(limit) + " worker lcores");
  EXPECT_EQ(constructor_error({.port_id = id, .queues = 0}),
            "port " + std::to_string(id) + ": queues must be >= 1");
  EXPECT_TRUE(rte_eth_dev_is_valid_port(id));  // refused before touching it
}

TEST(Port, PoolTooLargeSaysRaiseMemory) {
  const uint16_t id = port_by_name("net_ring2");
  // ~9 GB of mbufs in a 256 MB heap.
  const std::string error =
      constructor_error({.port_id = id, .max_udp_payload = 9000, .mbufs = 1'000'000});
  EXPECT_EQ(error, "cannot create the mbuf pool (1000000 mbufs of 9190 bytes) for port " +
                       std::to_string(id) +
                       ": not enough memory: raise -m or reserve more hugepages");
  EXPECT_EQ(constructor_error({.port_id = id, .mempool_cache = RTE_MEMPOOL_CACHE_MAX_SIZE + 1}),
            "port " + std::to_string(id) + ": mempool cache " +
                std::to_string(RTE_MEMPOOL_CACHE_MAX_SIZE + 1) + " exceeds DPDK's maximum " +
                std::to_string(RTE_MEMPOOL_CACHE_MAX_SIZE));
  EXPECT_TRUE(rte_eth_dev_is_valid_port(id));
}

TEST(Port, StartsCapsThePayloadAndLoopsFramesBack) {
  const uint16_t id = port_by_name("net_ring0");
  {
    Port port({.port_id = id, .max_udp_payload = 9000});
    EXPECT_EQ(port.id(), id);
    EXPECT_EQ(port.queues(), 1);
    const PortCapabilities& caps = port.capabilities();
    EXPECT_EQ(caps.driver, "net_ring");
    rte_eth_dev_info info;
    ASSERT_EQ(rte_eth_dev_info_get(id, &info), 0);
    EXPECT_EQ(caps.max_rx_queues, info.max_rx_queues);
    EXPECT_EQ(caps.max_tx_queues, info.max_tx_queues);
    EXPECT_FALSE(caps.rss);  // one queue
    // net_ring offers no checksum offloads.
    EXPECT_FALSE(caps.tx_ipv4_checksum);
    EXPECT_FALSE(caps.tx_udp_checksum);
    EXPECT_FALSE(caps.rx_checksum);
    uint16_t mtu = 0;
    ASSERT_EQ(rte_eth_dev_get_mtu(id, &mtu), 0);
    EXPECT_EQ(caps.mtu, mtu);
    // The mbufs hold 9000 bytes of payload; the MTU decides what is usable.
    EXPECT_EQ(caps.max_udp_payload, std::min<uint32_t>(9000, caps.mtu - 48u));
    rte_ether_addr mac;
    ASSERT_EQ(rte_eth_macaddr_get(id, &mac), 0);
    EXPECT_EQ(std::memcmp(caps.mac.data(), mac.addr_bytes, 6), 0);
    EXPECT_TRUE(port.link_up());

    ASSERT_NE(port.pool(), nullptr);
    EXPECT_EQ(rte_pktmbuf_data_room_size(port.pool()), RTE_PKTMBUF_HEADROOM + 62 + 9000);
    EXPECT_EQ(port.pool()->size, default_mbuf_count({.max_udp_payload = 9000}));
    rte_mbuf* mbuf = rte_pktmbuf_alloc(port.pool());
    ASSERT_NE(mbuf, nullptr);
    EXPECT_EQ(rte_pktmbuf_headroom(mbuf), RTE_PKTMBUF_HEADROOM);
    EXPECT_GE(rte_pktmbuf_tailroom(mbuf), 62 + 9000);
    rte_pktmbuf_free(mbuf);

    expect_loopback(port, 0, 60);
    expect_loopback(port, 0, 1514);
  }
  // Closing a vdev port releases it.
  EXPECT_FALSE(rte_eth_dev_is_valid_port(id));
  EXPECT_EQ(available_ports(), 2);
  EXPECT_NE(constructor_error({.port_id = id}).find("no DPDK port"), std::string::npos);
}

TEST(Port, TwoQueuesWithoutRssAndFlowSteeringRefusedCleanly) {
  const uint16_t id = port_by_name("net_ring1");
  Port port({.port_id = id, .queues = 2, .rx_descriptors = 256, .tx_descriptors = 256});
  EXPECT_EQ(port.queues(), 2);
  rte_eth_dev_info info;
  ASSERT_EQ(rte_eth_dev_info_get(id, &info), 0);
  // RSS only where the device hashes IP/UDP (net_ring hashes nothing).
  EXPECT_EQ(port.capabilities().rss, (info.flow_type_rss_offloads & RTE_ETH_RSS_UDP) != 0);
  EXPECT_EQ(port.capabilities().max_udp_payload, 1452u);
  expect_loopback(port, 0, 100);
  expect_loopback(port, 1, 200);

  const conn::CidLayout layout{.server_id = {0xab, 0xcd}, .config_rotation = 1, .cid_length = 12};
  const FlowSteeringResult result = install_cid_steering(id, port.queues(), 4433, layout);
  if (result.installed) {
    EXPECT_EQ(result.rules, 2u * port.queues());
    EXPECT_TRUE(result.reason.empty());
  } else {
    EXPECT_EQ(result.rules, 0u);
    EXPECT_FALSE(result.reason.empty());
  }
  // net_ring has no rte_flow: refused at validation, before creating anything.
  EXPECT_FALSE(result.installed);
  EXPECT_EQ(result.reason, "rte_flow_validate refused the IPv4 rule for queue 0 on port " +
                               std::to_string(id) + ": " + rte_strerror(ENOSYS) +
                               "; steering in software instead");
  remove_cid_steering(id);  // harmless without rte_flow
  // Still passes traffic as before.
  expect_loopback(port, 1, 300);
}

TEST(FlowSteering, RefusesBadInputsWithAReason) {
  // Refused before the port is looked at.
  const uint16_t id = RTE_MAX_ETHPORTS - 1;
  const conn::CidLayout layout;
  FlowSteeringResult result = install_cid_steering(id, 0, 443, layout);
  EXPECT_FALSE(result.installed);
  EXPECT_EQ(result.rules, 0u);
  EXPECT_EQ(result.reason, "no queues to steer to");

  const conn::CidLayout too_short{.server_id = std::vector<uint8_t>(10, 1), .cid_length = 12};
  result = install_cid_steering(id, 2, 443, too_short);
  EXPECT_FALSE(result.installed);
  EXPECT_EQ(result.rules, 0u);
  EXPECT_EQ(result.reason.rfind("invalid CID layout: ", 0), 0u) << result.reason;
}

TEST(Port, AFailedConstructorLeftThePortUsable) {
  // net_ring2 saw three refused constructors above; it still starts.
  const uint16_t id = port_by_name("net_ring2");
  Port port({.port_id = id, .max_udp_payload = 9000});
  expect_loopback(port, 0, 9000 + 62);
}

// Telemetry: the handlers are called directly (the socket cannot bind in the
// sandbox); rte_tel_data is opaque, so the values are checked through
// telemetry_shard_snapshots / telemetry_counters, which the handlers report.

void set_counters(ShardCounters& counters, uint64_t base) {
  counters.connections = base + 1;
  counters.handshakes = base + 2;
  counters.datagrams_in = base + 3;
  counters.datagrams_out = base + 4;
  counters.bytes_in = base + 5;
  counters.bytes_out = base + 6;
  counters.drops = base + 7;
  counters.retries = base + 8;
  counters.refused = base + 9;
  counters.steered = base + 10;
  counters.gso_fallbacks = base + 11;
  counters.version_negotiations = base + 12;
  counters.half_open_dropped = base + 13;
  counters.stateless_resets = base + 14;
}

int call_handler(int (*handler)(const char*, const char*, rte_tel_data*), const char* command) {
  rte_tel_data* data = rte_tel_data_alloc();
  EXPECT_NE(data, nullptr);
#if defined(__SANITIZE_ADDRESS__)
  // The shards command hands nested dicts to telemetry, which frees them
  // after writing the reply to its socket; called directly they stay.
  __lsan::ScopedDisabler nested_containers_are_freed_by_the_socket_writer;
#endif
  const int result = handler(command, "", data);
  rte_tel_data_free(data);
  return result;
}

TEST(Telemetry, NamesEveryCounter) {
  ShardCounters counters;
  set_counters(counters, 100);
  CounterSnapshot snapshot;
  snapshot.add(counters);
  const auto named = telemetry_counters(snapshot);
  const std::array<const char*, kTelemetryCounterCount> names = {
      "connections",       "handshakes",      "datagrams_in",  "datagrams_out",
      "bytes_in",          "bytes_out",       "drops",         "retries",
      "refused",           "steered",         "gso_fallbacks", "version_negotiations",
      "half_open_dropped", "stateless_resets"};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_STREQ(named[i].name, names[i]);
    EXPECT_EQ(named[i].value, 101 + i);
  }
}

TEST(Telemetry, HandlersReportTheSourceAndAnswerWithoutOne) {
  EXPECT_FALSE(telemetry_shard_snapshots().has_value());
  EXPECT_EQ(call_handler(telemetry_stats_command, "/dpquic/stats"), 0);
  EXPECT_EQ(call_handler(telemetry_shards_command, "/dpquic/shards"), 0);

  std::array<ShardCounters, 3> shards;
  for (size_t i = 0; i < shards.size(); ++i) set_counters(shards[i], 1000 * i);
  const std::array<const ShardCounters*, 3> pointers = {&shards[0], &shards[1], &shards[2]};
  set_telemetry_source(pointers);
  set_telemetry_source(pointers);  // registers once, replaces the source

  shards[1].drops = 77;  // read live, not copied at set time
  const std::optional<std::vector<CounterSnapshot>> snapshots = telemetry_shard_snapshots();
  ASSERT_TRUE(snapshots.has_value());
  ASSERT_EQ(snapshots->size(), 3u);
  EXPECT_EQ((*snapshots)[0].connections, 1u);
  EXPECT_EQ((*snapshots)[1].drops, 77u);
  EXPECT_EQ((*snapshots)[2].version_negotiations, 2012u);
  const CounterSnapshot total = sum_snapshots(*snapshots);
  EXPECT_EQ(total.connections, 1u + 1001 + 2001);
  EXPECT_EQ(total.drops, 7u + 77 + 2007);
  EXPECT_EQ(total.version_negotiations, 12u + 1012 + 2012);
  EXPECT_EQ(total.half_open_dropped, 13u + 1013 + 2013);
  EXPECT_EQ(total.stateless_resets, 14u + 1014 + 2014);
  const auto named_total = telemetry_counters(total);
  for (size_t i = 0; i < named_total.size(); ++i) {
    if (std::string(named_total[i].name) == "drops") continue;
    EXPECT_EQ(named_total[i].value, 3 * (i + 1) + 3000) << named_total[i].name;
  }
  EXPECT_EQ(call_handler(telemetry_stats_command, "/dpquic/stats"), 0);
  EXPECT_EQ(call_handler(telemetry_shards_command, "/dpquic/shards"), 0);

  clear_telemetry_source();
  EXPECT_FALSE(telemetry_shard_snapshots().has_value());
  EXPECT_EQ(call_handler(telemetry_stats_command, "/dpquic/stats"), 0);
  EXPECT_EQ(call_handler(telemetry_shards_command, "/dpquic/shards"), 0);

  set_telemetry_source({});  // a source with no shards: zero totals
  ASSERT_TRUE(telemetry_shard_snapshots().has_value());
  EXPECT_TRUE(telemetry_shard_snapshots()->empty());
  EXPECT_EQ(call_handler(telemetry_stats_command, "/dpquic/stats"), 0);
  clear_telemetry_source();
}

TEST(Telemetry, ManyShardsStayWithinTheDictLimit) {
  std::vector<ShardCounters> shards(RTE_TEL_MAX_DICT_ENTRIES + 4);
  std::vector<const ShardCounters*> pointers;
  for (const ShardCounters& shard : shards) pointers.push_back(&shard);
  set_telemetry_source(pointers);
  EXPECT_EQ(call_handler(telemetry_shards_command, "/dpquic/shards"), 0);
  clear_telemetry_source();
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
