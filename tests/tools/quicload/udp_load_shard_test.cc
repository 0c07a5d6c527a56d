// quicload's kernel-UDP client shard: a socket (source port) per
// connection, opened and closed on request, none kept after many
// connections; the shared port with --shared-port; no socket when the
// descriptors ran out (the connection waits, nothing throws); small receive
// batches on a connection's socket.

#include "tools/quicload/udp_load_shard.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "dataplane/udp/udp_socket.h"
#include "tests/util/descriptor_limit.h"
#include "tools/quicload/client_support.h"

namespace dpquic::tools {
namespace {

using dpquic::testing::open_descriptors;

dataplane::ShardConfig loopback_config() {
  return client_shard_config(conn::SocketAddress::ipv4(127, 0, 0, 1, 0), 64);
}

TEST(UdpLoadShardTest, EachConnectionHasAPortOfItsOwnUntilItIsGone) {
  auto tls = make_client_tls(ClientTlsOptions{});
  UdpLoadShard shard(loopback_config(), false, *tls);
  EXPECT_EQ(shard.open_sockets(), 0u);
  const size_t before = open_descriptors();
  std::vector<conn::SocketAddress> locals;
  std::set<uint16_t> ports;
  for (int i = 0; i < 40; ++i) {
    const std::optional<conn::SocketAddress> local = shard.open_local();
    ASSERT_TRUE(local.has_value());
    EXPECT_TRUE(local->same_ip(conn::SocketAddress::ipv4(127, 0, 0, 1, 0)));
    locals.push_back(*local);
    ports.insert(local->port);
  }
  EXPECT_EQ(ports.size(), 40u);
  EXPECT_EQ(shard.open_sockets(), 40u);
  EXPECT_EQ(open_descriptors(), before + 40);
  // Closed in another order than opened (each takes the last one's place).
  for (size_t i = 0; i < locals.size(); i += 2) shard.close_local(locals[i]);
  for (size_t i = 1; i < locals.size(); i += 2) shard.close_local(locals[i]);
  EXPECT_EQ(shard.open_sockets(), 0u);
  EXPECT_EQ(open_descriptors(), before);
  shard.close_local(locals.front());  // gone already: nothing happens

  for (int i = 0; i < 500; ++i) {
    const std::optional<conn::SocketAddress> local = shard.open_local();
    ASSERT_TRUE(local.has_value());
    shard.close_local(*local);
  }
  EXPECT_EQ(open_descriptors(), before);
}

TEST(UdpLoadShardTest, SharedPortHandsOutItsOneSocket) {
  auto tls = make_client_tls(ClientTlsOptions{});
  UdpLoadShard shard(loopback_config(), true, *tls);
  ASSERT_EQ(shard.open_sockets(), 1u);
  const std::optional<conn::SocketAddress> first = shard.open_local();
  const std::optional<conn::SocketAddress> second = shard.open_local();
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_NE(first->port, 0);
  EXPECT_EQ(*first, *second);
  shard.close_local(*first);
  EXPECT_EQ(shard.open_sockets(), 1u);
}

TEST(UdpLoadShardTest, NoDescriptorLeftMeansNoPortForNow) {
  auto tls = make_client_tls(ClientTlsOptions{});
  UdpLoadShard shard(loopback_config(), false, *tls);
  std::optional<conn::SocketAddress> starved;
  bool limited = false;
  {
    dpquic::testing::NoFreeDescriptors no_descriptors;
    limited = no_descriptors.ok();
    if (limited) starved = shard.open_local();
  }
  if (!limited) GTEST_SKIP() << "cannot lower RLIMIT_NOFILE here";
  EXPECT_FALSE(starved.has_value());
  EXPECT_EQ(shard.open_sockets(), 0u);
  EXPECT_TRUE(shard.open_local().has_value());
}

// What a connection's own socket is opened with: at most 4 messages (64 KiB
// buffers) per recvmmsg; nothing received is lost.
TEST(UdpLoadShardTest, AConnectionSocketReadsFewMessagesAtOnce) {
  dataplane::UdpSocketOptions options;
  options.bind = conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
  options.reuse_port = false;
  options.receive_batch = 2;
  dataplane::UdpSocket receiver(options);
  options.receive_batch = dataplane::UdpSocket::kReceiveBatch;
  dataplane::UdpSocket sender(options);
  // Growing sizes: GRO cannot merge them into one message.
  std::vector<uint8_t> bytes(600, 0x5a);
  for (size_t size = 100; size <= 500; size += 100) {
    transmit::BurstDescriptor burst;
    burst.datagram_count = 1;
    burst.lengths[0] = static_cast<uint16_t>(size);
    burst.segment_size = size;
    uint8_t* const datagram = bytes.data();
    const conn::PathAddresses path{sender.local(), receiver.local()};
    ASSERT_EQ(sender.send(path, burst, {&datagram, 1}).datagrams_sent, 1u);
  }
  std::vector<dataplane::ReceivedDatagram> out(64);
  std::vector<size_t> calls;
  for (int attempt = 0;
       attempt < 1000 && std::accumulate(calls.begin(), calls.end(), size_t{0}) < 5; ++attempt) {
    const size_t count = receiver.receive(out);
    if (count != 0) calls.push_back(count);
  }
  EXPECT_EQ(calls, (std::vector<size_t>{2, 2, 1}));
}

}  // namespace
}  // namespace dpquic::tools
