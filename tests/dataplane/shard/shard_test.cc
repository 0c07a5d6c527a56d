// Two server shards on one SO_REUSEPORT port and a client shard, over real
// loopback sockets: perf downloads are byte-exact, and after clients move
// to new ports (so the kernel hashes their flows anew) datagrams that reach
// the wrong shard are steered to the owner through its ring.
#include "dataplane/shard/shard.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"

namespace dpquic::dataplane {
namespace {

constexpr size_t kConnections = 16;
constexpr uint64_t kResponseBytes = 400 * 1000;
constexpr uint64_t kMigrateAfter = 60 * 1000;

uint16_t free_port() {
  UdpSocketOptions options;
  options.bind = conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
  options.reuse_port = false;
  return UdpSocket(options).local().port;
}

class Results final : public PerfResponseHandler {
 public:
  void on_complete(uint64_t, const PerfOutcome& outcome) override {
    ++completed;
    if (outcome.result == PerfResult::kOk && outcome.bytes_received == kResponseBytes) ++ok;
  }
  size_t completed = 0, ok = 0;
};

TEST(ShardTest, SteersDatagramsOfMigratedClientsToTheOwningShard) {
  const crypto::CertificateChain certificate = crypto::CertificateChain::generate_self_signed();
  crypto::TlsServerConfig server_tls;
  server_tls.certificate = &certificate;
  server_tls.alpn_protocols = {"perf"};
  server_tls.ticket_keys = {crypto::random_ticket_key()};
  const uint16_t port = free_port();

  std::vector<std::unique_ptr<crypto::TlsContext>> tls;
  std::vector<std::unique_ptr<Shard>> servers;
  std::vector<std::unique_ptr<PerfServer>> apps;
  for (uint8_t core = 0; core < 2; ++core) {
    tls.push_back(crypto::TlsContext::create_server(server_tls));
    ShardConfig config;
    config.endpoint.core_id = core;
    config.endpoint.max_connections = 64;
    config.endpoint.stateless_reset_key.assign(32, 7);
    config.endpoint.address_token_key.assign(16, 9);
    config.endpoint.retry.mode = endpoint::RetryMode::kNever;
    config.shard_count = 2;
    config.listen = {conn::SocketAddress::ipv4(127, 0, 0, 1, port)};
    servers.push_back(std::make_unique<Shard>(config, *tls.back()));
    apps.push_back(std::make_unique<PerfServer>(servers.back()->endpoint()));
    servers.back()->set_application(apps.back().get());
  }
  const std::vector<Shard*> peers{servers[0].get(), servers[1].get()};
  for (auto& server : servers) server->set_peers(peers);
  std::atomic<RunPhase> phase{RunPhase::kServe};
  std::vector<std::thread> threads;
  for (auto& server : servers) threads.emplace_back([&phase, s = server.get()] { s->run(phase); });

  crypto::TlsClientConfig client_tls;
  client_tls.alpn_protocols = {"perf"};
  client_tls.verification = crypto::PeerVerification::kInsecureNoVerify;
  auto client_context = crypto::TlsContext::create_client(client_tls);
  ShardConfig client_config;
  client_config.endpoint.role = wire::Role::kClient;
  client_config.endpoint.max_connections = 64;
  client_config.listen = {conn::SocketAddress::ipv4(127, 0, 0, 1, 0)};
  client_config.reuse_port = false;
  Shard client(client_config, *client_context);
  PerfClient perf(client.endpoint());
  client.set_application(&perf);
  Results results;

  const conn::SocketAddress server_address = conn::SocketAddress::ipv4(127, 0, 0, 1, port);
  std::vector<endpoint::ConnectionHandle> handles;
  std::vector<uint64_t> requests;
  Instant now = monotonic_now();
  for (size_t i = 0; i < kConnections; ++i) {
    // A socket per connection, so the kernel hashes each flow on its own.
    const UdpSocket& socket = client.add_socket(conn::SocketAddress::ipv4(127, 0, 0, 1, 0));
    const auto handle =
        client.endpoint().connect(now, {socket.local(), server_address}, "localhost");
    ASSERT_TRUE(handle.has_value());
    handles.push_back(*handle);
    requests.push_back(perf.request(*handle, kResponseBytes, 0, &results));
  }
  std::vector<bool> migrated(kConnections, false);
  size_t migrations = 0;
  const Instant deadline = now + 20 * kSecond;
  while (results.completed < kConnections && now < deadline) {
    for (size_t i = 0; i < kConnections; ++i) {
      const auto progress = perf.progress(requests[i]);
      conn::Connection* c = client.endpoint().connection(handles[i]);
      if (migrated[i] || !progress || progress->bytes_received < kMigrateAfter || c == nullptr ||
          !c->handshake_confirmed()) {
        continue;
      }
      const UdpSocket& socket = client.add_socket(conn::SocketAddress::ipv4(127, 0, 0, 1, 0));
      migrated[i] = c->migrate(now, socket.local());
      client.endpoint().wake(handles[i]);
      migrations += migrated[i] ? 1 : 0;
    }
    if (!client.poll_once(now)) client.wait(now + 5 * kMillisecond);
    now = monotonic_now();
  }
  client.endpoint().reset_connections();
  phase = RunPhase::kStop;
  for (auto& server : servers) server->wake();
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(results.completed, kConnections);
  EXPECT_EQ(results.ok, kConnections);
  EXPECT_EQ(migrations, kConnections);
  const uint64_t steered = servers[0]->counters().steered + servers[1]->counters().steered;
  // Each migrated flow lands on either socket with even odds: all 16 staying
  // on their owner has probability 2^-16.
  EXPECT_GT(steered, 0u);
  EXPECT_EQ(servers[0]->counters().drops + servers[1]->counters().drops, 0u);
  // Both shards served connections (accepted where the Initial landed; all
  // 16 flows hashing to one socket has probability 2^-15).
  EXPECT_GT(servers[0]->counters().handshakes, 0u);
  EXPECT_GT(servers[1]->counters().handshakes, 0u);
}

}  // namespace
}  // namespace dpquic::dataplane
