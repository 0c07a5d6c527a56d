#include "tools/testbed/dpdk_rig.h"

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dpquic::dataplane::dpdk {

namespace {

unsigned next_rig_id() {
  static unsigned counter = 0;
  return counter++;
}

endpoint::EndpointConfig base_endpoint(wire::Role role, uint32_t max_udp_payload) {
  endpoint::EndpointConfig config;
  config.role = role;
  config.max_connections = 64;
  config.stateless_reset_key.assign(32, 7);
  config.address_token_key.assign(16, 9);
  config.retry.mode = endpoint::RetryMode::kNever;
  config.connection.max_datagram_size = max_udp_payload;
  // What we accept (RFC 9000 §18.2): any datagram an mbuf holds.
  config.connection.transport.max_udp_payload_size = std::max<uint64_t>(1472, max_udp_payload);
  return config;
}

uint16_t create_ring_port(const std::string& name, const std::vector<rte_ring*>& rx,
                          const std::vector<rte_ring*>& tx) {
  const int port = rte_eth_from_rings(name.c_str(), rx.data(), static_cast<unsigned>(rx.size()),
                                      tx.data(), static_cast<unsigned>(tx.size()), rte_socket_id());
  if (port < 0) {
    throw std::runtime_error("rte_eth_from_rings " + name + ": " + rte_strerror(rte_errno));
  }
  return static_cast<uint16_t>(port);
}

// A ring port's addresses: its MAC and `ipv4` in a /24.
InterfaceAddresses ring_interface(const Port& port, const conn::SocketAddress& ipv4) {
  InterfaceAddresses interface;
  interface.mac = port.capabilities().mac;
  interface.ipv4 = ipv4;
  interface.ipv4_prefix = 24;
  return interface;
}

// What the rig's server and client shards share: a shard on `port` (whose
// id is `port_id`) terminating `udp_port`.
DpdkShardConfig shard_config(const DpdkRigOptions& options, wire::Role role, const Port& port,
                             uint16_t port_id, const InterfaceAddresses& interface,
                             uint16_t udp_port) {
  DpdkShardConfig config;
  config.endpoint = base_endpoint(role, options.max_udp_payload);
  config.port_id = port_id;
  config.pool = port.pool();
  config.interface = interface;
  config.udp_ports = {udp_port};
  // Ring ports report a 1500-byte MTU they cannot change but carry frames of
  // any size (whatever fits an mbuf, which Port sized for max_udp_payload):
  // the rig's link takes the configured size, like a jumbo-frame link would.
  config.max_datagram_size = options.max_udp_payload;
  config.tx_ip_checksum_offload = port.capabilities().tx_ipv4_checksum;
  config.tx_udp_checksum_offload = port.capabilities().tx_udp_checksum;
  config.verify_udp_checksum = options.verify_udp_checksum;
  config.neighbour_capacity = options.neighbour_capacity;
  return config;
}

}  // namespace

DpdkRig::DpdkRig(const DpdkRigOptions& options)
    : options_(options),
      certificate_(crypto::CertificateChain::generate_self_signed("localhost")),
      random_(options.seed),
      id_(next_rig_id()) {
  const bool direct = options_.wiring == DpdkRigOptions::Wiring::kDirect;
  if (direct && options_.server_shards != 1) {
    throw std::runtime_error("DpdkRig: the direct wiring has one server shard");
  }
  make_rings(direct);
  const std::string prefix = "dpq_rig" + std::to_string(id_);
  const uint16_t server_port_id = create_ring_port(prefix + "_srv", server_rx_, server_tx_);
  const uint16_t client_port_id = create_ring_port(prefix + "_cli", {client_rx_}, {client_tx_});
  open_ports(server_port_id, client_port_id);
  start_servers(server_port_id);
  start_client(client_port_id);
}

void DpdkRig::make_rings(bool direct) {
  for (uint16_t q = 0; q < options_.server_shards; ++q) {
    server_rx_.push_back(make_ring("srx", q));
    server_tx_.push_back(direct ? nullptr : make_ring("stx", q));
  }
  client_rx_ = direct ? nullptr : make_ring("crx", 0);
  client_tx_ = direct ? server_rx_[0] : make_ring("ctx", 0);
  if (direct) {
    client_rx_ = make_ring("crx", 0);
    server_tx_[0] = client_rx_;
  }
}

void DpdkRig::open_ports(uint16_t server_port_id, uint16_t client_port_id) {
  PortConfig port_config;
  port_config.port_id = server_port_id;
  port_config.queues = options_.server_shards;
  port_config.max_udp_payload = options_.max_udp_payload;
  server_port_ = std::make_unique<Port>(port_config);
  port_config.port_id = client_port_id;
  port_config.queues = 1;
  client_port_ = std::make_unique<Port>(port_config);
}

void DpdkRig::start_servers(uint16_t port_id) {
  crypto::TlsServerConfig server_tls;
  server_tls.certificate = &certificate_;
  server_tls.alpn_protocols = {"perf"};
  server_tls.ticket_keys = {crypto::random_ticket_key()};
  InterfaceAddresses interface = ring_interface(*server_port_, server_address());
  interface.gateway4 = options_.server_gateway4;
  for (uint16_t q = 0; q < options_.server_shards; ++q) {
    server_tls_.push_back(crypto::TlsContext::create_server(server_tls));
    DpdkShardConfig config =
        shard_config(options_, wire::Role::kServer, *server_port_, port_id, interface, kServerPort);
    config.endpoint.core_id = static_cast<uint8_t>(q);
    config.shard_count = options_.server_shards;
    config.queue_id = q;
    servers_.push_back(std::make_unique<DpdkShard>(config, *server_tls_.back()));
    perf_servers_.push_back(std::make_unique<PerfServer>(servers_.back()->endpoint()));
    servers_.back()->set_application(perf_servers_.back().get());
  }
  std::vector<DpdkShard*> peers;
  for (auto& server : servers_) peers.push_back(server.get());
  for (auto& server : servers_) server->set_peers(peers);
}

void DpdkRig::start_client(uint16_t port_id) {
  crypto::TlsClientConfig client_tls;
  client_tls.alpn_protocols = {"perf"};
  client_tls.verification = crypto::PeerVerification::kInsecureNoVerify;
  client_tls_ = crypto::TlsContext::create_client(client_tls);
  const DpdkShardConfig config =
      shard_config(options_, wire::Role::kClient, *client_port_, port_id,
                   ring_interface(*client_port_, client_address()), kClientPort);
  client_ = std::make_unique<DpdkShard>(config, *client_tls_);
  perf_client_ = std::make_unique<PerfClient>(client_->endpoint());
  client_->set_application(perf_client_.get());
}

DpdkRig::~DpdkRig() {
  // Connections hold the applications' chunks: drop them first.
  client_->endpoint().reset_connections();
  for (auto& server : servers_) server->endpoint().reset_connections();
  perf_client_.reset();
  client_.reset();
  perf_servers_.clear();
  servers_.clear();
  // Frames still on the links go back to their pools before the ports
  // (which own the pools) are closed.
  for (rte_ring* ring : rings_) {
    rte_mbuf* mbuf = nullptr;
    while (rte_ring_dequeue(ring, reinterpret_cast<void**>(&mbuf)) == 0) rte_pktmbuf_free(mbuf);
  }
  client_port_.reset();
  server_port_.reset();
  for (rte_ring* ring : rings_) rte_ring_free(ring);
}

rte_ring* DpdkRig::make_ring(const char* role, size_t index) {
  char name[RTE_RING_NAMESIZE];
  std::snprintf(name, sizeof(name), "dpq_rig%u_%s%zu", id_, role, index);
  rte_ring* ring =
      rte_ring_create(name, options_.ring_size, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (ring == nullptr) {
    throw std::runtime_error(std::string("rte_ring_create ") + name + ": " +
                             rte_strerror(rte_errno));
  }
  rings_.push_back(ring);
  return ring;
}

conn::SocketAddress DpdkRig::server_address() const {
  return conn::SocketAddress::ipv4(10, 77, 0, 1, kServerPort);
}

conn::SocketAddress DpdkRig::client_address() const {
  return conn::SocketAddress::ipv4(10, 77, 0, 2, kClientPort);
}

std::optional<endpoint::ConnectionHandle> DpdkRig::connect(Instant now) {
  return client_->endpoint().connect(now, {client_address(), server_address()}, "localhost");
}

uint16_t DpdkRig::server_queue_for(rte_mbuf* frame) const {
  if (forced_queue_) return *forced_queue_;
  // RSS stand-in: the IPv4 addresses and UDP ports (bytes 26..37 of an
  // untagged frame); anything shorter goes to queue 0.
  if (rte_pktmbuf_data_len(frame) < 38) return 0;
  const uint8_t* bytes = rte_pktmbuf_mtod(frame, const uint8_t*);
  uint32_t hash = 2166136261u;
  for (size_t i = 26; i < 38; ++i) hash = (hash ^ bytes[i]) * 16777619u;
  return static_cast<uint16_t>(hash % server_rx_.size());
}

size_t DpdkRig::carry() {
  std::bernoulli_distribution lose(options_.loss);
  size_t carried = 0;
  rte_mbuf* frames[64];
  auto deliver = [&](rte_mbuf* frame, rte_ring* to) {
    if (options_.loss > 0 && lose(random_)) {
      ++frames_lost_;
      rte_pktmbuf_free(frame);
    } else if (rte_ring_sp_enqueue(to, frame) != 0) {
      ++frames_lost_;  // the receiving queue is full: a real link drops too
      rte_pktmbuf_free(frame);
    } else {
      ++carried;
    }
  };
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(client_tx_, reinterpret_cast<void**>(frames), 64,
                                        nullptr)) != 0) {
    for (unsigned i = 0; i < n; ++i) deliver(frames[i], server_rx_[server_queue_for(frames[i])]);
  }
  for (rte_ring* tx : server_tx_) {
    while ((n = rte_ring_sc_dequeue_burst(tx, reinterpret_cast<void**>(frames), 64, nullptr)) !=
           0) {
      for (unsigned i = 0; i < n; ++i) deliver(frames[i], client_rx_);
    }
  }
  return carried;
}

