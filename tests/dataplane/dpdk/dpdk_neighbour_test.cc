// What ARP frames and datagrams built by hand can make a DPDK shard believe
// about its neighbours, over ring ports (DpdkRig, EAL without hugepages, PCI
// or telemetry): only answers to its own requests and requests for its own
// address teach it, from on-link senders with individual MACs, within a
// per-shard rate; the gateway outlives any number of new neighbours; the
// datagrams held for one unresolved neighbour are bounded.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "dataplane/dpdk/eal.h"
#include "dataplane/shard/shard_core.h"
#include "tests/dataplane/dpdk/frame_test_util.h"
#include "tools/testbed/dpdk_rig.h"

namespace dpquic::dataplane::dpdk {
namespace {

using conn::SocketAddress;
using testing::arp_frame;
using testing::Bytes;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    init_eal("dpdk_neighbour_test", {"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
                                     "--no-telemetry", "--log-level=lib.eal:error", "-l", "0"});
  }
  void TearDown() override { cleanup_eal(); }
};

const auto* const kEal = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

// The server is 10.77.0.1/24 (DpdkRig).
constexpr std::array<uint8_t, 4> kServerIp = {10, 77, 0, 1};
constexpr MacAddress kStrangerMac = {0x02, 0x5e, 0x00, 0x00, 0x00, 0x66};

std::array<uint8_t, 4> host(uint8_t last) { return {10, 77, 0, last}; }
MacAddress host_mac(uint8_t last) { return {0x02, 0x10, 0x00, 0x00, 0x00, last}; }
SocketAddress address(const std::array<uint8_t, 4>& ip) { return testing::v4(ip, 0); }

// A broadcast ARP request for the server's address.
Bytes request_from(const std::array<uint8_t, 4>& ip, const MacAddress& mac) {
  return arp_frame({.sender_mac = mac, .sender_ip = ip, .target_ip = kServerIp, .source_mac = mac});
}

// An ARP reply to the server, unicast.
Bytes reply_from(DpdkRig& rig, const std::array<uint8_t, 4>& ip, const MacAddress& mac) {
  return arp_frame({.opcode = 2,
                    .sender_mac = mac,
                    .sender_ip = ip,
                    .target_mac = rig.server_mac(),
                    .target_ip = kServerIp,
                    .destination_mac = rig.server_mac(),
                    .source_mac = mac});
}

// Polls server shard `shard` until its receive ring is empty.
void deliver(DpdkRig& rig, Instant now, size_t shard = 0) {
  while (rig.server(shard).poll_once(now)) {
  }
}

size_t frame_drops(const DpdkShard& shard, DropReason reason) {
  return shard.stats().frame_drops[static_cast<size_t>(reason)];
}

const Instant kStart = 1000 * kSecond;

TEST(DpdkNeighbourTest, UnsolicitedArpReplyIsIgnored) {
  DpdkRig rig(DpdkRigOptions{});
  rig.send_to_server(reply_from(rig, host(9), kStrangerMac));
  deliver(rig, kStart);
  const DpdkShard& server = rig.server(0);
  EXPECT_EQ(server.neighbours().lookup(address(host(9)), kStart), std::nullopt);
  EXPECT_EQ(server.neighbours().size(), 0u);
  EXPECT_EQ(server.stats().neighbour_ignored, 1u);
  EXPECT_EQ(server.stats().neighbour_learnt, 0u);
  EXPECT_TRUE(rig.take_server_frames().empty());
}

TEST(DpdkNeighbourTest, ArpRequestFromOutsideThePrefixIsIgnored) {
  DpdkRig rig(DpdkRigOptions{});
  rig.send_to_server(request_from({10, 78, 0, 5}, kStrangerMac));
  deliver(rig, kStart);
  const DpdkShard& server = rig.server(0);
  EXPECT_EQ(server.neighbours().lookup(address({10, 78, 0, 5}), kStart), std::nullopt);
  EXPECT_EQ(server.neighbours().size(), 0u);
  EXPECT_EQ(server.stats().arp_replies, 0u);
  EXPECT_EQ(frame_drops(server, DropReason::kOffLinkSender), 1u);
  EXPECT_TRUE(rig.take_server_frames().empty());
}

