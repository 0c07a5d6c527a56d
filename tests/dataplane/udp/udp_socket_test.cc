#include "dataplane/udp/udp_socket.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "dataplane/udp/socket_address_conv.h"
#include "tests/dataplane/udp/udp_test_support.h"

namespace dpquic::dataplane {
namespace {

using conn::PathAddresses;
using conn::SocketAddress;
using testing::Copied;
using testing::loopback_v4;
using testing::loopback_v6;
using testing::options_for;
using testing::receive_count;
using testing::TestBurst;
using transmit::EcnCodepoint;

constexpr std::array<uint16_t, 5> kTrain = {1200, 1200, 1200, 1200, 355};

// Nothing beyond what was expected arrives within a short wait.
size_t count_stragglers(UdpSocket& socket) {
  std::array<ReceivedDatagram, 64> out;
  pollfd entry{socket.fd(), POLLIN, 0};
  poll(&entry, 1, 20);
  size_t total = 0;
  while (size_t n = socket.receive(out)) total += n;
  return total;
}

void expect_burst(const std::vector<Copied>& got, const TestBurst& burst, size_t count,
                  const PathAddresses& path) {
  ASSERT_EQ(got.size(), count);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(got[i].bytes, burst.expected(i)) << "datagram " << i;
    EXPECT_EQ(got[i].path.local, path.local) << format_address(got[i].path.local);
    EXPECT_EQ(got[i].path.remote, path.remote) << format_address(got[i].path.remote);
  }
}

class GsoTrainTest : public ::testing::TestWithParam<bool> {};

// 4 x 1200 + 355 leaves as one UDP_SEGMENT sendmsg and arrives as exactly
// those five datagrams, whether the receiver takes GRO super-datagrams or not.
TEST_P(GsoTrainTest, ArrivesAsTheSameFiveDatagrams) {
  const bool receiver_gro = GetParam();
  UdpSocket sender(options_for(loopback_v4()));
  UdpSocket receiver(options_for(loopback_v4(), receiver_gro));
  ASSERT_TRUE(sender.gso_enabled());
  ASSERT_EQ(receiver.gro_enabled(), receiver_gro);
  TestBurst burst(kTrain, 1200, 1);
  const PathAddresses path{sender.local(), receiver.local()};
  const SendOutcome outcome = sender.send(path, burst.descriptor(), burst.datagrams());
  EXPECT_EQ(outcome.datagrams_sent, 5u);
  EXPECT_EQ(outcome.error, 0);
  EXPECT_EQ(sender.stats().send_calls, 1u);
  EXPECT_EQ(sender.stats().gso_fallbacks, 0u);
  EXPECT_EQ(sender.stats().datagrams_sent, 5u);
  EXPECT_EQ(sender.stats().bytes_sent, 4u * 1200 + 355);

  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(count_stragglers(receiver), 0u);
  EXPECT_EQ(receiver.stats().datagrams_received, 5u);
  EXPECT_EQ(receiver.stats().bytes_received, 4u * 1200 + 355);
  // With GRO the train stays one super-datagram on loopback.
  EXPECT_EQ(receiver.stats().gro_batches, receiver_gro ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(ReceiverGro, GsoTrainTest, ::testing::Bool());

TEST(UdpSocketTest, GsoOffSendsOneMessagePerDatagram) {
  UdpSocket sender(options_for(loopback_v4(), true, /*gso=*/false));
  UdpSocket receiver(options_for(loopback_v4()));
  EXPECT_FALSE(sender.gso_enabled());
  TestBurst burst(kTrain, 1200, 2);
  const PathAddresses path{sender.local(), receiver.local()};
  const SendOutcome outcome = sender.send(path, burst.descriptor(), burst.datagrams());
  EXPECT_EQ(outcome.datagrams_sent, 5u);
  EXPECT_EQ(outcome.error, 0);
  EXPECT_EQ(sender.stats().send_calls, 1u);  // one sendmmsg
  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(count_stragglers(receiver), 0u);
  EXPECT_EQ(receiver.stats().gro_batches, 0u);  // separate datagrams never merge here

  // set_gso turns trains back on for the next send.
  sender.set_gso(true);
  EXPECT_TRUE(sender.send(path, burst.descriptor(), burst.datagrams()).error == 0);
  EXPECT_EQ(sender.stats().send_calls, 2u);
  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(receiver.stats().gro_batches, 1u);
}

// A kernel that refuses a GSO train with EINVAL (here SO_NO_CHECK; older
// kernels also for a route whose MTU is below the segment size) pauses GSO for the
// socket; the train still goes out, with sendmmsg. GSO is tried again after
// kFirstGsoPause sends, the pause doubling with each refusal in a row and
// starting over once a train goes through.
TEST(UdpSocketTest, RefusedGsoPausesWithBackoffAndResumes) {
  UdpSocket sender(options_for(loopback_v4()));
  UdpSocket receiver(options_for(loopback_v4()));
  int no_check = 1;
  ASSERT_EQ(setsockopt(sender.fd(), SOL_SOCKET, SO_NO_CHECK, &no_check, sizeof(no_check)), 0);
  TestBurst burst(kTrain, 1200, 14);
  const PathAddresses path{sender.local(), receiver.local()};
  const SendOutcome outcome = sender.send(path, burst.descriptor(), burst.datagrams());
  EXPECT_EQ(outcome.datagrams_sent, 5u);
  EXPECT_EQ(outcome.error, 0);
  EXPECT_FALSE(sender.gso_enabled());
  EXPECT_EQ(sender.stats().gso_fallbacks, 1u);
  EXPECT_EQ(sender.stats().send_calls, 2u);  // the refused sendmsg + one sendmmsg
  EXPECT_EQ(sender.stats().send_errors, 0u);
  EXPECT_EQ(sender.stats().datagrams_sent, 5u);
  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});

  // Sends until the given number of refusals, each train received whole;
  // returns the sends that took.
  const auto sends_until_refusals = [&](uint64_t refusals) {
    uint64_t sends = 0;
    while (sender.stats().gso_fallbacks < refusals && sends < 4 * UdpSocket::kMaxGsoPause) {
      EXPECT_EQ(sender.send(path, burst.descriptor(), burst.datagrams()).datagrams_sent, 5u);
      ++sends;
      expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
    }
    return sends;
  };
  // Paused: one sendmmsg per train, no refused attempt, for 63 more sends.
  EXPECT_EQ(sender.send(path, burst.descriptor(), burst.datagrams()).datagrams_sent, 5u);
  EXPECT_EQ(sender.stats().send_calls, 3u);
  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(sends_until_refusals(2), UdpSocket::kFirstGsoPause - 1);
  EXPECT_EQ(sends_until_refusals(3), 2 * UdpSocket::kFirstGsoPause);  // doubled

  // The socket accepts GSO again: after the pause a train goes through as
  // one sendmsg, and the next refusal pauses for the first length again.
  no_check = 0;
  ASSERT_EQ(setsockopt(sender.fd(), SOL_SOCKET, SO_NO_CHECK, &no_check, sizeof(no_check)), 0);
  for (uint64_t i = 0; i < 4 * UdpSocket::kFirstGsoPause && !sender.gso_enabled(); ++i) {
    EXPECT_EQ(sender.send(path, burst.descriptor(), burst.datagrams()).datagrams_sent, 5u);
    expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  }
  ASSERT_TRUE(sender.gso_enabled());
  const uint64_t calls = sender.stats().send_calls;
  const uint64_t batches = receiver.stats().gro_batches;
  EXPECT_EQ(sender.send(path, burst.descriptor(), burst.datagrams()).datagrams_sent, 5u);
  EXPECT_EQ(sender.stats().send_calls, calls + 1);
  expect_burst(receive_count(receiver, 5), burst, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(receiver.stats().gro_batches, batches + 1);  // it arrived as one GSO train
  no_check = 1;
  ASSERT_EQ(setsockopt(sender.fd(), SOL_SOCKET, SO_NO_CHECK, &no_check, sizeof(no_check)), 0);
  EXPECT_EQ(sends_until_refusals(4), 1u);
  EXPECT_EQ(sends_until_refusals(5), UdpSocket::kFirstGsoPause);
  EXPECT_EQ(sender.stats().send_errors, 0u);
  EXPECT_EQ(count_stragglers(receiver), 0u);
}

// Datagrams that are not one contiguous train go out with sendmmsg even when
// GSO is on.
TEST(UdpSocketTest, NonTrainBurstsUseSendmmsg) {
  UdpSocket sender(options_for(loopback_v4()));
  UdpSocket receiver(options_for(loopback_v4()));
  const PathAddresses path{sender.local(), receiver.local()};
  constexpr std::array<uint16_t, 3> kUneven = {1200, 800, 1200};
  TestBurst uneven(kUneven, 1200, 3);
  EXPECT_EQ(sender.send(path, uneven.descriptor(), uneven.datagrams()).datagrams_sent, 3u);
  expect_burst(receive_count(receiver, 3), uneven, 3, {receiver.local(), sender.local()});

  TestBurst scattered(kTrain, 1200, 4, /*contiguous=*/false);
  EXPECT_EQ(sender.send(path, scattered.descriptor(), scattered.datagrams()).datagrams_sent, 5u);
  expect_burst(receive_count(receiver, 5), scattered, 5, {receiver.local(), sender.local()});
  EXPECT_EQ(sender.stats().send_calls, 2u);
  EXPECT_EQ(receiver.stats().gro_batches, 0u);
  EXPECT_EQ(count_stragglers(receiver), 0u);
}

// 64 x 1200 bytes is more than 65000: two sendmsg calls (54 + 10 segments),
// and all 64 arrive in order.
TEST(UdpSocketTest, LongTrainIsSplitBelow65000Bytes) {
  UdpSocket sender(options_for(loopback_v4()));
  UdpSocket receiver(options_for(loopback_v4()));
  std::array<uint16_t, 64> lengths;
  lengths.fill(1200);
  lengths.back() = 1;
  TestBurst burst(lengths, 1200, 5);
  const PathAddresses path{sender.local(), receiver.local()};
  const SendOutcome outcome = sender.send(path, burst.descriptor(), burst.datagrams());
  EXPECT_EQ(outcome.datagrams_sent, 64u);
  EXPECT_EQ(outcome.error, 0);
  EXPECT_EQ(sender.stats().send_calls, 2u);
  EXPECT_EQ(sender.stats().bytes_sent, 63u * 1200 + 1);
  expect_burst(receive_count(receiver, 64), burst, 64, {receiver.local(), sender.local()});
  EXPECT_EQ(receiver.stats().gro_batches, 2u);
}

// out.size() smaller than a GRO batch: the rest waits in the socket and
// comes out, in order, from the next calls; nothing is lost.
TEST(UdpSocketTest, SmallOutputKeepsTheRestOfAGroBatch) {
  for (const bool gro : {true, false}) {
    SCOPED_TRACE(gro ? "receiver GRO on" : "receiver GRO off");
    UdpSocket sender(options_for(loopback_v4()));
    UdpSocket receiver(options_for(loopback_v4(), gro));
    TestBurst burst(kTrain, 1200, 6);
    const PathAddresses path{sender.local(), receiver.local()};
    ASSERT_EQ(sender.send(path, burst.descriptor(), burst.datagrams()).datagrams_sent, 5u);
    const std::vector<Copied> got = receive_count(receiver, 5, /*batch=*/2);
    expect_burst(got, burst, 5, {receiver.local(), sender.local()});
    EXPECT_FALSE(receiver.has_pending());
    EXPECT_EQ(count_stragglers(receiver), 0u);
    // GRO: 1 recvmmsg brought all 5 (2 + 2 + 1 returned without a new call).
    EXPECT_EQ(receiver.stats().gro_batches, gro ? 1u : 0u);
  }
}

// Step by step: one recvmmsg takes the whole super-datagram; the calls after
// it hand out the rest without a system call.
TEST(UdpSocketTest, KeptDatagramsComeOutWithoutASystemCall) {
  UdpSocket sender(options_for(loopback_v4()));
  UdpSocket receiver(options_for(loopback_v4()));
  TestBurst burst(kTrain, 1200, 13);
  ASSERT_EQ(sender.send({sender.local(), receiver.local()}, burst.descriptor(), burst.datagrams())
                .datagrams_sent,
            5u);
  pollfd entry{receiver.fd(), POLLIN, 0};
  ASSERT_EQ(poll(&entry, 1, 2000), 1);
  std::array<ReceivedDatagram, 2> out;
  size_t next = 0;
  for (const size_t expected : {2u, 2u, 1u}) {
    ASSERT_EQ(receiver.receive(out), expected);
    for (size_t i = 0; i < expected; ++i, ++next) {
      EXPECT_EQ(std::vector<uint8_t>(out[i].bytes.begin(), out[i].bytes.end()),
                burst.expected(next));
    }
    EXPECT_EQ(receiver.has_pending(), next < 5);
    EXPECT_EQ(receiver.stats().receive_calls, 1u);
  }
  EXPECT_EQ(receiver.receive(out), 0u);
  EXPECT_EQ(receiver.stats().receive_calls, 2u);
}

TEST(UdpSocketTest, ReceiveReturnsZeroWhenNothingIsPending) {
  UdpSocket socket(options_for(loopback_v4()));
  std::array<ReceivedDatagram, 8> out;
  EXPECT_EQ(socket.receive(out), 0u);
  EXPECT_EQ(socket.receive(std::span<ReceivedDatagram>()), 0u);
  EXPECT_EQ(socket.stats().receive_errors, 0u);
}

void check_ecn_round_trip(const SocketAddress& bind) {
  UdpSocket sender(options_for(bind));
  UdpSocket receiver(options_for(bind));
  const PathAddresses path{sender.local(), receiver.local()};
  for (const EcnCodepoint ecn :
       {EcnCodepoint::kEct0, EcnCodepoint::kCe, EcnCodepoint::kEct1, EcnCodepoint::kNotEct}) {
    SCOPED_TRACE(static_cast<int>(ecn));
    // A lone datagram (sendmmsg) and a train (UDP_SEGMENT) both carry it.
    constexpr std::array<uint16_t, 1> kSingle = {1200};
    TestBurst single(kSingle, 1200, 7);
    single.descriptor().ecn = ecn;
    ASSERT_EQ(sender.send(path, single.descriptor(), single.datagrams()).error, 0);
    TestBurst train(kTrain, 1200, 8);
    train.descriptor().ecn = ecn;
    ASSERT_EQ(sender.send(path, train.descriptor(), train.datagrams()).error, 0);
    const std::vector<Copied> got = receive_count(receiver, 6);
    ASSERT_EQ(got.size(), 6u);
    EXPECT_EQ(got[0].bytes, single.expected(0));
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].ecn, ecn) << i;
  }
}

