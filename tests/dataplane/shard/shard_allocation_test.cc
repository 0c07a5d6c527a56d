// The whole kernel-UDP datapath allocates nothing per packet: a server
// shard and a client shard over loopback sockets, driven in one thread,
// move 40 MB of one download (perf, then h3) inside an allocation window
// opened after warm-up, and the window counts zero.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "dataplane/app/h3_client.h"
#include "dataplane/app/h3_server.h"
#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/shard/shard.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::dataplane {
namespace {

constexpr uint64_t kDownloadBytes = 60'000'000;
constexpr uint64_t kWindowStart = 10'000'000;
constexpr uint64_t kWindowEnd = 50'000'000;

struct Rig {
  explicit Rig(const char* alpn) : certificate(crypto::CertificateChain::generate_self_signed()) {
    crypto::TlsServerConfig server_tls;
    server_tls.certificate = &certificate;
    server_tls.alpn_protocols = {alpn};
    server_context = crypto::TlsContext::create_server(server_tls);
    ShardConfig server_config;
    server_config.endpoint.max_connections = 4;
    server_config.endpoint.retry.mode = endpoint::RetryMode::kNever;
    server_config.listen = {conn::SocketAddress::ipv4(127, 0, 0, 1, 0)};
    server_config.reuse_port = false;
    server = std::make_unique<Shard>(server_config, *server_context);

    crypto::TlsClientConfig client_tls;
    client_tls.alpn_protocols = {alpn};
    client_tls.verification = crypto::PeerVerification::kInsecureNoVerify;
    client_context = crypto::TlsContext::create_client(client_tls);
    ShardConfig client_config;
    client_config.endpoint.role = wire::Role::kClient;
    client_config.endpoint.max_connections = 4;
    client_config.listen = {conn::SocketAddress::ipv4(127, 0, 0, 1, 0)};
    client_config.reuse_port = false;
    client = std::make_unique<Shard>(client_config, *client_context);
  }
  ~Rig() {
    client->endpoint().reset_connections();
    server->endpoint().reset_connections();
  }
  endpoint::ConnectionHandle connect() {
    const conn::PathAddresses path{client->sockets().front()->local(),
                                   server->sockets().front()->local()};
    return *client->endpoint().connect(monotonic_now(), path, "localhost");
  }
  // Runs both shards until `received()` reaches `bytes` (or 30 s pass).
  template <typename Received>
  bool run_until(uint64_t bytes, Received received) {
    const Instant deadline = monotonic_now() + 30 * kSecond;
    while (received() < bytes) {
      const Instant now = monotonic_now();
      if (now > deadline) return false;
      server->poll_once(now);
      client->poll_once(now);
    }
    return true;
  }

  crypto::CertificateChain certificate;
  std::unique_ptr<crypto::TlsContext> server_context, client_context;
  std::unique_ptr<Shard> server, client;
};

// Declared after the applications: drops the connections (and the chunks
// they hold from the applications' pools) before the applications go.
struct ConnectionsReset {
  Rig& rig;
  ~ConnectionsReset() {
    rig.client->endpoint().reset_connections();
    rig.server->endpoint().reset_connections();
  }
};

// Runs the download to kWindowStart, counts allocations up to kWindowEnd,
// then runs it to the end; nullopt if it stalled.
template <typename Received>
std::optional<size_t> allocations_in_window(Rig& rig, Received received) {
  if (!rig.run_until(kWindowStart, received)) return std::nullopt;
  size_t allocations = 0;
  {
    testing::AllocationWindow window;
    if (!rig.run_until(kWindowEnd, received)) return std::nullopt;
    allocations = window.count();
  }
  if (!rig.run_until(kDownloadBytes, received)) return std::nullopt;
  return allocations;
}

class PerfCompletion final : public PerfResponseHandler {
 public:
  void on_complete(uint64_t, const PerfOutcome& outcome) override { result = outcome; }
  std::optional<PerfOutcome> result;
};

TEST(ShardAllocationTest, PerfDownloadAllocatesNothingPerPacket) {
  Rig rig("perf");
  PerfServer server_app(rig.server->endpoint());
  PerfClient client_app(rig.client->endpoint());
  rig.server->set_application(&server_app);
  rig.client->set_application(&client_app);
  ConnectionsReset reset{rig};
  PerfCompletion completion;
  const uint64_t id = client_app.request(rig.connect(), kDownloadBytes, 0, &completion);
  auto received = [&] {
    const auto progress = client_app.progress(id);
    return progress ? progress->bytes_received : kDownloadBytes;
  };
  const std::optional<size_t> allocations = allocations_in_window(rig, received);
  ASSERT_TRUE(allocations.has_value());
  ASSERT_TRUE(completion.result.has_value());
  EXPECT_EQ(completion.result->result, PerfResult::kOk);
  EXPECT_EQ(completion.result->bytes_received, kDownloadBytes);
  EXPECT_EQ(*allocations, 0u);
}

class H3Completion final : public H3ResponseHandler {
 public:
  void on_headers(uint64_t, int s, std::optional<uint64_t>) override { status = s; }
  void on_body(uint64_t, std::span<const uint8_t> bytes) override {
    if (!matches_synthetic(received, bytes)) mismatch = true;
    received += bytes.size();
  }
  void on_complete(uint64_t, H3Outcome o) override { outcome = o; }
  int status = 0;
  uint64_t received = 0;
  bool mismatch = false;
  std::optional<H3Outcome> outcome;
};

TEST(ShardAllocationTest, H3DownloadAllocatesNothingPerPacket) {
  Rig rig("h3");
  H3Server server_app(rig.server->endpoint(), H3ServerConfig{});
  H3Client client_app(rig.client->endpoint());
  rig.server->set_application(&server_app);
  rig.client->set_application(&client_app);
  ConnectionsReset reset{rig};
  H3Completion completion;
  H3Request request;
  request.authority = "localhost";
  request.path = "/" + std::to_string(kDownloadBytes);
  ASSERT_NE(client_app.request(rig.connect(), request, &completion), 0u);
  auto received = [&] { return completion.outcome ? kDownloadBytes : completion.received; };
  const std::optional<size_t> allocations = allocations_in_window(rig, received);
  ASSERT_TRUE(allocations.has_value());
  ASSERT_TRUE(completion.outcome.has_value());
  EXPECT_EQ(completion.outcome->result, H3Result::kOk);
  EXPECT_EQ(completion.status, 200);
  EXPECT_EQ(completion.received, kDownloadBytes);
  EXPECT_FALSE(completion.mismatch);
  EXPECT_EQ(*allocations, 0u);
}

}  // namespace
}  // namespace dpquic::dataplane
