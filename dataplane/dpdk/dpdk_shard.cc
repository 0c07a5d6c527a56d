#include "dataplane/dpdk/dpdk_shard.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dpquic::dataplane::dpdk {

namespace {

constexpr uint16_t kTxBufferPackets = 64;
constexpr int kMaxBurstsPerRound = 1024;  // each connection stops at its window or pacer

// `cycles` of a TSC running at `hz` in nanoseconds, in integers: exact to
// the nanosecond, and no overflow for TSC rates of 1 to 18 GHz.
uint64_t cycles_to_nanoseconds(uint64_t cycles, uint64_t hz) {
  if (hz == 0) return 0;
  return cycles / hz * kSecond + cycles % hz * kSecond / hz;
}

uint64_t ipv4_tx_flags(bool ip_offload, bool udp_offload) {
  uint64_t flags = 0;
  if (ip_offload || udp_offload) flags |= RTE_MBUF_F_TX_IPV4;
  if (ip_offload) flags |= RTE_MBUF_F_TX_IP_CKSUM;
  if (udp_offload) flags |= RTE_MBUF_F_TX_UDP_CKSUM;
  return flags;
}

}  // namespace

TscClock::TscClock()
    : tsc_origin_(rte_rdtsc()),
      time_origin_(monotonic_now()),
      nanoseconds_per_cycle_(1e9 / static_cast<double>(rte_get_tsc_hz())) {}

Instant TscClock::at(uint64_t tsc) const {
  return time_origin_ +
         static_cast<Instant>(static_cast<double>(tsc - tsc_origin_) * nanoseconds_per_cycle_);
}

uint64_t DpdkShardStats::total_frame_drops() const {
  uint64_t total = 0;
  for (uint64_t count : frame_drops) total += count;
  return total;
}

