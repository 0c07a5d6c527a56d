#pragma once
// A poll-mode shard on DPDK: one worker lcore owning one RX and one TX queue
// of a port, its endpoint and application (ShardCore, as on kernel UDP), a
// neighbour cache and the inbound steering rings. A loop iteration:
//
//   rte_eth_rx_burst (32) -> parse Ethernet/IP/UDP (frame.h):
//     UDP to one of our ports -> DCID names another core? hand the mbuf to
//       that shard's rte_ring (zero copy) : held for the endpoint, which
//       takes the burst's datagrams in one handle_datagrams call;
//     ARP/ND -> within the shard's ARP/ND rate, taught to the neighbour
//       cache (learn_from_frame), requests answered in place, answers and
//       announcements shared with the other shards (the same mbuf, one
//       reference each, over the steering rings: RSS sends non-IP frames to
//       one queue, yet every shard resolves its own next hops);
//     ICMP echo -> answered in place in the same mbuf;
//     anything else -> dropped and counted by reason;
//   steered mbufs from the other shards' rings -> endpoint;
//   timers, events, application pump (ShardCore::service);
//   poll_transmit into mbuf data areas (headroom kept for the headers; the
//     AEAD seals straight into the mbuf) -> headers -> rte_eth_tx_burst.
//
// TX goes through an rte_eth_dev_tx_buffer that sends when 64 packets are
// staged and is drained once an iteration's transmit rounds are done (the
// point after which the endpoint has nothing more to send until new input
// or a timer);
// mbufs the queue does not take are freed and counted, never retried.
//
// Nothing allocates from the heap in the loop: mbufs come from the port's
// pool (per-lcore cache), everything else is sized in the constructor.

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "crypto/tls_context.h"
#include "dataplane/app/application.h"
#include "dataplane/dpdk/frame.h"
#include "dataplane/dpdk/neighbour_cache.h"
#include "dataplane/shard/shard_core.h"
#include "dataplane/shard/shard_counters.h"
#include "quic/conn/inbound_datagram.h"
#include "quic/endpoint/endpoint.h"
#include "quic/endpoint/rate_limiter.h"
#include "quic/transmit/burst.h"