bool DpdkRig::poll_all(Instant now) {
  bool any = client_->poll_once(now);
  any |= carry() != 0;
  for (auto& server : servers_) any |= server->poll_once(now);
  any |= carry() != 0;
  return any;
}

void DpdkRig::send_to_server(std::span<const uint8_t> frame, uint16_t queue) {
  rte_mbuf* mbuf = rte_pktmbuf_alloc(server_port_->pool());
  if (mbuf == nullptr) throw std::runtime_error("DpdkRig::send_to_server: no mbuf");
  char* data = rte_pktmbuf_append(mbuf, static_cast<uint16_t>(frame.size()));
  if (data != nullptr) std::memcpy(data, frame.data(), frame.size());
  if (data == nullptr || rte_ring_sp_enqueue(server_rx_.at(queue), mbuf) != 0) {
    rte_pktmbuf_free(mbuf);
    throw std::runtime_error("DpdkRig::send_to_server: frame too long or ring full");
  }
}

std::vector<std::vector<uint8_t>> DpdkRig::take_server_frames() {
  std::vector<std::vector<uint8_t>> frames;
  for (rte_ring* tx : server_tx_) {
    rte_mbuf* mbuf = nullptr;
    while (rte_ring_sc_dequeue(tx, reinterpret_cast<void**>(&mbuf)) == 0) {
      const auto* bytes = rte_pktmbuf_mtod(mbuf, const uint8_t*);
      frames.emplace_back(bytes, bytes + rte_pktmbuf_data_len(mbuf));
      rte_pktmbuf_free(mbuf);
    }
  }
  return frames;
}

MacAddress DpdkRig::server_mac() const { return server_port_->capabilities().mac; }

}  // namespace dpquic::dataplane::dpdk