TEST(DpdkNeighbourTest, GroupMacSendersAreRejected) {
  DpdkRig rig(DpdkRigOptions{});
  const MacAddress multicast = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
  // A group Ethernet source around an individual ARP sender address...
  rig.send_to_server(arp_frame({.sender_mac = kStrangerMac,
                                .sender_ip = host(9),
                                .target_ip = kServerIp,
                                .source_mac = multicast}));
  // ... and a group ARP sender address from an individual source.
  rig.send_to_server(arp_frame({.sender_mac = multicast,
                                .sender_ip = host(10),
                                .target_ip = kServerIp,
                                .source_mac = kStrangerMac}));
  deliver(rig, kStart);
  const DpdkShard& server = rig.server(0);
  EXPECT_EQ(server.neighbours().lookup(address(host(9)), kStart), std::nullopt);
  EXPECT_EQ(server.neighbours().lookup(address(host(10)), kStart), std::nullopt);
  EXPECT_EQ(server.neighbours().size(), 0u);
  EXPECT_EQ(server.stats().arp_replies, 0u);
  EXPECT_EQ(frame_drops(server, DropReason::kMalformed), 2u);
  EXPECT_TRUE(rig.take_server_frames().empty());
}

TEST(DpdkNeighbourTest, DatagramsTeachNothing) {
  DpdkRig rig(DpdkRigOptions{});
  testing::Ipv4Fields fields;
  fields.source = host(9);
  fields.destination = kServerIp;
  fields.destination_mac = rig.server_mac();
  fields.source_mac = kStrangerMac;
  rig.send_to_server(
      testing::ipv4_udp_frame({'q', 'u', 'i', 'c'}, 50001, DpdkRig::kServerPort, fields));
  deliver(rig, kStart);
  const DpdkShard& server = rig.server(0);
  EXPECT_EQ(server.stats().rx_datagrams, 1u);  // the endpoint had it (and dropped it)
  EXPECT_EQ(server.neighbours().lookup(address(host(9)), kStart), std::nullopt);
  EXPECT_FALSE(server.neighbours().fresh(address(host(9)), kStart));
}

TEST(DpdkNeighbourTest, GatewaySurvivesAFloodOfNewNeighbours) {
  DpdkRigOptions options;
  options.server_gateway4 = address(host(254));
  options.neighbour_capacity = 8;
  DpdkRig rig(options);
  DpdkShard& server = rig.server(0);
  // The shard asks for its gateway first; the gateway answers.
  server.poll_once(kStart);
  const std::vector<std::vector<uint8_t>> sent = rig.take_server_frames();
  ASSERT_EQ(sent.size(), 1u);
  const Bytes expected_request = arp_frame({.sender_mac = rig.server_mac(),
                                            .sender_ip = kServerIp,
                                            .target_ip = host(254),
                                            .source_mac = rig.server_mac()});
  EXPECT_EQ(sent[0], expected_request);
  const MacAddress gateway_mac = host_mac(254);
  rig.send_to_server(reply_from(rig, host(254), gateway_mac));
  deliver(rig, kStart);
  ASSERT_EQ(server.neighbours().lookup(address(host(254)), kStart), gateway_mac);

  // Forty new neighbours ask for us: five times the cache.
  for (uint8_t i = 10; i < 50; ++i) rig.send_to_server(request_from(host(i), host_mac(i)));
  deliver(rig, kStart + kSecond);
  EXPECT_EQ(server.stats().arp_replies, 40u);
  EXPECT_EQ(server.neighbours().size(), 8u);
  EXPECT_EQ(server.neighbours().lookup(address(host(254)), kStart + kSecond), gateway_mac);
  EXPECT_EQ(server.neighbours().lookup(address(host(49)), kStart + kSecond), host_mac(49));
  EXPECT_EQ(server.stats().solicitations, 1u);  // the gateway was never asked for again
}