TEST(UdpSocketTest, EcnRoundTripsOnIpv4) { check_ecn_round_trip(loopback_v4()); }

bool ipv6_loopback_available() {
  try {
    UdpSocket probe(options_for(loopback_v6()));
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

TEST(UdpSocketTest, EcnRoundTripsOnIpv6) {
  if (!ipv6_loopback_available()) GTEST_SKIP() << "cannot bind [::1]";
  check_ecn_round_trip(loopback_v6());
}

// A socket bound to a wildcard address learns from PKTINFO which address the
// client used, and its replies leave from that address.
void check_wildcard_replies(const SocketAddress& wildcard, const SocketAddress& client_bind,
                            std::initializer_list<SocketAddress> targets) {
  UdpSocket server(options_for(wildcard));
  UdpSocket client(options_for(client_bind));
  ASSERT_NE(server.local().port, 0);
  for (SocketAddress target : targets) {
    target.port = server.local().port;
    SCOPED_TRACE(format_address(target));
    constexpr std::array<uint16_t, 1> kOne = {100};
    TestBurst request(kOne, 100, 9);
    ASSERT_EQ(
        client.send({client.local(), target}, request.descriptor(), request.datagrams()).error, 0);
    const std::vector<Copied> at_server = receive_count(server, 1);
    ASSERT_EQ(at_server.size(), 1u);
    EXPECT_EQ(at_server[0].path.local, target) << format_address(at_server[0].path.local);
    EXPECT_EQ(at_server[0].path.remote, client.local());

    TestBurst reply(kOne, 100, 10);
    ASSERT_EQ(server.send(at_server[0].path, reply.descriptor(), reply.datagrams()).error, 0);
    const std::vector<Copied> at_client = receive_count(client, 1);
    ASSERT_EQ(at_client.size(), 1u);
    EXPECT_EQ(at_client[0].path.remote, target) << format_address(at_client[0].path.remote);
    EXPECT_EQ(at_client[0].bytes, reply.expected(0));
  }
}

// 127.0.0.2 is loopback too: without PKTINFO on the reply, the kernel would
// pick 127.0.0.1 as its source.
TEST(UdpSocketTest, Ipv4WildcardSocketRepliesFromTheAddressTheClientUsed) {
  check_wildcard_replies(SocketAddress::ipv4(0, 0, 0, 0, 0), loopback_v4(),
                         {loopback_v4(1), loopback_v4(2)});
}

TEST(UdpSocketTest, Ipv6WildcardSocketRepliesFromTheAddressTheClientUsed) {
  if (!ipv6_loopback_available()) GTEST_SKIP() << "cannot bind [::1]";
  check_wildcard_replies(SocketAddress::ipv6({}, 0), loopback_v6(), {loopback_v6()});
}

TEST(UdpSocketTest, BindingAPortInUseNamesTheAddress) {
  UdpSocketOptions exclusive = options_for(loopback_v4());
  exclusive.reuse_port = false;
  UdpSocket first(exclusive);
  exclusive.bind = first.local();
  const std::string address = format_address(first.local());
  try {
    UdpSocket second(exclusive);
    FAIL() << "bound " << address << " twice";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "cannot bind " + address + ": Address already in use");
  }
}

TEST(UdpSocketTest, ReusePortLetsShardsShareAnAddress) {
  UdpSocket first(options_for(loopback_v4()));
  UdpSocket second(options_for(first.local()));
  EXPECT_EQ(second.local(), first.local());
}

TEST(UdpSocketTest, RejectsAnInvalidBindAddress) {
  EXPECT_THROW(UdpSocket(options_for(SocketAddress{})), std::runtime_error);
}

TEST(UdpSocketTest, SendToTheOtherFamilyFails) {
  UdpSocket socket(options_for(loopback_v4()));
  constexpr std::array<uint16_t, 1> kOne = {10};
  TestBurst burst(kOne, 10, 11);
  const SendOutcome outcome =
      socket.send({socket.local(), loopback_v6()}, burst.descriptor(), burst.datagrams());
  EXPECT_EQ(outcome.datagrams_sent, 0u);
  EXPECT_EQ(outcome.error, EAFNOSUPPORT);
  EXPECT_EQ(socket.stats().send_errors, 1u);
}

TEST(UdpSocketTest, MovedSocketKeepsWorking) {
  UdpSocket original(options_for(loopback_v4()));
  const SocketAddress address = original.local();
  UdpSocket receiver(std::move(original));
  EXPECT_EQ(original.fd(), -1);
  EXPECT_EQ(receiver.local(), address);
  UdpSocket sender(options_for(loopback_v4()));
  EXPECT_TRUE(sender.wait_writable(0));
  TestBurst burst(kTrain, 1200, 12);
  ASSERT_EQ(sender.send({sender.local(), address}, burst.descriptor(), burst.datagrams()).error, 0);
  expect_burst(receive_count(receiver, 5), burst, 5, {address, sender.local()});
}

}  // namespace
}  // namespace dpquic::dataplane