namespace dpquic::dataplane::dpdk {

struct DpdkShardConfig {
  endpoint::EndpointConfig endpoint;  // core_id names this shard
  size_t shard_count = 1;
  uint16_t port_id = 0;
  uint16_t queue_id = 0;
  rte_mempool* pool = nullptr;  // the port's mbuf pool
  InterfaceAddresses interface;
  // UDP ports we terminate (servers: the listen ports; clients: the ports
  // they connect from). Datagrams to others are dropped and counted.
  std::vector<uint16_t> udp_ports;
  // The largest UDP payload a burst datagram may have (the PMTU search
  // ceiling), at most what the port's MTU and mbufs allow.
  size_t max_datagram_size = 1452;
  bool tx_ip_checksum_offload = false;
  bool tx_udp_checksum_offload = false;
  bool rx_checksum_offload = false;
  // UDP checksums of received datagrams in software when the NIC does not
  // check them. Off by default: every QUIC packet is authenticated (AEAD),
  // so a corrupted datagram fails to open and is dropped anyway, and a
  // software sum over every received byte costs as much as the decryption
  // on ports without RX checksum offload. IPv4 header and ICMP checksums
  // are always checked.
  bool verify_udp_checksum = false;
  // Inbound steering ring size per producer shard (a power of two).
  unsigned steering_ring_size = 1024;
  // Neighbour cache entries (the gateways' are pinned among them).
  size_t neighbour_capacity = 256;
  // A graceful stop's bound (RunPhase::kDrain).
  Duration drain_timeout = 30 * kSecond;
};

// Per-shard figures beyond ShardCounters, read by their own thread (or
// after it stopped).
struct DpdkShardStats {
  uint64_t rx_frames = 0;
  uint64_t rx_datagrams = 0;  // UDP datagrams handed to an endpoint
  uint64_t rx_bytes = 0;      // their UDP payload bytes
  uint64_t tx_datagrams = 0;  // QUIC datagrams the TX queue took
  uint64_t tx_bytes = 0;      // their UDP payload bytes
  uint64_t tx_dropped = 0;    // mbufs the TX queue refused (freed)
  uint64_t tx_no_mbuf = 0;    // transmit rounds cut short by an empty pool
  // Datagrams dropped: next hop not resolved in time, no route, or no room
  // in the cache to resolve it.
  uint64_t neighbour_misses = 0;
  uint64_t neighbour_held = 0;        // datagrams held while resolving, sent later
  uint64_t neighbour_hold_drops = 0;  // datagrams dropped: the hold for their next
                                      // hop (kMaxHeldPerNeighbour) or shard was full
  uint64_t solicitations = 0;         // ARP requests and NS sent
  uint64_t arp_replies = 0, neighbour_adverts = 0, echo_replies = 0;
  // ARP/ND frames: dropped beyond the shard's rate (kNeighbourFramesPerSecond),
  // that created or changed a cache entry, that taught nothing (an answer
  // nobody asked for, an advertisement without Override for a resolved
  // neighbour, a probe), and answers handed to the other shards.
  uint64_t neighbour_rate_limited = 0;
  uint64_t neighbour_learnt = 0, neighbour_ignored = 0, neighbour_shared = 0;
  uint64_t unknown_port = 0;   // UDP to a port we do not serve
  uint64_t multi_segment = 0;  // chained mbufs (not supported on RX)
  // steered_in counts both steered datagrams and shared ARP/ND frames.
  uint64_t steered_out = 0, steered_in = 0, steering_drops = 0;
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> frame_drops{};
  // TSC cycles spent in transmit rounds that sent datagrams (poll_transmit,
  // sealing, headers, TX burst) and those datagrams: cycles per packet for
  // benches.
  uint64_t tx_cycles = 0;
  uint64_t build_cycles = 0;   // of which in poll_transmit (QUIC packets, sealed)
  uint64_t header_cycles = 0;  // Ethernet/IP/UDP headers and staging, as with offload
  // the UDP checksums in software (ports without offload; 0 with it)
  uint64_t checksum_cycles = 0;
  uint64_t flush_cycles = 0;  // the TX burst at the end of the round
  uint64_t tx_cycle_datagrams = 0;
  uint64_t tx_bursts = 0;  // bursts poll_transmit built (datagrams per burst: tx_datagrams / this)
  // TSC cycles of run()'s loop iterations (from one iteration's clock read
  // to the next's), all of them and those that did work: ShardCore::poll_once
  // returned true, so the loop went straight on instead of idling (a frame
  // from the RX queue or a steering ring, due timers or connection events,
  // a transmit round that built a burst). busy / poll is how loaded the
  // lcore is, which its CPU time (it never sleeps) cannot say. Counted by
  // run() only: a caller driving poll_once owns the loop.
  uint64_t poll_cycles = 0;
  uint64_t busy_cycles = 0;

  uint64_t total_frame_drops() const;
};

// CLOCK_MONOTONIC nanoseconds extrapolated from the TSC (EAL measured its
// rate): what a shard's poll loop feeds its endpoint.
class TscClock {
 public:
  TscClock();
  Instant now() const { return at(rte_rdtsc()); }
  // The time of TSC reading `tsc`.
  Instant at(uint64_t tsc) const;

