#pragma once
// One shard: a core's endpoint, its UDP sockets and its application, run by
// one thread pinned to that core. Nothing here is shared with other shards
// except the steering rings (single producer, single consumer, one per
// ordered pair of shards) and the counters, which other threads only read.
//
// A loop iteration, in the endpoint's drain order:
//   receive (recvmmsg + GRO split) and steered datagrams -> handle_datagram;
//   handle_timeout when due; events -> application; application pump;
//   poll_transmit -> sendmsg with UDP_SEGMENT (one call per burst);
//   then sleep in epoll until input or the next deadline (or spin).
// A datagram whose connection ID names another shard's core is copied into
// that shard's ring instead (SO_REUSEPORT hashes the 4-tuple, which changes
// on migration and NAT rebinding; the CID does not).

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "crypto/tls_context.h"
#include "dataplane/app/application.h"
#include "dataplane/shard/shard_core.h"
#include "dataplane/shard/shard_counters.h"
#include "dataplane/shard/spsc_ring.h"
#include "dataplane/udp/udp_socket.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

struct ShardConfig {
  endpoint::EndpointConfig endpoint;  // core_id names this shard
  size_t shard_count = 1;
  int cpu = -1;  // pin the thread to this CPU; -1: leave it
  std::vector<conn::SocketAddress> listen;
  bool reuse_port = true;
  bool gso = true;
  bool busy_poll = false;
  // Datagram buffers the shard lends the burst builder (UDP payload): the
  // largest datagram a connection may build (the GSO buffer holds
  // kMaxBurstDatagrams of them). Connections start at their
  // base_datagram_size and grow up to this through PMTU discovery when their
  // ConnectionConfig::max_datagram_size allows (the binaries set both to
  // --max-udp-payload, 16383). With discovery off a connection sends what
  // this and the peer allow: hence the safe default, today's 1452.
  size_t max_datagram_size = 1452;
  // Steering ring slots per producer.
  // 0: 512 in all per shard, split over its peers (at least 16 each), so a
  // shard's inbound rings hold at most 512 datagrams of up to 16 KiB.
  size_t steering_ring_slots = 0;
  // How long a graceful stop waits for connections to finish closing.
  // A graceful stop's bound (RunPhase::kDrain).
  Duration drain_timeout = 30 * kSecond;
};

// A datagram handed from the shard that received it to the one owning its
// connection.
struct SteeredDatagram {
  // The largest datagram any path may carry (the PMTU search ceiling):
  // a client that rebinds keeps its large datagrams.
  static constexpr size_t kMaxBytes = 16384;
  conn::PathAddresses path;
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  uint16_t length = 0;
  uint8_t bytes[kMaxBytes];
};

class Shard final : private ShardIo {
 public:
  // Opens the sockets (throws std::runtime_error naming the address on
  // failure) and creates the endpoint. `tls` must outlive the shard.
  Shard(const ShardConfig& config, crypto::TlsContext& tls);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Steering peers, indexed by core id (this shard included); set before
  // run() by whoever created them all.
  void set_peers(std::vector<Shard*> peers) { peers_ = std::move(peers); }
  void set_application(Application* application) { core_.set_application(application); }

  // Serves until the phase moves on, then drains (at most drain_timeout)
  // or stops (run_phase.h). Pins the calling thread to config.cpu.
  void run(const std::atomic<RunPhase>& phase);

  // One iteration without sleeping; true when it did any work. For drivers
  // that interleave their own logic (clients, tests).
  bool poll_once(Instant now) { return core_.poll_once(*this, now); }
  // Sleeps until input arrives, the endpoint's next deadline, or `limit`.
  void wait(Instant limit);
  // Wakes the shard from wait() (any thread).
  void wake();
  // Opens one more socket (a client's new local address for migration, or
  // a source port of its own for each connection; UdpSocketOptions::
  // receive_batch); throws std::runtime_error like the constructor.
  const UdpSocket& add_socket(const conn::SocketAddress& address,
                              size_t receive_batch = UdpSocket::kReceiveBatch);
  // Closes the socket bound to `local` (the last one takes its place in
  // sockets()); false when there is none.
  bool remove_socket(const conn::SocketAddress& local);
  // Closes every connection of the endpoint with NO_ERROR.
  void close_all(Instant now);

  endpoint::Endpoint& endpoint() { return core_.endpoint(); }
  ShardCore& core() { return core_; }
  const ShardCounters& counters() const { return counters_; }
  const std::vector<std::unique_ptr<UdpSocket>>& sockets() const { return sockets_; }
  uint8_t core_id() const { return config_.endpoint.core_id; }

 private:
  SpscRing<SteeredDatagram>& inbound_from(uint8_t producer) { return *inbound_[producer]; }
  bool receive_socket(Instant now, UdpSocket& socket);
  // With more than kScannedSockets sockets (a client's, one per
  // connection), receive() reads those epoll reports readable, and those a
  // GRO batch left datagrams in (`carried_`), instead of trying them all.
  static constexpr size_t kScannedSockets = 8;
  bool receive_ready(Instant now);
  void clear_wake();
  // One receive batch: steered or handed to the endpoint (reordered in place).
  void deliver(Instant now, std::span<ReceivedDatagram> batch);
  bool steer(uint8_t owner, const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
             std::span<const uint8_t> bytes);
  bool drain_steered(Instant now);
  UdpSocket* socket_for(const conn::SocketAddress& local);

  // ShardIo: sockets (recvmmsg with GRO, sendmsg with GSO) and epoll.
  Instant now() override { return monotonic_now(); }
  bool receive(Instant now) override;
  bool transmit(Instant now) override;
  void publish_counters() override;
  void idle(Instant deadline) override { wait(deadline); }

  ShardConfig config_;
  ShardCore core_;
  std::vector<std::unique_ptr<UdpSocket>> sockets_;
  struct AddressHash {
    size_t operator()(const conn::SocketAddress& a) const { return a.hash(); }
  };
  // Bound address -> index in sockets_.
  std::unordered_map<conn::SocketAddress, size_t, AddressHash> socket_index_;
  std::vector<UdpSocket*> carried_;
  UdpSocketStats removed_;  // of sockets closed by remove_socket
  std::vector<std::unique_ptr<SpscRing<SteeredDatagram>>> inbound_;  // by producer core
  std::vector<Shard*> peers_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> sleeping_{false};
  std::vector<ReceivedDatagram> received_;
  std::vector<uint8_t> transmit_buffer_;
  std::vector<uint8_t*> transmit_slices_;
  // Where the datagrams of the last burst are: a train at its segment size.
  std::vector<uint8_t*> sent_slices_;
  ShardCounters counters_;
  uint64_t steered_out_ = 0, steered_in_ = 0, steering_drops_ = 0, send_drops_ = 0;
};

}  // namespace dpquic::dataplane