DpdkShard::DpdkShard(const DpdkShardConfig& config, crypto::TlsContext& tls)
    : config_(config),
      core_(config.endpoint, config.shard_count, tls),
      neighbours_(config.neighbour_capacity) {
  core_.set_handshake_histogram(&counters_.handshake_time);
  if (config_.pool == nullptr) throw std::runtime_error("dpdk shard: no mbuf pool");
  // A client may serve thousands (a source port per connection).
  std::sort(config_.udp_ports.begin(), config_.udp_ports.end());
  for (const auto& gateway : {config_.interface.gateway4, config_.interface.gateway6}) {
    if (gateway) neighbours_.pin(*gateway);
  }
  if (config_.max_datagram_size < 1200 || config_.max_datagram_size > transmit::kMaxSegmentSize) {
    throw std::runtime_error("dpdk shard: max_datagram_size must be 1200..16383");
  }
  const size_t room = rte_pktmbuf_data_room_size(config_.pool);
  if (room < RTE_PKTMBUF_HEADROOM + 1200) {
    throw std::runtime_error("dpdk shard: mbufs too small for a 1200-byte datagram");
  }
  // Datagrams start at the default data offset; the headers go in front.
  static_assert(RTE_PKTMBUF_HEADROOM >= kMaxUdpHeaderLength);
  lend_capacity_ = std::min(config_.max_datagram_size, room - RTE_PKTMBUF_HEADROOM);
  const int socket = rte_eth_dev_socket_id(config_.port_id);
  tx_buffer_ = static_cast<rte_eth_dev_tx_buffer*>(
      rte_zmalloc_socket("dpquic_tx_buffer", RTE_ETH_TX_BUFFER_SIZE(kTxBufferPackets), 0, socket));
  if (tx_buffer_ == nullptr) throw std::runtime_error("dpdk shard: cannot allocate a TX buffer");
  rte_eth_tx_buffer_init(tx_buffer_, kTxBufferPackets);
  rte_eth_tx_buffer_set_err_callback(tx_buffer_, rte_eth_tx_buffer_count_callback, &tx_refused_);

  const uint8_t self = core_.core_id();
  inbound_.assign(config_.shard_count, nullptr);
  for (size_t producer = 0; producer < config_.shard_count; ++producer) {
    if (producer == self) continue;
    char name[RTE_RING_NAMESIZE];
    std::snprintf(name, sizeof(name), "dpq_p%u_s%u_%u", config_.port_id, self,
                  static_cast<unsigned>(producer & 0xff));
    inbound_[producer] =
        rte_ring_create(name, config_.steering_ring_size, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (inbound_[producer] == nullptr) {
      const std::string reason = rte_strerror(rte_errno);
      for (rte_ring* ring : inbound_) rte_ring_free(ring);
      rte_free(tx_buffer_);
      throw std::runtime_error("dpdk shard: cannot create steering ring " + std::string(name) +
                               ": " + reason);
    }
  }
}

DpdkShard::~DpdkShard() {
  core_.endpoint().reset_connections();
  flush_tx();
  for (rte_ring* ring : inbound_) {
    if (ring == nullptr) continue;
    rte_mbuf* mbuf = nullptr;
    while (rte_ring_dequeue(ring, reinterpret_cast<void**>(&mbuf)) == 0) rte_pktmbuf_free(mbuf);
    rte_ring_free(ring);
  }
  for (size_t i = 0; i < lent_count_; ++i) rte_pktmbuf_free(lent_[i]);
  for (size_t i = 0; i < pending_count_; ++i) rte_pktmbuf_free(pending_[i].mbuf);
  flush_released();
  rte_free(tx_buffer_);
}

bool DpdkShard::serves_port(uint16_t port) const {
  return std::binary_search(config_.udp_ports.begin(), config_.udp_ports.end(), port);
}

void DpdkShard::release(rte_mbuf* mbuf) {
  released_[released_count_++] = mbuf;
  if (released_count_ == released_.size()) flush_released();
}

void DpdkShard::flush_released() {
  if (released_count_ == 0) return;
  rte_pktmbuf_free_bulk(released_.data(), static_cast<unsigned>(released_count_));
  released_count_ = 0;
}

void DpdkShard::send_control(rte_mbuf* mbuf) {
  rte_eth_tx_buffer(config_.port_id, config_.queue_id, tx_buffer_, mbuf);
}

void DpdkShard::flush_tx() {
  if (tx_buffer_ != nullptr) rte_eth_tx_buffer_flush(config_.port_id, config_.queue_id, tx_buffer_);
}

void DpdkShard::inject_frame(Instant now, rte_mbuf* mbuf) {
  handle_frame(now, mbuf, true);
  deliver_received(now);
  flush_released();
}

void DpdkShard::deliver_received(Instant now) {
  if (rx_datagram_count_ == 0) return;
  core_.endpoint().handle_datagrams(now, {rx_datagrams_.data(), rx_datagram_count_});
  rte_pktmbuf_free_bulk(rx_held_.data(), static_cast<unsigned>(rx_datagram_count_));
  rx_datagram_count_ = 0;
}

void DpdkShard::handle_frame(Instant now, rte_mbuf* mbuf, bool may_steer) {
  if (mbuf->nb_segs != 1) {
    ++stats_.multi_segment;
    release(mbuf);
    return;
  }
  ChecksumStatus checksums;
  if (config_.rx_checksum_offload) {
    checksums.ip_verified =
        (mbuf->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD;
    checksums.l4_verified =
        (mbuf->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
  }
  checksums.verify_udp = config_.verify_udp_checksum;
  uint8_t* data = rte_pktmbuf_mtod(mbuf, uint8_t*);
  const size_t length = rte_pktmbuf_data_len(mbuf);
  const ParsedFrame frame = parse_frame({data, length}, config_.interface, checksums);
  switch (frame.kind) {
    case FrameKind::kUdp: handle_datagram(now, mbuf, frame, may_steer); return;
    case FrameKind::kArpRequest:
    case FrameKind::kArpReply:
    case FrameKind::kArpOther:
    case FrameKind::kNeighbourSolicitation:
    case FrameKind::kNeighbourAdvertisement:
      handle_neighbour_frame(now, mbuf, frame, !may_steer);
      return;
    case FrameKind::kIcmpEchoRequest:
    case FrameKind::kIcmp6EchoRequest: {
      const size_t reply =
          write_icmp_echo_reply({data, length + rte_pktmbuf_tailroom(mbuf)}, frame);
      if (reply != 0) ++stats_.echo_replies;
      send_answer(mbuf, reply);
      return;
    }
    case FrameKind::kDrop:
      ++stats_.frame_drops[static_cast<size_t>(frame.drop)];
      release(mbuf);
      return;
  }
}

void DpdkShard::handle_datagram(Instant now, rte_mbuf* mbuf, const ParsedFrame& frame,
                                bool may_steer) {
  if (!serves_port(frame.path.local.port)) {
    ++stats_.unknown_port;
    release(mbuf);
    return;
  }
  // The source of a datagram teaches the neighbour cache nothing: anyone
  // can send one (only ARP/ND do, handle_neighbour_frame).
  std::span<uint8_t> payload(rte_pktmbuf_mtod(mbuf, uint8_t*) + frame.payload_offset,
                             frame.payload_length);
  if (may_steer) {
    if (const auto owner = core_.foreign_owner(payload)) {
      if (*owner < peers_.size() && peers_[*owner] != nullptr &&
          rte_ring_sp_enqueue(peers_[*owner]->inbound_from(core_id()), mbuf) == 0) {
        ++stats_.steered_out;
      } else {
        ++stats_.steering_drops;
        release(mbuf);
      }
      return;
    }
  }
  ++stats_.rx_datagrams;
  stats_.rx_bytes += payload.size();
  if (rx_datagram_count_ == rx_datagrams_.size()) deliver_received(now);
  rx_datagrams_[rx_datagram_count_] = {frame.path, frame.ecn, payload};
  rx_held_[rx_datagram_count_++] = mbuf;
}

void DpdkShard::handle_neighbour_frame(Instant now, rte_mbuf* mbuf, const ParsedFrame& frame,
                                       bool from_peer) {
  if (!from_peer) {
    // ARP for other addresses is the segment's chatter: unless it names a
    // neighbour we hold it costs a lookup, like any frame not for us, and
    // no token.
    if (frame.kind == FrameKind::kArpOther && !neighbours_.contains(frame.sender_ip)) {
      ++stats_.frame_drops[static_cast<size_t>(DropReason::kNotForUs)];
      release(mbuf);
      return;
    }
    if (!neighbour_budget_.allow(now)) {
      ++stats_.neighbour_rate_limited;
      release(mbuf);
      return;
    }
  }
  if (learn_from_frame(frame, neighbours_, now)) {
    ++stats_.neighbour_learnt;
  } else {
    ++stats_.neighbour_ignored;
  }
  const std::span<uint8_t> room(rte_pktmbuf_mtod(mbuf, uint8_t*),
                                rte_pktmbuf_data_len(mbuf) + rte_pktmbuf_tailroom(mbuf));
  size_t reply = 0;
  switch (frame.kind) {
    case FrameKind::kArpRequest:
      reply = write_arp_reply(room, frame, config_.interface);
      if (reply != 0) ++stats_.arp_replies;
      break;
    case FrameKind::kNeighbourSolicitation:
      reply = write_neighbour_advertisement(room, frame, config_.interface);
      if (reply != 0) ++stats_.neighbour_adverts;
      break;
    default:
      // Answers and announcements: another shard may be resolving the
      // sender (RSS sent the answer here), so each gets to see it.
      if (!from_peer) share_with_peers(mbuf);
      release(mbuf);
      return;
  }
  send_answer(mbuf, reply);
}

void DpdkShard::share_with_peers(rte_mbuf* mbuf) {
  for (DpdkShard* peer : peers_) {
    if (peer == nullptr || peer == this) continue;
    // Read-only from here on: every holder frees its own reference.
    rte_mbuf_refcnt_update(mbuf, 1);
    if (rte_ring_sp_enqueue(peer->inbound_from(core_id()), mbuf) == 0) {
      ++stats_.neighbour_shared;
    } else {
      rte_mbuf_refcnt_update(mbuf, -1);
      ++stats_.steering_drops;
    }
  }
}

void DpdkShard::send_answer(rte_mbuf* mbuf, size_t length) {
  if (length == 0) {
    ++stats_.frame_drops[static_cast<size_t>(DropReason::kMalformed)];
    release(mbuf);
    return;
  }
  // The answer reuses the request's mbuf.
  mbuf->data_len = static_cast<uint16_t>(length);
  mbuf->pkt_len = static_cast<uint32_t>(length);
  mbuf->ol_flags = 0;
  send_control(mbuf);
}

bool DpdkShard::receive(Instant now) {
  const uint16_t count =
      rte_eth_rx_burst(config_.port_id, config_.queue_id, rx_.data(), rx_.size());
  for (uint16_t i = 0; i < count; ++i) {
    rte_prefetch0(rte_pktmbuf_mtod(rx_[i], void*));
  }
  for (uint16_t i = 0; i < count; ++i) handle_frame(now, rx_[i], true);
  deliver_received(now);
  stats_.rx_frames += count;
  flush_released();
  bool any = count != 0;
  any |= drain_steered(now);
  if (pending_count_ != 0) flush_pending(now);
  // Resolve the gateway before the first datagram needs it, and again
  // once its entry is stale (still used meanwhile: it is pinned).
  for (const auto& gateway : {config_.interface.gateway4, config_.interface.gateway6}) {
    if (gateway && !neighbours_.fresh(*gateway, now)) solicit(*gateway, now);
  }
  return any;
}

bool DpdkShard::drain_steered(Instant now) {
  bool any = false;
  for (rte_ring* ring : inbound_) {
    if (ring == nullptr) continue;
    const unsigned count =
        rte_ring_sc_dequeue_burst(ring, reinterpret_cast<void**>(rx_.data()), rx_.size(), nullptr);
    for (unsigned i = 0; i < count; ++i) handle_frame(now, rx_[i], false);
    deliver_received(now);
    stats_.steered_in += count;
    any |= count != 0;
  }
  flush_released();
  return any;
}

bool DpdkShard::refill_lent() {
  const size_t missing = lent_.size() - lent_count_;
  if (missing != 0) {
    // All or nothing per call: fall back to smaller requests when the pool
    // runs low rather than failing the round.
    size_t want = missing;
    while (want != 0 && rte_pktmbuf_alloc_bulk(config_.pool, lent_.data() + lent_count_,
                                               static_cast<unsigned>(want)) != 0) {
      want /= 2;
    }
    for (size_t i = lent_count_; i < lent_count_ + want; ++i) {
      lent_data_[i] = rte_pktmbuf_mtod(lent_[i], uint8_t*);
    }
    lent_count_ += want;
  }
  return lent_count_ != 0;
}

bool DpdkShard::solicit(const conn::SocketAddress& hop, Instant now) {
  const NeighbourCache::Solicit due = neighbours_.should_solicit(hop, now);
  if (due != NeighbourCache::Solicit::kSend) return due == NeighbourCache::Solicit::kWait;
  rte_mbuf* mbuf = rte_pktmbuf_alloc(config_.pool);
  if (mbuf == nullptr) return true;  // the next try is a kSolicitInterval away
  std::span<uint8_t> out(rte_pktmbuf_mtod(mbuf, uint8_t*), rte_pktmbuf_tailroom(mbuf));
  const size_t length = hop.family == conn::AddressFamily::kIpv4
                            ? write_arp_request(out, hop, config_.interface)
                            : write_neighbour_solicitation(out, hop, config_.interface);
  if (length == 0) {
    rte_pktmbuf_free(mbuf);
    return true;
  }
  mbuf->data_len = static_cast<uint16_t>(length);
  mbuf->pkt_len = static_cast<uint32_t>(length);
  ++stats_.solicitations;
  send_control(mbuf);
  return true;
}

size_t DpdkShard::hold(const transmit::BurstDescriptor& burst, const conn::PathAddresses& path,
                       const conn::SocketAddress& hop, Instant now) {
  const size_t count = burst.datagram_count;
  if (!solicit(hop, now)) {
    stats_.neighbour_misses += count;
    return 0;
  }
  size_t held_for_hop = 0;
  for (size_t i = 0; i < pending_count_; ++i) held_for_hop += pending_[i].next_hop.same_ip(hop);
  const size_t room = std::min(kMaxHeldPerNeighbour - std::min(held_for_hop, kMaxHeldPerNeighbour),
                               kMaxHeld - pending_count_);
  const size_t used = std::min(count, room);
  for (size_t i = 0; i < used; ++i) {
    pending_[pending_count_++] = {lent_[i], burst.lengths[i], path, hop, burst.ecn, now};
  }
  stats_.neighbour_held += used;
  stats_.neighbour_hold_drops += count - used;
  return used;
}

void DpdkShard::write_frame_headers(rte_mbuf* mbuf, uint16_t length,
                                    const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                                    const MacAddress& destination) {
  UdpFrameSpec spec;
  spec.source_mac = config_.interface.mac;
  spec.destination_mac = destination;
  spec.path = path;
  spec.ecn = ecn;
  spec.ipv4_id = ipv4_id_++;
  const bool ipv4 = path.local.family == conn::AddressFamily::kIpv4;
  spec.offload_ip_checksum = ipv4 && config_.tx_ip_checksum_offload;
  spec.offload_udp_checksum = config_.tx_udp_checksum_offload;
  rte_pktmbuf_append(mbuf, length);
  auto* frame =
      reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(mbuf, udp_header_length(path.local.family)));
  write_udp_headers_for_offload(frame, length, spec);
  mbuf->l2_len = RTE_ETHER_HDR_LEN;
  mbuf->l3_len = ipv4 ? sizeof(rte_ipv4_hdr) : sizeof(rte_ipv6_hdr);
  mbuf->ol_flags =
      ipv4 ? ipv4_tx_flags(spec.offload_ip_checksum, spec.offload_udp_checksum)
           : (spec.offload_udp_checksum ? RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM : 0);
}

void DpdkShard::complete_checksum(rte_mbuf* mbuf, conn::AddressFamily family) {
  if (!config_.tx_udp_checksum_offload) {
    complete_udp_checksum(rte_pktmbuf_mtod(mbuf, uint8_t*), family);
  }
}

void DpdkShard::stage(rte_mbuf* mbuf, uint16_t length) {
  stats_.tx_bytes += length;
  rte_eth_tx_buffer(config_.port_id, config_.queue_id, tx_buffer_, mbuf);
}

void DpdkShard::emit(rte_mbuf* mbuf, uint16_t length, const conn::PathAddresses& path,
                     transmit::EcnCodepoint ecn, const MacAddress& destination) {
  write_frame_headers(mbuf, length, path, ecn, destination);
  complete_checksum(mbuf, path.local.family);
  stage(mbuf, length);
}

void DpdkShard::emit_burst(const transmit::BurstDescriptor& burst, const conn::PathAddresses& path,
                           const MacAddress& destination) {
  const size_t count = burst.datagram_count;
  const uint64_t start = rte_rdtsc();
  for (size_t i = 0; i < count; ++i) {
    write_frame_headers(lent_[i], burst.lengths[i], path, burst.ecn, destination);
  }
  const uint64_t checksum_start = rte_rdtsc();
  for (size_t i = 0; i < count; ++i) complete_checksum(lent_[i], path.local.family);
  const uint64_t stage_start = rte_rdtsc();
  for (size_t i = 0; i < count; ++i) stage(lent_[i], burst.lengths[i]);
  const uint64_t end = rte_rdtsc();
  stats_.header_cycles += (checksum_start - start) + (end - stage_start);
  stats_.checksum_cycles += stage_start - checksum_start;
  stats_.tx_datagrams += count;
}

void DpdkShard::flush_pending(Instant now) {
  size_t kept = 0;
  for (size_t i = 0; i < pending_count_; ++i) {
    PendingDatagram& held = pending_[i];
    if (const auto mac = neighbours_.lookup(held.next_hop, now)) {
      emit(held.mbuf, held.length, held.path, held.ecn, *mac);
      ++stats_.tx_datagrams;
    } else if (now - held.held_at >= NeighbourCache::kResolveTimeout ||
               !solicit(held.next_hop, now)) {
      ++stats_.neighbour_misses;
      rte_pktmbuf_free(held.mbuf);
    } else {
      pending_[kept++] = held;
    }
  }
  pending_count_ = kept;
}

bool DpdkShard::transmit_round(Instant now) {
  bool any = false;
  transmit::BurstBuffers buffers;
  buffers.capacity = lend_capacity_;
  buffers.segment_size = lend_capacity_;
  buffers.mode = transmit::BurstMode::kIndependent;
  transmit::BurstDescriptor burst;
  conn::PathAddresses path;
  for (int round = 0; round < kMaxBurstsPerRound; ++round) {
    if (!refill_lent()) {
      ++stats_.tx_no_mbuf;
      break;
    }
    buffers.datagrams = std::span<uint8_t* const>(lent_data_.data(), lent_count_);
    const uint64_t build_start = rte_rdtsc();
    if (!core_.endpoint().poll_transmit(now, buffers, burst, path)) break;
    stats_.build_cycles += rte_rdtsc() - build_start;
    ++stats_.tx_bursts;
    any = true;
    const size_t count = burst.datagram_count;
    const auto hop = next_hop(path.remote, config_.interface);
    const auto mac = hop ? neighbours_.lookup(*hop, now) : std::nullopt;
    size_t used = count;
    if (mac) {
      emit_burst(burst, path, *mac);
    } else if (!hop) {
      stats_.neighbour_misses += count;  // no route: the mbufs stay lent
      used = 0;
    } else {
      // Held until ARP/ND answers; what does not fit is lost as far as QUIC
      // knows, and its recovery resends it.
      used = hold(burst, path, *hop, now);
    }
    // The unused lent mbufs move to the front for the next burst.
    std::copy(lent_.begin() + used, lent_.begin() + lent_count_, lent_.begin());
    std::copy(lent_data_.begin() + used, lent_data_.begin() + lent_count_, lent_data_.begin());
    lent_count_ -= used;
  }
  return any;
}

bool DpdkShard::transmit(Instant now) {
  if (!rounds_started_) {
    rounds_started_ = true;
    datagrams_before_rounds_ = stats_.tx_datagrams;
  }
  const uint64_t start = rte_rdtsc();
  const bool any = transmit_round(now);
  round_cycles_ += rte_rdtsc() - start;
  return any;
}

void DpdkShard::end_transmit() {
  const uint64_t flush_start = rte_rdtsc();
  flush_tx();
  const uint64_t flush_cycles = rte_rdtsc() - flush_start;
  // Rounds that sent nothing (window full, pacing, idle) are poll-loop
  // cost, not send-path cost.
  if (rounds_started_ && stats_.tx_datagrams != datagrams_before_rounds_) {
    stats_.flush_cycles += flush_cycles;
    stats_.tx_cycles += round_cycles_ + flush_cycles;
    stats_.tx_cycle_datagrams += stats_.tx_datagrams - datagrams_before_rounds_;
  }
  round_cycles_ = 0;
  rounds_started_ = false;
}

void DpdkShard::publish_counters() {
  const auto& endpoint_stats = core_.endpoint().stats();
  constexpr auto kRelaxed = std::memory_order_relaxed;
  // Datagrams refused by the queue were counted as sent when staged.
  const uint64_t sent = stats_.tx_datagrams - std::min(stats_.tx_datagrams, tx_refused_);
  counters_.connections.store(core_.endpoint().connection_count(), kRelaxed);
  counters_.handshakes.store(core_.handshakes(), kRelaxed);
  counters_.datagrams_in.store(stats_.rx_datagrams, kRelaxed);
  counters_.datagrams_out.store(sent, kRelaxed);
  counters_.bytes_in.store(stats_.rx_bytes, kRelaxed);
  counters_.bytes_out.store(stats_.tx_bytes, kRelaxed);
  counters_.drops.store(endpoint_stats.datagrams_dropped + stats_.total_frame_drops() +
                            stats_.steering_drops + tx_refused_ + stats_.neighbour_misses +
                            stats_.neighbour_hold_drops + stats_.neighbour_rate_limited +
                            stats_.unknown_port + stats_.multi_segment,
                        kRelaxed);
  counters_.retries.store(endpoint_stats.retries_sent, kRelaxed);
  counters_.refused.store(endpoint_stats.connections_refused, kRelaxed);
  counters_.steered.store(stats_.steered_out, kRelaxed);
  counters_.version_negotiations.store(endpoint_stats.version_negotiations_sent, kRelaxed);
  counters_.half_open_dropped.store(
      endpoint_stats.half_open_evicted + endpoint_stats.half_open_expired, kRelaxed);
  counters_.stateless_resets.store(endpoint_stats.stateless_resets_sent, kRelaxed);
  const uint64_t hz = rte_get_tsc_hz();
  counters_.poll_ns.store(cycles_to_nanoseconds(stats_.poll_cycles, hz), kRelaxed);
  counters_.busy_ns.store(cycles_to_nanoseconds(stats_.busy_cycles, hz), kRelaxed);
  stats_.tx_dropped = tx_refused_;
}

Instant DpdkShard::now() {
  const uint64_t tsc = rte_rdtsc();
  if (iteration_tsc_ != 0) {
    const uint64_t cycles = tsc - iteration_tsc_;
    stats_.poll_cycles += cycles;
    if (!iteration_idled_) stats_.busy_cycles += cycles;
  }
  iteration_tsc_ = tsc;
  iteration_idled_ = false;
  return clock_.at(tsc);
}

// A poll-mode core spins: the next packet may come any moment. The
// iteration did no work (DpdkShardStats::busy_cycles leaves it out).
void DpdkShard::idle(Instant) {
  iteration_idled_ = true;
  rte_pause();
}

void DpdkShard::run(const std::atomic<RunPhase>& phase) {
  core_.run(*this, phase, config_.drain_timeout);
}

}  // namespace dpquic::dataplane::dpdk
