#pragma once
// An H3Server and two H3Clients, each client on an endpoint of its own (so
// with transport parameters of its own, e.g. a client that grants no
// flow-control credit) at an address of its own, joined to the server by
// the in-memory network: for tests of what one connection can make the
// server hold while another one is being served.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "crypto/certificates.h"
#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "dataplane/app/h3_client.h"
#include "dataplane/app/h3_server.h"
#include "tests/dataplane/app/h3_test_pair.h"
#include "tools/testbed/endpoint_node.h"
#include "tools/testbed/simulator.h"

namespace dpquic::dataplane::testing {

using conn::PathAddresses;
using conn::SocketAddress;

// The simulator's client side: two endpoint nodes, told apart by the
// address a datagram is for.
class ClientPairNode final : public harness::Node {
 public:
  ClientPairNode(harness::EndpointNode& first, SocketAddress first_address,
                 harness::EndpointNode& second)
      : first_(first), first_address_(first_address), second_(second) {}

  void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> bytes) override {
    (path.local == first_address_ ? first_ : second_).handle_datagram(now, path, ecn, bytes);
  }
  void handle_timeout(Instant now) override {
    first_.handle_timeout(now);
    second_.handle_timeout(now);
  }
  Instant poll_timeout() override {
    return std::min(first_.poll_timeout(), second_.poll_timeout());
  }
  void poll_transmit(Instant now, Sink& sink) override {
    first_.poll_transmit(now, sink);
    second_.poll_transmit(now, sink);
  }

 private:
  harness::EndpointNode& first_;
  SocketAddress first_address_;
  harness::EndpointNode& second_;
};

class H3TwoClients {
 public:
  struct Client {
    Client(const endpoint::EndpointConfig& config, const crypto::MbManager& mb,
           crypto::TlsContext& tls, SocketAddress at)
        : endpoint(config, mb, tls), h3(endpoint), node(endpoint), address(at) {
      node.set_application([this](Instant now) { run_application(endpoint, h3, now); });
    }
    endpoint::Endpoint endpoint;
    H3Client h3;
    harness::EndpointNode node;
    SocketAddress address;
    endpoint::ConnectionHandle handle = 0;
  };

  // Each client's endpoint uses the pair's client configuration with its
  // own transport settings.
  H3TwoClients(const H3ServerConfig& server_config, const conn::TransportConfig& first_transport,
               const conn::TransportConfig& second_transport)
      : options_(h3_pair_options()),
        certificate_(crypto::CertificateChain::generate_self_signed("localhost")) {
    options_.server_tls.certificate = &certificate_;
    server_tls_ = crypto::TlsContext::create_server(options_.server_tls);
    client_tls_ = crypto::TlsContext::create_client(options_.client_tls);
    server_endpoint = std::make_unique<endpoint::Endpoint>(options_.server, mb_, *server_tls_);
    server = std::make_unique<H3Server>(*server_endpoint, server_config);
    server_node_ = std::make_unique<harness::EndpointNode>(*server_endpoint);
    server_node_->set_application(
        [this](Instant now) { run_application(*server_endpoint, *server, now); });
    server_node_->set_application_deadline([this] { return server->next_deadline(); });
    first = make_client(first_transport, options_.client_address);
    second = make_client(second_transport, SocketAddress::ipv4(10, 0, 0, 3, 50000));
    clients_ = std::make_unique<ClientPairNode>(first->node, first->address, second->node);
    simulator = std::make_unique<harness::Simulator>(
        *clients_, first->address, *server_node_, options_.server_address,
        options_.client_to_server, options_.server_to_client);
  }
  ~H3TwoClients() {
    // Queued chunks refer to the applications' pools.
    server_endpoint->reset_connections();
    first->endpoint.reset_connections();
    second->endpoint.reset_connections();
  }
  H3TwoClients(const H3TwoClients&) = delete;
  H3TwoClients& operator=(const H3TwoClients&) = delete;

  // Connects both clients and runs until both handshakes are confirmed.
  void connect() {
    for (Client* client : {first.get(), second.get()}) {
      const PathAddresses path{client->address, options_.server_address};
      const auto handle = client->endpoint.connect(simulator->now(), path, "localhost");
      ASSERT_TRUE(handle);
      client->handle = *handle;
    }
    ASSERT_TRUE(run_until([&] { return confirmed(*first) && confirmed(*second); }));
  }

  uint64_t get(Client& client, const std::string& path, ResponseRecorder& recorder,
               std::vector<std::pair<std::string, std::string>> fields = {}) {
    H3Request request;
    request.authority = "localhost";
    request.path = path;
    request.fields = std::move(fields);
    const uint64_t id = client.h3.request(client.handle, request, &recorder);
    EXPECT_NE(id, 0u);
    return id;
  }

  bool run_until(const std::function<bool()>& done, Duration limit = 60 * kSecond) {
    return simulator->run_until(done, simulator->now() + limit);
  }
  // Runs `duration` of virtual time, checking `each` after every event.
  void run_for(
      Duration duration, const std::function<void()>& each = [] {}) {
    simulator->run_until(
        [&] {
          each();
          return false;
        },
        simulator->now() + duration);
  }

  // The server's handle of a client's connection.
  std::optional<endpoint::ConnectionHandle> server_handle(const Client& client) {
    for (endpoint::ConnectionHandle h = 0; h < options_.server.max_connections; ++h) {
      const conn::Connection* c = server_endpoint->connection(h);
      if (c != nullptr && c->active_path().remote == client.address) return h;
    }
    return std::nullopt;
  }

 private:
  std::unique_ptr<Client> make_client(const conn::TransportConfig& transport, SocketAddress at) {
    endpoint::EndpointConfig config = options_.client;
    config.connection.transport = transport;
    return std::make_unique<Client>(config, mb_, *client_tls_, at);
  }
  static bool confirmed(Client& client) {
    const conn::Connection* c = client.endpoint.connection(client.handle);
    return c == nullptr || c->handshake_confirmed();
  }

  // In order of construction; destroyed in reverse.
  harness::PairOptions options_;
  crypto::MbManager mb_;
  crypto::CertificateChain certificate_;
  std::unique_ptr<crypto::TlsContext> server_tls_;
  std::unique_ptr<crypto::TlsContext> client_tls_;

 public:
  std::unique_ptr<endpoint::Endpoint> server_endpoint;
  std::unique_ptr<H3Server> server;
  std::unique_ptr<Client> first;
  std::unique_ptr<Client> second;

 private:
  std::unique_ptr<harness::EndpointNode> server_node_;
  std::unique_ptr<ClientPairNode> clients_;

 public:
  std::unique_ptr<harness::Simulator> simulator;
};

}  // namespace dpquic::dataplane::testing