 private:
  uint64_t tsc_origin_;
  Instant time_origin_;
  double nanoseconds_per_cycle_;
};

class DpdkShard final : private ShardIo {
 public:
  // ARP/ND frames one shard handles from the wire: a neighbour re-resolves
  // us about once per reachable time (Linux: 15-45 s) and we each of ours
  // once per NeighbourCache lifetime (300 s), so 100 a second serves
  // thousands of neighbours, while a flood replaces at most 100 of the
  // cache's entries a second (never a gateway's) and draws at most 100
  // answers. The burst lets 128 hosts of the segment resolve us at once
  // (after a link flap, or when we start); those beyond it retry after
  // their 1 s retransmission timer.
  static constexpr uint64_t kNeighbourFramesPerSecond = 100;
  static constexpr uint64_t kNeighbourFrameBurst = 128;
  // Datagrams held for one next hop being resolved: QUIC's largest flight
  // before it hears back (a server's first flight within 3x the client's
  // 1200-byte Initial: 3 datagrams; a client's Initial and 0-RTT), so one
  // neighbour that never answers (a spoofed on-link source) takes a
  // quarter of the shard's hold. What does not fit is dropped and counted;
  // QUIC's loss recovery resends it.
  static constexpr size_t kMaxHeldPerNeighbour = 4;
  // The shard's hold: four such flights at once. Held mbufs stay out of
  // the pool until sent or until NeighbourCache::kResolveTimeout.
  static constexpr size_t kMaxHeld = 16;
  // Creates the endpoint and this shard's inbound steering rings; throws
  // std::runtime_error on bad configuration (start-up only).
  DpdkShard(const DpdkShardConfig& config, crypto::TlsContext& tls);
  ~DpdkShard();
  DpdkShard(const DpdkShard&) = delete;
  DpdkShard& operator=(const DpdkShard&) = delete;

  // Steering peers, indexed by core id (this shard included).
  void set_peers(std::vector<DpdkShard*> peers) { peers_ = std::move(peers); }
  void set_application(Application* application) { core_.set_application(application); }

  // One iteration; true when it did any work.
  bool poll_once(Instant now) { return core_.poll_once(*this, now); }
  // Polls until the phase moves on, then drains (at most drain_timeout) or
  // stops (dataplane/shard/run_phase.h). Runs on the calling lcore, with `now` from the TSC
  // (invariant on the CPUs DPDK supports; a vDSO clock_gettime per spin
  // costs more than an idle iteration).
  void run(const std::atomic<RunPhase>& phase);
  void close_all(Instant now) { core_.close_all(now); }

  ShardCore& core() { return core_; }
  endpoint::Endpoint& endpoint() { return core_.endpoint(); }
  const ShardCounters& counters() const { return counters_; }
  const DpdkShardStats& stats() const { return stats_; }
  const NeighbourCache& neighbours() const { return neighbours_; }
  uint8_t core_id() const { return core_.core_id(); }
  // The port's queue a test may inject into to force a datagram onto this
  // shard: hands `mbuf` to the receive path as if rte_eth_rx_burst had
  // returned it (the shard frees it).
  void inject_frame(Instant now, rte_mbuf* mbuf);

 private:
  rte_ring* inbound_from(uint8_t producer) const { return inbound_[producer]; }
  // Classifies one frame and consumes the mbuf (frees, answers or steers).
  // `may_steer` is off for frames another shard handed over.
  void handle_frame(Instant now, rte_mbuf* mbuf, bool may_steer);
  // A datagram for this shard joins rx_datagrams_ (its mbuf is held).
  void handle_datagram(Instant now, rte_mbuf* mbuf, const ParsedFrame& frame, bool may_steer);
  // The held datagrams to the endpoint in one call (one AEAD burst per run
  // of a connection's packets), then their mbufs freed.
  void deliver_received(Instant now);
  // ARP/ND: rate-limited unless `from_peer` (the sharing shard spent the
  // token), taught to the cache, answered or shared.
  void handle_neighbour_frame(Instant now, rte_mbuf* mbuf, const ParsedFrame& frame,
                              bool from_peer);
  void share_with_peers(rte_mbuf* mbuf);
  // Sends the in-place answer of `length` bytes in `mbuf` (0: could not
  // answer: dropped and counted malformed).
  void send_answer(rte_mbuf* mbuf, size_t length);
  bool drain_steered(Instant now);
  bool transmit_round(Instant now);
  bool refill_lent();
  void send_control(rte_mbuf* mbuf);
  // Sends a request for `next_hop` when due; false when the cache has no
  // room to resolve it (what waits for it is dropped).
  bool solicit(const conn::SocketAddress& next_hop, Instant now);
  // Holds what fits of a burst for `hop` (being resolved); returns how
  // many datagrams (the first ones of the burst) it took.
  size_t hold(const transmit::BurstDescriptor& burst, const conn::PathAddresses& path,
              const conn::SocketAddress& hop, Instant now);
  // Writes the headers in front of the datagram in `mbuf` and stages it.
  void emit(rte_mbuf* mbuf, uint16_t length, const conn::PathAddresses& path,
            transmit::EcnCodepoint ecn, const MacAddress& destination);
  // emit() for the burst's datagrams in lent_, in three passes so that the
  // software UDP checksum is counted apart (checksum_cycles).
  void emit_burst(const transmit::BurstDescriptor& burst, const conn::PathAddresses& path,
                  const MacAddress& destination);
  // emit()'s steps: the headers as for a port with UDP checksum offload and
  // the mbuf's offload flags; the software UDP checksum when the port has
  // no offload; staging for the TX burst.
  void write_frame_headers(rte_mbuf* mbuf, uint16_t length, const conn::PathAddresses& path,
                           transmit::EcnCodepoint ecn, const MacAddress& destination);
  void complete_checksum(rte_mbuf* mbuf, conn::AddressFamily family);
  void stage(rte_mbuf* mbuf, uint16_t length);
  // Sends held datagrams whose next hop got resolved; drops expired ones.
  void flush_pending(Instant now);
  bool serves_port(uint16_t port) const;
  void release(rte_mbuf* mbuf);
  void flush_released();
  void flush_tx();

