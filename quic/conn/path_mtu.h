#pragma once
// Datagram Packetization Layer PMTU Discovery (RFC 8899, for QUIC RFC 9000
// §14.3) for one path. Sans-IO: the connection asks what to probe, reports
// what happened to probes and to ordinary packets, and drives the timers.
//
// PLPMTU: the largest UDP payload the path is known to carry. It starts at
// the base (what we would send without discovery) and only a probe that is
// acknowledged raises it.
//
// Probe sizes: an ascending ladder of common link MTUs (Ethernet 1500,
// IPoIB 2044 and 4092, cloud jumbo 8896, Ethernet jumbo 9000), each turned
// into a UDP payload by subtracting the IP and UDP headers (28 bytes over
// IPv4, 48 over IPv6), then the ceiling itself (min of the peer's
// max_udp_payload_size, our configured maximum and the buffer the caller
// lends: 16383 on loopback). Why a ladder rather than a binary search: a
// probe that gets through costs one round trip, one that does not costs
// kMaxProbes probe timeouts; real paths have one of a few MTUs, so a ladder
// lands exactly on them (9000 -> 8972) with at most one failing size, where
// a binary search would spend most of its steps on failing sizes between
// the rungs. A size that fails kMaxProbes times ends the search
// (RFC 8899 §5.2 SEARCH_COMPLETE); larger sizes are tried again after
// kRaiseTimer.
//
// One probe is in flight at a time. It fails when it was not acknowledged
// within the probe timeout (the PTO the connection passes when sending it),
// or when loss detection declares it lost, whichever comes first.
//
// Black holes (RFC 8899 §4.3): once the PLPMTU is above the base, full-size
// packets may stop getting through (a route change). The connection reports
// packets larger than the base as acknowledged or lost, and each PTO
// expiry. Fallback to the base happens when, with nothing larger than the
// base acknowledged meanwhile, either kBlackHolePtos PTOs expired in a row
// (nothing at all gets acknowledged: every ack-eliciting packet is large),
// or kBlackHoleLossRounds separate loss detection rounds declared packets
// larger than the base lost (small packets still get through). The search
// then starts over once a packet is acknowledged at the base size; if the
// hole is real, the size that fell into it fails its probes and ends the
// search below it (probes cost no congestion reaction, so re-trying it is
// cheaper than wrongly shunning it for kRaiseTimer after an outage).

#include <cstddef>
#include <cstdint>

#include "quic/time.h"

namespace dpquic::conn {

enum class PmtuState : uint8_t {
  kDisabled,  // ceiling <= base: nothing to discover
  kSearching,
  kSearchComplete,
};

class PathMtu {
 public:
  static constexpr uint32_t kMaxProbes = 3;               // RFC 8899 MAX_PROBES
  static constexpr Duration kRaiseTimer = 600 * kSecond;  // RFC 8899 PMTU_RAISE_TIMER
  static constexpr uint32_t kBlackHolePtos = 2;           // PTOs in a row
  static constexpr uint32_t kBlackHoleLossRounds = 3;     // loss rounds in a row
  static constexpr Duration kMinProbeTimeout = 10 * kMillisecond;
  // Link MTUs of the ladder (see above); the ceiling follows the last.
  static constexpr size_t kLinkMtus[] = {1500, 2044, 4092, 8896, 9000};
  static constexpr size_t kIpv4Overhead = 28;  // IPv4 + UDP headers
  static constexpr size_t kIpv6Overhead = 48;  // IPv6 + UDP headers

  PathMtu() = default;

  // A new path (or the first one): back to `base`, searching from scratch.
  // `ip_overhead`: kIpv4Overhead or kIpv6Overhead for the path's family.
  // `first_packet_number`: the first 1-RTT packet number sent on the new
  // path; acknowledgments and losses of earlier packets (the old path's, still
  // arriving) say nothing about this one and are ignored.
  void reset(size_t base, size_t ip_overhead, uint64_t first_packet_number = 0);
  // The most the path may be probed to; may change at any time (peer
  // parameters arrive, the lent buffers change). Below the current PLPMTU
  // it also lowers the PLPMTU (never below the base).
  void set_ceiling(size_t ceiling);

  // The largest payload known to get through: what data datagrams use.
  size_t current() const { return plpmtu_; }
  size_t base() const { return base_; }
  size_t ceiling() const { return ceiling_; }
  PmtuState state() const;
  bool enabled() const { return ceiling_ > base_; }
  bool probe_in_flight() const { return probe_size_ != 0; }
  // The size of the probe in flight, 0 if none.
  size_t probe_size() const { return probe_size_; }

  // The size to probe now, or 0: no search, a probe already in flight,
  // waiting for the base to be confirmed after a black hole, or nothing
  // left below the ceiling.
  size_t probe_due(Instant now) const;
  // The probe of `size` bytes left as `packet_number`; it fails if not
  // acknowledged within `probe_timeout` (at least kMinProbeTimeout).
  void on_probe_sent(Instant now, uint64_t packet_number, size_t size, Duration probe_timeout);

  // Any acknowledged packet of this path (the probe included): a probe
  // acknowledged raises the PLPMTU; a packet larger than the base shows
  // large packets get through (ends black-hole suspicion); any packet
  // confirms the base after a fallback. Packets numbered below the path's
  // first (see reset) are ignored, here and in on_packet_lost.
  void on_packet_acked(uint64_t packet_number, size_t size);
  // A packet of this path declared lost by loss detection. `now` groups
  // losses into rounds (one ACK frame or timeout declares a round).
  void on_packet_lost(Instant now, uint64_t packet_number, size_t size);
  // The PTO expired (RFC 9002 §6.2) with data in flight on this path.
  void on_pto(Instant now);

  // The probe timeout or the raise timer; kNever when neither is armed.
  Instant next_deadline() const;
  void on_timeout(Instant now);

  // Counters for tests and statistics.
  uint64_t probes_sent() const { return probes_sent_; }
  uint64_t probes_lost() const { return probes_lost_; }
  uint64_t black_holes() const { return black_holes_; }

 private:
  // The next ladder size above the PLPMTU, or 0.
  size_t next_candidate() const;
  void probe_failed(Instant now);
  void fall_back();

  size_t base_ = 1452;
  size_t ceiling_ = 0;
  uint64_t first_packet_number_ = 0;  // the path's first (see reset)
  size_t ip_overhead_ = kIpv4Overhead;
  size_t plpmtu_ = 1452;
  // Sizes at or above this failed (0: none); forgotten at raise_at_.
  size_t failed_size_ = 0;
  Instant raise_at_ = kNever;

  // The probe in flight (size 0: none).
  size_t probe_size_ = 0;
  uint64_t probe_packet_number_ = 0;
  Instant probe_deadline_ = kNever;
  // Probes of candidate_size_ that failed so far.
  size_t candidate_size_ = 0;
  uint32_t candidate_failures_ = 0;

  // Black-hole evidence since the last packet larger than the base was
  // acknowledged.
  uint32_t pto_run_ = 0;
  uint32_t loss_rounds_ = 0;
  Instant last_loss_round_ = kNever;
  // After a fallback: no probing until something is acknowledged at base.
  bool confirming_base_ = false;

  uint64_t probes_sent_ = 0;
  uint64_t probes_lost_ = 0;
  uint64_t black_holes_ = 0;
};

}  // namespace dpquic::conn
