// receive() and send() on a hot loop never touch the heap: all message
// headers, cmsg buffers and receive buffers belong to the socket.

#include <gtest/gtest.h>
#include <poll.h>

#include <array>

#include "dataplane/udp/udp_socket.h"
#include "tests/dataplane/udp/udp_test_support.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::dataplane {
namespace {

using testing::loopback_v4;
using testing::options_for;
using testing::TestBurst;

TEST(UdpSocketAllocationTest, ReceiveAndSendAllocateNothing) {
  UdpSocket gso_sender(options_for(loopback_v4()));
  UdpSocket plain_sender(options_for(loopback_v4(), true, /*gso=*/false));
  UdpSocket receiver(options_for(loopback_v4()));
  constexpr std::array<uint16_t, 5> kTrain = {1200, 1200, 1200, 1200, 355};
  TestBurst burst(kTrain, 1200, 1);
  burst.descriptor().ecn = transmit::EcnCodepoint::kEct0;
  std::array<ReceivedDatagram, 3> out;  // smaller than a batch: exercises the carry-over
  constexpr int kRounds = 200;

  size_t received = 0;
  size_t sent = 0;
  size_t allocations = 0;
  {
    dpquic::testing::AllocationWindow window;
    for (int round = 0; round < kRounds; ++round) {
      UdpSocket& sender = round % 2 == 0 ? gso_sender : plain_sender;
      sent += sender.send({sender.local(), receiver.local()}, burst.descriptor(), burst.datagrams())
                  .datagrams_sent;
      size_t this_round = 0;
      for (int attempt = 0; attempt < 100 && this_round < kTrain.size(); ++attempt) {
        const size_t n = receiver.receive(out);
        this_round += n;
        if (n == 0) {
          pollfd entry{receiver.fd(), POLLIN, 0};
          poll(&entry, 1, 20);
        }
      }
      received += this_round;
    }
    allocations = window.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(sent, kRounds * kTrain.size());
  EXPECT_EQ(received, kRounds * kTrain.size());
  EXPECT_EQ(gso_sender.stats().send_calls, kRounds / 2u);
  EXPECT_EQ(plain_sender.stats().send_calls, kRounds / 2u);
  EXPECT_GE(receiver.stats().gro_batches, 1u);
}

}  // namespace
}  // namespace dpquic::dataplane