  // ShardIo: the port's RX and TX queues, the steering rings, ARP/ND.
  // now() is run()'s one TSC read per iteration: it also closes the
  // previous iteration's poll_cycles and busy_cycles.
  Instant now() override;
  bool receive(Instant now) override;
  bool transmit(Instant now) override;
  void end_transmit() override;
  void publish_counters() override;
  void idle(Instant deadline) override;

  DpdkShardConfig config_;
  ShardCore core_;
  NeighbourCache neighbours_;
  endpoint::TokenBucket neighbour_budget_{kNeighbourFramesPerSecond, kNeighbourFrameBurst};
  std::vector<rte_ring*> inbound_;  // by producer core; null for this one
  std::vector<DpdkShard*> peers_;
  rte_eth_dev_tx_buffer* tx_buffer_ = nullptr;
  uint64_t tx_refused_ = 0;  // counted by DPDK's tx buffer callback
  std::array<rte_mbuf*, 32> rx_{};
  // The UDP datagrams of the frames being handled, and their mbufs.
  std::array<conn::InboundDatagram, 32> rx_datagrams_{};
  std::array<rte_mbuf*, 32> rx_held_{};
  size_t rx_datagram_count_ = 0;
  std::array<rte_mbuf*, 64> released_{};
  size_t released_count_ = 0;
  // mbufs lent to the burst builder: allocated in bulk, kept across rounds.
  std::array<rte_mbuf*, transmit::kMaxBurstDatagrams> lent_{};
  std::array<uint8_t*, transmit::kMaxBurstDatagrams> lent_data_{};
  size_t lent_count_ = 0;
  size_t lend_capacity_ = 0;
  uint16_t ipv4_id_ = 0;
  // Send-path cycles of this iteration's transmit rounds, counted in
  // DpdkShardStats only when the rounds sent something; tx_datagrams before
  // the first.
  uint64_t round_cycles_ = 0;
  uint64_t datagrams_before_rounds_ = 0;
  bool rounds_started_ = false;
  TscClock clock_;
  // run()'s loop: the TSC at this iteration's start (0: none yet), and
  // whether it idled (did no work).
  uint64_t iteration_tsc_ = 0;
  bool iteration_idled_ = false;
  // Datagrams waiting for their next hop's MAC (a client's first flight, a
  // peer reached through a gateway not yet resolved), sent when ARP/ND
  // answers, dropped after NeighbourCache::kResolveTimeout.
  struct PendingDatagram {
    rte_mbuf* mbuf = nullptr;
    uint16_t length = 0;
    conn::PathAddresses path;
    conn::SocketAddress next_hop;
    transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
    Instant held_at = 0;
  };
  std::array<PendingDatagram, kMaxHeld> pending_{};
  size_t pending_count_ = 0;
  ShardCounters counters_;
  DpdkShardStats stats_;
};

}  // namespace dpquic::dataplane::dpdk
