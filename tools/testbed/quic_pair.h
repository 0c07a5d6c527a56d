#pragma once
// A client endpoint and a server endpoint joined by the in-memory network,
// with real TLS (a self-signed ECDSA certificate) and real packet
// protection: the fixture of the scenario tests.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "crypto/certificates.h"
#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "quic/endpoint/endpoint.h"
#include "tools/testbed/dumbbell.h"
#include "tools/testbed/endpoint_node.h"
#include "tools/testbed/simulator.h"

namespace dpquic::harness {

struct PairOptions {
  LinkConfig client_to_server;
  LinkConfig server_to_client;
  endpoint::EndpointConfig server;
  endpoint::EndpointConfig client;
  crypto::TlsServerConfig server_tls;  // certificate filled in by the pair
  crypto::TlsClientConfig client_tls;
  // A chain of this many certificates (leaf first) instead of one.
  size_t certificate_chain_length = 1;
  SocketAddress client_address = SocketAddress::ipv4(10, 0, 0, 1, 50000);
  SocketAddress server_address = SocketAddress::ipv4(10, 0, 0, 2, 443);
  // The datagram buffers each endpoint node lends per burst (see
  // EndpointNode): the largest datagram, and how the buffers are laid out.
  size_t datagram_capacity = 1472;
  transmit::BurstMode burst_mode = transmit::BurstMode::kIndependent;

  PairOptions();
};

class QuicPair {
 public:
  // The pair on a network of its own, `simulator`, with the options' links.
  explicit QuicPair(PairOptions options = PairOptions());
  // The pair attached to a shared `network` at the options' addresses (the
  // options' links are unused; `simulator` stays null). The network must
  // outlive the pair's use of it, and each pair on it needs addresses of
  // its own.
  QuicPair(PairOptions options, Dumbbell& network);
  ~QuicPair();

  // Starts a client connection to the server.
  endpoint::ConnectionHandle connect(uint32_t version = 0x00000001);
  // Runs the network until `done` or `limit` of virtual time passes.
  bool run_until(const std::function<bool()>& done, Duration limit = 60 * kSecond);
  // The network's virtual time.
  Instant now() const { return loop_->now(); }

  conn::Connection* client_connection(endpoint::ConnectionHandle handle) {
    return client->connection(handle);
  }
  // The first live server connection, or null.
  conn::Connection* server_connection();

  // A new server endpoint with the same keys and TLS (a "restarted" server
  // that lost its connections), replacing the current one in the network.
  void restart_server();
  // The same for the client endpoint.
  void restart_client();

  PairOptions options;
  crypto::MbManager mb;
  crypto::CertificateChain certificate;
  std::unique_ptr<crypto::TlsContext> server_tls;
  std::unique_ptr<crypto::TlsContext> client_tls;
  std::unique_ptr<endpoint::Endpoint> server;
  std::unique_ptr<endpoint::Endpoint> client;
  std::unique_ptr<EndpointNode> server_node;
  std::unique_ptr<EndpointNode> client_node;
  std::unique_ptr<Simulator> simulator;

 private:
  // Forward to whichever node is current (restart_* swaps them).
  class NodeProxy;
  // The endpoints and their nodes, not yet on a network.
  struct Unattached {};
  QuicPair(PairOptions options, Unattached);
  EventLoop* loop_ = nullptr;
  std::unique_ptr<NodeProxy> server_proxy_;
  std::unique_ptr<NodeProxy> client_proxy_;
};

}  // namespace dpquic::harness
