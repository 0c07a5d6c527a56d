#include "tools/testbed/quic_pair.h"

#include <openssl/bytestring.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <stdexcept>

#include "tools/testbed/test_keys.h"

namespace dpquic::harness {

class QuicPair::NodeProxy final : public Node {
 public:
  explicit NodeProxy(std::unique_ptr<EndpointNode>& node) : node_(node) {}
  void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> bytes) override {
    node_->handle_datagram(now, path, ecn, bytes);
  }
  void handle_timeout(Instant now) override { node_->handle_timeout(now); }
  Instant poll_timeout() override { return node_->poll_timeout(); }
  void poll_transmit(Instant now, Sink& sink) override { node_->poll_transmit(now, sink); }

 private:
  std::unique_ptr<EndpointNode>& node_;
};

PairOptions::PairOptions() {
  server.role = wire::Role::kServer;
  client.role = wire::Role::kClient;
  server.retry.mode = endpoint::RetryMode::kNever;
  server.max_connections = 64;
  server.max_half_open_per_prefix = 0;  // every client of the pair has one address
  client.max_connections = 64;
  server.cid_layout.server_id = {0x5e};
  client.cid_layout.server_id = {0xc1};
  // Shared keys so a restarted server recognises its tokens and resets.
  server.stateless_reset_key.assign(32, 0x42);
  client.stateless_reset_key.assign(32, 0x43);
  server.address_token_key.assign(16, 0x24);
  client_tls.verification = crypto::PeerVerification::kInsecureNoVerify;
  client_tls.alpn_protocols = {"perf"};
  server_tls.alpn_protocols = {"h3", "perf"};
  crypto::TicketKey ticket_key;
  ticket_key.name.fill(0x17);
  ticket_key.hmac_key.assign(16, 0x17);
  ticket_key.aes_key.assign(16, 0x17);
  server_tls.ticket_keys = {ticket_key};
}

namespace {

crypto::CertificateChain make_chain(size_t length) {
  if (length <= 1) return crypto::CertificateChain::generate_self_signed("localhost");
  // leaf <- intermediate ... <- root, each a fresh P-256 key.
  std::vector<bssl::UniquePtr<EVP_PKEY>> keys;
  std::vector<bssl::UniquePtr<X509>> certificates(length);
  for (size_t i = 0; i < length; ++i)
    keys.push_back(crypto::testing::generate_key(crypto::KeyType::kEcdsaP256));
  for (size_t i = length; i-- > 0;) {
    EVP_PKEY* signer = i + 1 < length ? keys[i + 1].get() : keys[i].get();
    X509* issuer = i + 1 < length ? certificates[i + 1].get() : nullptr;
    certificates[i] = crypto::testing::make_certificate(
        keys[i].get(), i == 0 ? "localhost" : "dpquic test CA " + std::to_string(i), signer,
        issuer);
  }
  std::string chain_pem;
  for (auto& certificate : certificates)
    chain_pem += crypto::testing::certificate_pem(certificate.get());
  return crypto::CertificateChain::from_pem(
      chain_pem, "test chain", crypto::testing::private_key_pem(keys[0].get()), "test key");
}

}  // namespace

QuicPair::QuicPair(PairOptions pair_options, Unattached)
    : options(std::move(pair_options)), certificate(make_chain(options.certificate_chain_length)) {
  options.server_tls.certificate = &certificate;
  server_tls = crypto::TlsContext::create_server(options.server_tls);
  client_tls = crypto::TlsContext::create_client(options.client_tls);
  server = std::make_unique<endpoint::Endpoint>(options.server, mb, *server_tls);
  client = std::make_unique<endpoint::Endpoint>(options.client, mb, *client_tls);
  server_node =
      std::make_unique<EndpointNode>(*server, options.datagram_capacity, 16, options.burst_mode);
  client_node =
      std::make_unique<EndpointNode>(*client, options.datagram_capacity, 16, options.burst_mode);
  server_proxy_ = std::make_unique<NodeProxy>(server_node);
  client_proxy_ = std::make_unique<NodeProxy>(client_node);
}

QuicPair::QuicPair(PairOptions pair_options) : QuicPair(std::move(pair_options), Unattached{}) {
  simulator = std::make_unique<Simulator>(*client_proxy_, options.client_address, *server_proxy_,
                                          options.server_address, options.client_to_server,
                                          options.server_to_client);
  loop_ = simulator.get();
}

QuicPair::QuicPair(PairOptions pair_options, Dumbbell& network)
    : QuicPair(std::move(pair_options), Unattached{}) {
  network.attach(*client_proxy_, options.client_address, true);
  network.attach(*server_proxy_, options.server_address, false);
  loop_ = &network;
}

QuicPair::~QuicPair() = default;

endpoint::ConnectionHandle QuicPair::connect(uint32_t version) {
  PathAddresses path{options.client_address, options.server_address};
  const auto handle = client->connect(loop_->now(), path, "localhost", version);
  if (!handle) throw std::runtime_error("client connection pool full");
  return *handle;
}

bool QuicPair::run_until(const std::function<bool()>& done, Duration limit) {
  return loop_->run_until(done, loop_->now() + limit);
}

conn::Connection* QuicPair::server_connection() {
  for (endpoint::ConnectionHandle h = 0; h < options.server.max_connections; ++h) {
    if (conn::Connection* c = server->connection(h)) return c;
  }
  return nullptr;
}

void QuicPair::restart_server() {
  server = std::make_unique<endpoint::Endpoint>(options.server, mb, *server_tls);
  server_node =
      std::make_unique<EndpointNode>(*server, options.datagram_capacity, 16, options.burst_mode);
}

void QuicPair::restart_client() {
  client = std::make_unique<endpoint::Endpoint>(options.client, mb, *client_tls);
  client_node =
      std::make_unique<EndpointNode>(*client, options.datagram_capacity, 16, options.burst_mode);
}

}  // namespace dpquic::harness
