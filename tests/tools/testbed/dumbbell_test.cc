// The dumbbell: pairs of nodes whose datagrams share one link per
// direction. Routing by destination to the node on the far side, the shared
// bottleneck serializing every sender's datagrams in arrival order, replies
// on the other link, unroutable datagrams counted, per-node byte counts.
#include "tools/testbed/dumbbell.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace dpquic::harness {
namespace {

using transmit::EcnCodepoint;

constexpr Instant kT0 = kSimulationStart;
constexpr size_t kSize = 1250;  // 1 ms at 10 Mbit/s

// Sends `count` datagrams of kSize bytes to `to` at its first poll (each
// tagged with `tag` and its index), echoes nothing, and records what
// arrives.
class FakeNode : public Node {
 public:
  struct Arrival {
    Instant at;
    SocketAddress from;
    uint8_t tag;
    uint8_t index;
  };

  FakeNode(SocketAddress self, SocketAddress to, uint8_t tag, uint8_t count)
      : self_(self), to_(to), tag_(tag), count_(count) {}

  void handle_datagram(Instant now, const PathAddresses& path, EcnCodepoint,
                       std::span<uint8_t> bytes) override {
    EXPECT_EQ(path.local, self_);
    arrivals.push_back({now, path.remote, bytes[0], bytes[1]});
  }
  void handle_timeout(Instant) override {}
  Instant poll_timeout() override { return kNever; }
  void poll_transmit(Instant, Sink& sink) override {
    std::vector<uint8_t> datagram(kSize, 0);
    for (; sent_ < count_; ++sent_) {
      datagram[0] = tag_;
      datagram[1] = sent_;
      sink.send(PathAddresses{self_, to_}, EcnCodepoint::kNotEct, datagram);
    }
  }

  std::vector<Arrival> arrivals;

 private:
  SocketAddress self_;
  SocketAddress to_;
  uint8_t tag_;
  uint8_t count_;
  uint8_t sent_ = 0;
};

LinkConfig link(uint64_t bandwidth_bps) {
  LinkConfig config;
  config.one_way_delay = 10 * kMillisecond;
  config.bandwidth_bps = bandwidth_bps;
  return config;
}

const SocketAddress kClientA = SocketAddress::ipv4(10, 0, 0, 1, 5000);
const SocketAddress kClientB = SocketAddress::ipv4(10, 0, 0, 2, 5000);
const SocketAddress kServerA = SocketAddress::ipv4(10, 0, 1, 1, 443);
const SocketAddress kServerB = SocketAddress::ipv4(10, 0, 1, 2, 443);

TEST(DumbbellTest, SendersShareTheBottleneckAndEachReceiverGetsItsOwn) {
  Dumbbell network(link(10'000'000), link(0));
  FakeNode client_a(kClientA, kServerA, 'a', 3);
  FakeNode client_b(kClientB, kServerB, 'b', 3);
  FakeNode server_a(kServerA, kClientA, 'A', 0);
  FakeNode server_b(kServerB, kClientB, 'B', 0);
  network.attach(client_a, kClientA, true);
  network.attach(client_b, kClientB, true);
  network.attach(server_a, kServerA, false);
  network.attach(server_b, kServerB, false);
  network.run_until([] { return false; }, kT0 + kSecond);

  // Client A polled first: its three datagrams take the first 3 ms of the
  // shared 10 Mbit/s link, B's the next 3, each then 10 ms of propagation.
  ASSERT_EQ(server_a.arrivals.size(), 3u);
  ASSERT_EQ(server_b.arrivals.size(), 3u);
  for (uint8_t i = 0; i < 3; ++i) {
    EXPECT_EQ(server_a.arrivals[i].at, kT0 + (i + 1) * kMillisecond + 10 * kMillisecond);
    EXPECT_EQ(server_a.arrivals[i].tag, 'a');
    EXPECT_EQ(server_a.arrivals[i].index, i);
    EXPECT_EQ(server_a.arrivals[i].from, kClientA);
    EXPECT_EQ(server_b.arrivals[i].at, kT0 + (i + 4) * kMillisecond + 10 * kMillisecond);
    EXPECT_EQ(server_b.arrivals[i].tag, 'b');
    EXPECT_EQ(server_b.arrivals[i].from, kClientB);
  }
  EXPECT_TRUE(client_a.arrivals.empty());
  EXPECT_EQ(network.client_to_server_stats().delivered, 6u);
  EXPECT_EQ(network.bytes_delivered_to(kServerA), 3 * kSize);
  EXPECT_EQ(network.bytes_delivered_to(kServerB), 3 * kSize);
  EXPECT_EQ(network.bytes_delivered_to(kClientA), 0u);
}

TEST(DumbbellTest, ServersReachClientsOnTheOtherLink) {
  Dumbbell network(link(0), link(10'000'000));
  FakeNode client(kClientA, kServerA, 'c', 0);
  FakeNode server(kServerA, kClientA, 's', 2);
  network.attach(client, kClientA, true);
  network.attach(server, kServerA, false);
  network.run_until([] { return false; }, kT0 + kSecond);
  ASSERT_EQ(client.arrivals.size(), 2u);
  EXPECT_EQ(client.arrivals[1].at, kT0 + 2 * kMillisecond + 10 * kMillisecond);
  EXPECT_EQ(client.arrivals[1].from, kServerA);
  EXPECT_EQ(network.server_to_client_stats().delivered, 2u);
  EXPECT_EQ(network.client_to_server_stats().sent, 0u);
}

TEST(DumbbellTest, NoOwnerOnTheFarSideIsUnroutable) {
  Dumbbell network(link(0), link(0));
  // To an address nobody owns, and to a client-side address from a client.
  FakeNode stray(kClientA, SocketAddress::ipv4(10, 9, 9, 9, 1), 'x', 2);
  FakeNode sideways(kClientB, kClientA, 'y', 1);
  network.attach(stray, kClientA, true);
  network.attach(sideways, kClientB, true);
  network.run_until([] { return false; }, kT0 + kSecond);
  EXPECT_EQ(network.client_to_server_stats().dropped_unroutable, 3u);
  EXPECT_EQ(network.client_to_server_stats().delivered, 0u);
  EXPECT_TRUE(stray.arrivals.empty());
}

TEST(DumbbellTest, AnAddressBelongsToOneNode) {
  Dumbbell network(link(0), link(0));
  FakeNode first(kClientA, kServerA, 'a', 0);
  FakeNode second(kClientA, kServerA, 'b', 0);
  network.attach(first, kClientA, true);
  EXPECT_THROW(network.attach(second, kClientA, false), std::invalid_argument);
}

}  // namespace
}  // namespace dpquic::harness
