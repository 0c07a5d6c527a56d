#include "tests/fuzz/fuzz_pair.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "crypto/certificates.h"
#include "tests/fuzz/null_packet_protection.h"
#include "tools/testbed/lent_buffers.h"

namespace dpquic::fuzz {

namespace {

constexpr uint64_t kServerSeed = 0x5e5e5e5e;
constexpr uint64_t kClientSeed = 0xc1c1c1c1;
constexpr size_t kSegment = 1472;
constexpr size_t kBurst = 16;

struct Shared {
  crypto::MbManager mb;
  crypto::CertificateChain certificate =
      crypto::CertificateChain::generate_self_signed("localhost");
  std::unique_ptr<crypto::TlsContext> server_tls;
  std::unique_ptr<crypto::TlsContext> perf_client_tls;
  std::unique_ptr<crypto::TlsContext> h3_client_tls;

  Shared() {
    mb.set_protection_override(&null_packet_protection());
    crypto::TlsServerConfig server;
    server.certificate = &certificate;
    server.alpn_protocols = {"h3", "perf"};
    crypto::TicketKey ticket_key;
    ticket_key.name.fill(0x17);
    ticket_key.hmac_key.assign(16, 0x17);
    ticket_key.aes_key.assign(16, 0x17);
    server.ticket_keys = {ticket_key};
    server_tls = crypto::TlsContext::create_server(server);
    crypto::TlsClientConfig client;
    client.verification = crypto::PeerVerification::kInsecureNoVerify;
    client.session_cache_capacity = 0;  // no resumption across inputs
    client.alpn_protocols = {"perf"};
    perf_client_tls = crypto::TlsContext::create_client(client);
    client.alpn_protocols = {"h3"};
    h3_client_tls = crypto::TlsContext::create_client(client);
  }
};

Shared& shared() {
  static Shared* instance = new Shared();  // lives until exit, like the fuzzer
  return *instance;
}

// The addresses of a datagram arriving at the server (`to_server`) or the
// client: local = the receiver, remote = the sender (`alt`: its other one).
conn::PathAddresses arrival_path(bool to_server, bool alt) {
  return to_server ? conn::PathAddresses{kServerAddress, alt ? kClientAltAddress : kClientAddress}
                   : conn::PathAddresses{kClientAddress, alt ? kServerAltAddress : kServerAddress};
}

}  // namespace

std::vector<std::span<const uint8_t>> split_datagrams(std::span<const uint8_t> input) {
  std::vector<std::span<const uint8_t>> pieces;
  const uint8_t* begin = input.data();
  const uint8_t* const end = input.data() + input.size();
  while (begin < end) {
    const uint8_t* marker =
        std::search(begin, end, std::begin(kDatagramMarker), std::end(kDatagramMarker));
    if (marker != begin) pieces.emplace_back(begin, static_cast<size_t>(marker - begin));
    begin = marker == end ? end : marker + sizeof(kDatagramMarker);
  }
  return pieces;
}

bool take_alt_path_prefix(std::span<const uint8_t>& datagram) {
  if (datagram.size() < sizeof(kAltPathPrefix) ||
      std::memcmp(datagram.data(), kAltPathPrefix, sizeof(kAltPathPrefix)) != 0) {
    return false;
  }
  datagram = datagram.subspan(sizeof(kAltPathPrefix));
  return true;
}

crypto::MbManager& null_protection_manager() { return shared().mb; }

endpoint::EndpointConfig server_config() {
  endpoint::EndpointConfig config;
  config.role = wire::Role::kServer;
  config.retry.mode = endpoint::RetryMode::kNever;
  config.max_connections = 4;
  config.cid_layout.server_id = {0x5e};
  config.stateless_reset_key.assign(32, 0x42);
  config.address_token_key.assign(16, 0x24);
  config.receive_blocks_initial = 16;
  config.receive_blocks_max = 1024;
  return config;
}

endpoint::EndpointConfig client_config() {
  endpoint::EndpointConfig config;
  config.role = wire::Role::kClient;
  config.max_connections = 2;
  config.cid_layout.server_id = {0xc1};
  config.stateless_reset_key.assign(32, 0x43);
  config.address_token_key.assign(16, 0x34);
  config.receive_blocks_initial = 16;
  config.receive_blocks_max = 1024;
  return config;
}

std::unique_ptr<endpoint::Endpoint> make_server() {
  Shared& s = shared();
  auto server = std::make_unique<endpoint::Endpoint>(server_config(), s.mb, *s.server_tls);
  server->core().random->use_fixed_seed(kServerSeed);
  return server;
}

std::unique_ptr<endpoint::Endpoint> make_client(const std::string& alpn) {
  Shared& s = shared();
  crypto::TlsContext& tls = alpn == "h3" ? *s.h3_client_tls : *s.perf_client_tls;
  auto client = std::make_unique<endpoint::Endpoint>(client_config(), s.mb, tls);
  client->core().random->use_fixed_seed(kClientSeed);
  return client;
}

std::vector<std::vector<uint8_t>> take_transmit(endpoint::Endpoint& from, Instant now,
                                                size_t limit) {
  const harness::LentBuffers lent(kBurst, kSegment);
  const transmit::BurstBuffers buffers = lent.buffers();
  transmit::BurstDescriptor out;
  conn::PathAddresses path;
  std::vector<std::vector<uint8_t>> sent;
  while (sent.size() < limit && from.poll_transmit(now, buffers, out, path)) {
    for (size_t i = 0; i < out.datagram_count; ++i) {
      sent.emplace_back(lent.datagram(i), lent.datagram(i) + out.lengths[i]);
    }
  }
  return sent;
}

void deliver_alone(endpoint::Endpoint& endpoint, Instant now, const conn::PathAddresses& path,
                   std::span<const uint8_t> datagram) {
  if (datagram.size() > 65527) return;  // larger than any UDP payload
  std::vector<uint8_t> bytes(datagram.begin(), datagram.end());
  endpoint.handle_datagram(now, path, transmit::EcnCodepoint::kNotEct, bytes);
  for (int step = 0; step < 3; ++step) {
    take_transmit(endpoint, now);
    endpoint::EndpointEvent event;
    while (endpoint.poll_event(event)) {
    }
    const Instant next = endpoint.poll_timeout();
    if (next == kNever) break;
    now = std::max(now, next);
    endpoint.handle_timeout(now);
  }
}

void deliver_established(bool to_server, std::span<const uint8_t> input) {
  FuzzPair pair;
  if (!pair.handshake()) std::abort();  // must always work: a bug otherwise
  pair.disconnect();                    // the input alone plays the peer from here on
  size_t delivered = 0;
  for (std::span<const uint8_t> datagram : split_datagrams(input)) {
    if (datagram.size() > 65527 || ++delivered > 64) break;
    const bool alt = take_alt_path_prefix(datagram);
    pair.deliver(to_server, datagram, alt);
  }
}

FuzzPair::FuzzPair(const std::string& alpn)
    : server_(make_server()), client_(make_client(alpn)), read_buffer_(16384) {
  const std::optional<endpoint::ConnectionHandle> handle =
      client_->connect(now_, conn::PathAddresses{kClientAddress, kServerAddress}, "localhost");
  if (handle) client_handle_ = *handle;
}

conn::Connection* FuzzPair::server_connection() {
  for (endpoint::ConnectionHandle h = 0; h < server_config().max_connections; ++h) {
    if (conn::Connection* c = server_->connection(h)) return c;
  }
  return nullptr;
}

bool FuzzPair::handshake() {
  for (int i = 0; i < 64; ++i) {
    settle(8, 200 * kMillisecond, 1);
    conn::Connection* c = client_connection();
    conn::Connection* s = server_connection();
    if (c != nullptr && s != nullptr && c->handshake_confirmed() && s->handshake_confirmed()) {
      // Let the last ACKs and NEW_CONNECTION_IDs land.
      settle(8, 0, 0);
      return true;
    }
  }
  return false;
}

void FuzzPair::deliver(bool to_server, std::span<const uint8_t> datagram, bool alt) {
  scratch_.assign(datagram.begin(), datagram.end());
  if (observer) observer(to_server, scratch_);
  endpoint::Endpoint& to = to_server ? *server_ : *client_;
  to.handle_datagram(now_, arrival_path(to_server, alt), transmit::EcnCodepoint::kNotEct, scratch_);
  drain_events(to, to_server);
  settle();
}

bool FuzzPair::forward(bool to_server) {
  endpoint::Endpoint& from = to_server ? *client_ : *server_;
  endpoint::Endpoint& to = to_server ? *server_ : *client_;
  bool moved = false;
  for (auto& datagram : take_transmit(from, now_)) {
    if (observer) observer(to_server, datagram);
    moved = true;
    if (!connected_) continue;
    to.handle_datagram(now_, arrival_path(to_server, false), transmit::EcnCodepoint::kNotEct,
                       datagram);
  }
  drain_events(to, to_server);
  return moved;
}

bool FuzzPair::exchange() {
  // The server's datagrams first, then the client's (both halves always run).
  const bool to_client = forward(false);
  const bool to_server = forward(true);
  return to_client || to_server;
}

void FuzzPair::drain_events(endpoint::Endpoint& endpoint, bool is_server) {
  endpoint::EndpointEvent event;
  while (endpoint.poll_event(event)) {
    if (is_server && on_server_event) {
      on_server_event(now_, event);
      continue;
    }
    if (event.event.type != conn::ConnectionEventType::kStreamReadable) continue;
    bool fin = false;
    // Bounded: a stream never holds more than its flow-control window.
    for (int i = 0; i < 1024; ++i) {
      if (endpoint.read(event.connection, event.event.stream_id, read_buffer_, fin) == 0) break;
    }
  }
  if (is_server && after_server_input) after_server_input(now_);
}

void FuzzPair::fire_timers(Duration horizon, int steps) {
  for (int i = 0; i < steps; ++i) {
    const Instant next = std::min(server_->poll_timeout(), client_->poll_timeout());
    if (next == kNever || next > now_ + horizon) return;
    now_ = std::max(now_, next);
    server_->handle_timeout(now_);
    client_->handle_timeout(now_);
    drain_events(*server_, true);
    drain_events(*client_, false);
    for (int r = 0; r < 8 && exchange(); ++r) {
    }
  }
}

void FuzzPair::settle(int rounds, Duration timer_horizon, int timer_steps) {
  for (int r = 0; r < rounds && exchange(); ++r) {
  }
  fire_timers(timer_horizon, timer_steps);
}

}  // namespace dpquic::fuzz
