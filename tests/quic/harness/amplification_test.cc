// Scenario: the anti-amplification limit (RFC 9000 §8.1). A server with a
// long certificate chain (9 certificates: a flight of many datagrams) must
// not send more than three times what it received from the client until the
// client's address is validated (here: by the first client Handshake packet
// it receives). Client datagrams 2..7 are lost, so the server sits at the
// limit until the client's probes arrive; the handshake still completes.

#include <gtest/gtest.h>
#include <openssl/x509.h>

#include <vector>

#include "tests/quic/harness/packet_census.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using wire::PacketType;

constexpr size_t kCidLength = 16;

struct Outcome {
  bool completed = false;
  uint64_t mismatches = 0;
  uint64_t violations = 0;
  uint64_t worst_sent = 0, worst_received = 0;  // at the worst ratio
  uint64_t server_bytes_before_validation = 0;
  uint64_t server_datagrams_before_validation = 0;
  uint64_t client_datagrams_before_validation = 0;  // that reached the server
  Instant validated_at = kNever;
  size_t chain_bytes = 0;
  bool confirmed = false;
  uint64_t dropped = 0;
};

Outcome run(size_t chain_length, std::vector<uint64_t> client_drops) {
  PairOptions options;
  options.certificate_chain_length = chain_length;
  options.client_to_server.drop_indices = client_drops;
  const Duration delay = options.client_to_server.one_way_delay;
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);

  Outcome outcome;
  for (const auto& certificate : pair.certificate.chain()) {
    outcome.chain_bytes += static_cast<size_t>(i2d_X509(certificate.get(), nullptr));
  }
  // Client datagrams that reach the server, with their arrival times (the
  // link has a fixed delay and no other impairment).
  struct Arrival {
    Instant at;
    size_t bytes;
  };
  std::vector<Arrival> arrivals;
  uint64_t client_index = 0;
  pair.simulator->set_observer([&](bool client_to_server, Instant now, const Datagram& d) {
    if (client_to_server) {
      const uint64_t index = client_index++;
      for (uint64_t dropped : client_drops) {
        if (index == dropped) return;
      }
      arrivals.push_back({now + delay, d.bytes.size()});
      // The server validates the address on the first Handshake packet it
      // receives from the client (RFC 9000 §8.1).
      if (outcome.validated_at == kNever &&
          contains_packet(d.bytes, kCidLength, PacketType::kHandshake)) {
        outcome.validated_at = now + delay;
      }
      return;
    }
    if (now >= outcome.validated_at) return;
    outcome.server_bytes_before_validation += d.bytes.size();
    ++outcome.server_datagrams_before_validation;
    uint64_t received = 0, count = 0;
    for (const Arrival& a : arrivals) {
      if (a.at <= now) {
        received += a.bytes;
        ++count;
      }
    }
    outcome.client_datagrams_before_validation = count;
    const uint64_t sent = outcome.server_bytes_before_validation;
    if (sent > 3 * received) ++outcome.violations;
    if (outcome.worst_received == 0 ||
        sent * outcome.worst_received > outcome.worst_sent * received) {
      outcome.worst_sent = sent;
      outcome.worst_received = received;
    }
  });

  const auto handle = pair.connect();
  client_app.request(handle, 50'000);
  outcome.completed = pair.run_until([&] { return client_app.completed() == 1; });
  outcome.mismatches = client_app.mismatches() + (client_app.bytes_received() == 50'000 ? 0 : 1);
  conn::Connection* client = pair.client_connection(handle);
  outcome.confirmed = client != nullptr && client->handshake_confirmed();
  outcome.dropped = pair.simulator->client_to_server_stats().dropped_loss;
  return outcome;
}

// The assigned case: 9 certificates, client datagrams 2..7 lost.
TEST(AmplificationTest, NineCertificatesWithClientLossStayWithinThreeTimes) {
  const Outcome outcome = run(9, {2, 3, 4, 5, 6, 7});
  ASSERT_TRUE(outcome.completed);
  EXPECT_EQ(outcome.mismatches, 0u);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_EQ(outcome.dropped, 6u);
  EXPECT_EQ(outcome.violations, 0u)
      << "worst " << outcome.worst_sent << " sent for " << outcome.worst_received;
  EXPECT_LT(outcome.validated_at, kNever);
  // The whole server flight (about 2.9 kB of P-256 certificates plus the
  // other handshake messages) went before validation, in several datagrams.
  EXPECT_GT(outcome.server_bytes_before_validation, outcome.chain_bytes);
  EXPECT_GE(outcome.server_datagrams_before_validation, 3u);
}

// A flight larger than three client Initials, and the client's first
// acknowledgments lost: the server must stop at the limit and wait until the
// client's Handshake packets (its probes) validate the address.
TEST(AmplificationTest, LongChainWaitsAtTheLimitUntilTheClientSendsMore) {
  const Outcome outcome = run(16, {1, 2, 3});
  ASSERT_TRUE(outcome.completed);
  EXPECT_EQ(outcome.mismatches, 0u);
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_GT(outcome.chain_bytes, 3u * 1200);
  EXPECT_EQ(outcome.violations, 0u)
      << "worst " << outcome.worst_sent << " sent for " << outcome.worst_received;
  // Only the client's 1200-byte Initial arrived before its Handshake packet
  // did: the server used exactly its 3 x 1200 budget and held the rest of
  // the flight (the chain alone is larger) until the address was validated.
  EXPECT_EQ(outcome.client_datagrams_before_validation, 1u);
  EXPECT_EQ(outcome.server_bytes_before_validation, 3u * 1200);
  EXPECT_LT(outcome.server_bytes_before_validation, outcome.chain_bytes);
}

}  // namespace
}  // namespace dpquic::harness
