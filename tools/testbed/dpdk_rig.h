#pragma once
// Our client shard and our server shards on two DPDK ports joined by rings,
// in one process (EAL must be up). Each port is an rte_eth_from_rings device
// configured through dpdk::Port: the client port has one queue, the server
// port one per server shard.
//
// Two wirings:
// - kCarried (tests): every port's TX ring is separate and move() carries
//   frames to the other side, where the test can drop them (loss injected
//   at the ring) and choose the server queue (RSS, or forced to show
//   steering). Everything runs in the caller's thread.
// - kDirect (benchmarks): the client's TX ring is server queue 0's RX ring
//   and back, so shards on different lcores exchange frames with no mover.

#include <rte_ring.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/dpdk/dpdk_shard.h"
#include "dataplane/dpdk/port.h"

namespace dpquic::dataplane::dpdk {

struct DpdkRigOptions {
  enum class Wiring : uint8_t { kCarried, kDirect };
  Wiring wiring = Wiring::kCarried;
  uint16_t server_shards = 1;
  // The shards' datagram ceiling (PMTU discovery climbs to it from 1452):
  // the ring link carries any size the mbufs hold.
  uint32_t max_udp_payload = 1452;
  unsigned ring_size = 4096;
  double loss = 0.0;  // per frame, each way (kCarried)
  uint64_t seed = 1;
  bool verify_udp_checksum = false;
  // The server shards' IPv4 gateway and neighbour cache size.
  std::optional<conn::SocketAddress> server_gateway4;
  size_t neighbour_capacity = 256;
};

class DpdkRig {
 public:
  static constexpr uint16_t kServerPort = 4433;
  static constexpr uint16_t kClientPort = 50000;

  explicit DpdkRig(const DpdkRigOptions& options);
  ~DpdkRig();

  conn::SocketAddress server_address() const;
  conn::SocketAddress client_address() const;
  // A perf connection from the client shard to the server.
  std::optional<endpoint::ConnectionHandle> connect(Instant now);

  // kCarried: carries every frame waiting in a TX ring to the other port
  // (minus losses); returns how many were carried.
  size_t carry();
  // Server queue for client frames: nullopt hashes the UDP 4-tuple (as RSS
  // would), a value forces every frame onto that queue.
  void force_server_queue(std::optional<uint16_t> queue) { forced_queue_ = queue; }
  // One iteration of everything (kCarried): client, carry, servers, carry.
  bool poll_all(Instant now);

  // kCarried, for frames built by hand: puts a copy of `frame` on server
  // queue `queue`'s receive ring, as the wire would; throws when the pool or
  // the ring is exhausted.
  void send_to_server(std::span<const uint8_t> frame, uint16_t queue = 0);
  // kCarried: takes every frame the server shards sent and carry() has not
  // moved, oldest first (queue 0's, then queue 1's, ...).
  std::vector<std::vector<uint8_t>> take_server_frames();
  MacAddress server_mac() const;

  DpdkShard& client() { return *client_; }
  DpdkShard& server(size_t i) { return *servers_[i]; }
  PerfClient& perf_client() { return *perf_client_; }
  PerfServer& perf_server(size_t i) { return *perf_servers_[i]; }
  size_t server_count() const { return servers_.size(); }
  uint64_t frames_lost() const { return frames_lost_; }
  const Port& server_port() const { return *server_port_; }

 private:
  // The constructor's steps, in order.
  void make_rings(bool direct);
  void open_ports(uint16_t server_port_id, uint16_t client_port_id);
  void start_servers(uint16_t port_id);
  void start_client(uint16_t port_id);
  rte_ring* make_ring(const char* role, size_t index);
  uint16_t server_queue_for(rte_mbuf* frame) const;

  DpdkRigOptions options_;
  std::vector<rte_ring*> rings_;  // all, for freeing
  std::vector<rte_ring*> server_rx_, server_tx_;
  rte_ring* client_rx_ = nullptr;
  rte_ring* client_tx_ = nullptr;
  std::unique_ptr<Port> server_port_, client_port_;
  crypto::CertificateChain certificate_;
  std::vector<std::unique_ptr<crypto::TlsContext>> server_tls_;
  std::unique_ptr<crypto::TlsContext> client_tls_;
  std::vector<std::unique_ptr<DpdkShard>> servers_;
  std::vector<std::unique_ptr<PerfServer>> perf_servers_;
  std::unique_ptr<DpdkShard> client_;
  std::unique_ptr<PerfClient> perf_client_;
  std::optional<uint16_t> forced_queue_;
  std::mt19937_64 random_;
  uint64_t frames_lost_ = 0;
  unsigned id_ = 0;
};

}  // namespace dpquic::dataplane::dpdk