TEST(DpdkNeighbourTest, ArpFloodBeyondTheRateLimitIsDroppedAndCounted) {
  DpdkRig rig(DpdkRigOptions{});
  DpdkShard& server = rig.server(0);
  constexpr size_t kBurst = DpdkShard::kNeighbourFrameBurst;
  constexpr size_t kExcess = 50;
  for (size_t i = 0; i < kBurst + kExcess; ++i) {
    const auto last = static_cast<uint8_t>(2 + i);
    rig.send_to_server(request_from(host(last), host_mac(last)));
  }
  deliver(rig, kStart);  // all at one instant: no refill
  EXPECT_EQ(server.stats().arp_replies, kBurst);
  EXPECT_EQ(server.stats().neighbour_rate_limited, kExcess);
  EXPECT_EQ(rig.take_server_frames().size(), kBurst);
  EXPECT_EQ(server.counters().drops.load(), kExcess);
  // The tokens come back at kNeighbourFramesPerSecond.
  rig.send_to_server(request_from(host(200), host_mac(200)));
  deliver(rig, kStart + kSecond / DpdkShard::kNeighbourFramesPerSecond);
  EXPECT_EQ(server.stats().arp_replies, kBurst + 1);
  EXPECT_EQ(server.stats().neighbour_rate_limited, kExcess);
}

TEST(DpdkNeighbourTest, DatagramsHeldPerUnresolvedNeighbourAreBounded) {
  DpdkRig rig(DpdkRigOptions{});
  DpdkShard& client = rig.client();
  // Ten connections to the server, whose MAC the client has yet to learn
  // (nothing is carried): ten Initials for one neighbour.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(rig.connect(kStart).has_value());
  client.poll_once(kStart);
  EXPECT_EQ(client.stats().neighbour_held, DpdkShard::kMaxHeldPerNeighbour);
  EXPECT_EQ(client.stats().neighbour_hold_drops, 10 - DpdkShard::kMaxHeldPerNeighbour);
  EXPECT_EQ(client.stats().solicitations, 1u);

  // Four each for five more unresolved neighbours: the shard's bound.
  for (uint8_t last = 50; last < 55; ++last) {
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(
          client.endpoint()
              .connect(kStart, {rig.client_address(), testing::v4(host(last), 4433)}, "localhost")
              .has_value());
    }
  }
  client.poll_once(kStart);
  EXPECT_EQ(client.stats().neighbour_held, DpdkShard::kMaxHeld);
  EXPECT_EQ(client.stats().neighbour_hold_drops, 30 - DpdkShard::kMaxHeld);
  EXPECT_EQ(client.stats().solicitations, 6u);
}

TEST(DpdkNeighbourTest, AnswersReachEveryShard) {
  DpdkRigOptions options;
  options.server_shards = 2;
  options.server_gateway4 = address(host(254));
  DpdkRig rig(options);
  // Both shards ask for the gateway; its answer reaches queue 0 only (RSS
  // does not spread ARP).
  rig.server(0).poll_once(kStart);
  rig.server(1).poll_once(kStart);
  EXPECT_EQ(rig.take_server_frames().size(), 2u);
  rig.send_to_server(reply_from(rig, host(254), host_mac(254)), 0);
  rig.server(0).poll_once(kStart);
  rig.server(1).poll_once(kStart);
  EXPECT_EQ(rig.server(0).stats().neighbour_shared, 1u);
  EXPECT_EQ(rig.server(1).stats().steered_in, 1u);
  for (size_t shard = 0; shard < 2; ++shard) {
    EXPECT_EQ(rig.server(shard).neighbours().lookup(address(host(254)), kStart), host_mac(254))
        << "shard " << shard;
    EXPECT_EQ(rig.server(shard).stats().neighbour_learnt, 1u) << "shard " << shard;
  }
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
