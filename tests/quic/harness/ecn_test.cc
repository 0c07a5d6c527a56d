// Scenarios: ECN (RFC 9000 §13.4, RFC 9002 §7.1, §B.7) over the in-memory
// network, whose links carry the IP codepoint.
//  - A path that keeps the marks: packets go out ECT(0), the peer's ACK_ECN
//    counts validate, and marking goes on.
//  - A path that bleaches the marks: validation fails and the sender stops
//    marking.
//  - A path that sets CE: congestion events (the window shrinks) without any
//    packet being lost.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using transmit::EcnCodepoint;
using State = conn::EcnValidator::State;

constexpr uint64_t kTransferBytes = 2 << 20;

struct EcnRun {
  std::unique_ptr<QuicPair> pair;
  std::unique_ptr<PerfServer> server_app;
  std::unique_ptr<PerfClient> client_app;
  endpoint::ConnectionHandle handle = 0;
  // Codepoints as sent (before the link's impairments), per direction.
  std::vector<EcnCodepoint> server_sent, client_sent;

  explicit EcnRun(const LinkConfig& server_to_client) {
    PairOptions options;
    options.server_to_client = server_to_client;
    pair = std::make_unique<QuicPair>(options);
    server_app = std::make_unique<PerfServer>(*pair->server);
    client_app = std::make_unique<PerfClient>(*pair->client);
    pair->server_node->set_application([this](Instant now) { server_app->run(now); });
    pair->client_node->set_application([this](Instant now) { client_app->run(now); });
    pair->simulator->set_observer([this](bool c2s, Instant, const Datagram& d) {
      (c2s ? client_sent : server_sent).push_back(d.ecn);
    });
    handle = pair->connect();
    client_app->request(handle, kTransferBytes);
  }
  void finish() {
    ASSERT_TRUE(pair->run_until([&] { return client_app->completed() == 1; }));
    EXPECT_EQ(client_app->bytes_received(), kTransferBytes);
    EXPECT_EQ(client_app->mismatches(), 0u);
    ASSERT_NE(client(), nullptr);
    ASSERT_NE(server(), nullptr);
  }
  conn::Connection* client() { return pair->client_connection(handle); }
  conn::Connection* server() { return pair->server_connection(); }
};

size_t count(const std::vector<EcnCodepoint>& sent, EcnCodepoint codepoint) {
  size_t n = 0;
  for (EcnCodepoint c : sent) n += c == codepoint ? 1 : 0;
  return n;
}

TEST(EcnTest, MarksPreservedValidateAndMarkingContinues) {
  EcnRun run(LinkConfig{});
  ASSERT_NO_FATAL_FAILURE(run.finish());
  EXPECT_EQ(run.server()->ecn().state(), State::kCapable);
  EXPECT_EQ(run.client()->ecn().state(), State::kCapable);
  // The first datagrams (the test, RFC 9000 §13.4.2) and everything after
  // validation are ECT(0): only the few sent between the end of the test
  // and the first validating ACK go unmarked.
  ASSERT_GT(run.server_sent.size(), 1000u);
  EXPECT_EQ(run.server_sent.front(), EcnCodepoint::kEct0);
  EXPECT_EQ(run.client_sent.front(), EcnCodepoint::kEct0);
  EXPECT_EQ(run.server_sent.back(), EcnCodepoint::kEct0);
  EXPECT_GT(count(run.server_sent, EcnCodepoint::kEct0), run.server_sent.size() * 95 / 100);
  EXPECT_EQ(count(run.server_sent, EcnCodepoint::kCe), 0u);
  EXPECT_EQ(count(run.server_sent, EcnCodepoint::kEct1), 0u);
  // No congestion signal on a clean path.
  EXPECT_EQ(run.server()->stats().packets_lost, 0u);
  EXPECT_EQ(run.server()->congestion().slow_start_threshold(), UINT64_MAX);
}

TEST(EcnTest, BleachedMarksFailValidationAndMarkingStops) {
  LinkConfig bleaching;
  bleaching.bleach_ecn = true;
  EcnRun run(bleaching);
  ASSERT_NO_FATAL_FAILURE(run.finish());
  // The client saw no marks, so its ACKs carry no ECN counts: the server's
  // marked packets were acknowledged without them (RFC 9000 §13.4.2.1).
  EXPECT_EQ(run.server()->ecn().state(), State::kFailed);
  // The other direction keeps its marks.
  EXPECT_EQ(run.client()->ecn().state(), State::kCapable);
  EXPECT_EQ(run.server_sent.front(), EcnCodepoint::kEct0);
  // After the test packets the server never marks again.
  const size_t marked = count(run.server_sent, EcnCodepoint::kEct0);
  EXPECT_GE(marked, 1u);
  EXPECT_LE(marked, conn::EcnValidator::kTestingPackets);
  for (size_t i = marked; i < run.server_sent.size(); ++i) {
    ASSERT_EQ(run.server_sent[i], EcnCodepoint::kNotEct) << "datagram " << i;
  }
}

TEST(EcnTest, CeMarksAreCongestionWithoutLoss) {
  LinkConfig marking;
  marking.ce_mark = 0.02;
  marking.seed = 7;
  EcnRun run(marking);
  ASSERT_NO_FATAL_FAILURE(run.finish());
  EXPECT_GT(run.pair->simulator->server_to_client_stats().ce_marked, 10u);
  EXPECT_EQ(run.pair->simulator->server_to_client_stats().dropped_loss, 0u);
  // CE-marked packets arrive: a valid report, no loss, yet the window was
  // reduced (RFC 9002 §7.1): slow start ended at a congestion event.
  EXPECT_EQ(run.server()->ecn().state(), State::kCapable);
  EXPECT_EQ(run.server()->stats().packets_lost, 0u);
  EXPECT_NE(run.server()->congestion().slow_start_threshold(), UINT64_MAX);
  EXPECT_FALSE(run.server()->congestion().in_slow_start());
  EXPECT_EQ(count(run.server_sent, EcnCodepoint::kCe), 0u);  // CE is the network's
}

}  // namespace
}  // namespace dpquic::harness
