#pragma once
// One direction of a simulated network path, in virtual time: impairments
// (impairment.h), a FIFO bottleneck of configurable rate and tail-drop queue,
// and a propagation delay.
//
// Datagram bytes live in preallocated slots recycled through a free list, and
// the delivery schedule is a binary heap over a reserved vector, so a link in
// steady state allocates nothing per datagram: storage grows only when more
// datagrams are in flight than ever before.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "quic/transmit/burst.h"
#include "tools/testbed/impairment.h"

namespace dpquic::harness {

using conn::PathAddresses;
using conn::SocketAddress;

struct LinkConfig {
  Duration one_way_delay = 10 * kMillisecond;
  // 0 = infinite. Otherwise datagrams are serialized one after another
  // (FIFO), each taking ceil(size * 8 s / bandwidth_bps).
  uint64_t bandwidth_bps = 0;
  // 0 = unbounded. The bottleneck queue holds every accepted datagram whose
  // serialization has not finished (the one on the wire included); a datagram
  // that would take it over queue_bytes is tail-dropped. Needs a bandwidth.
  size_t queue_bytes = 0;
  double loss = 0;  // independent loss probability
  // Gilbert-Elliott: P(good->bad), P(bad->good), drawn per datagram before
  // it is sent; in the bad state every datagram is lost.
  double burst_loss_enter = 0, burst_loss_exit = 1;
  double reorder = 0;  // a reordered datagram is delayed by reorder_extra_delay
  Duration reorder_extra_delay = 5 * kMillisecond;
  double duplicate = 0;  // the copy arrives right after the original
  double corrupt = 0;    // flips one random bit of the payload
  // Sets CE on ECT(0)/ECT(1) datagrams with this probability (congestion
  // marks); bleach_ecn clears every codepoint to Not-ECT (an ECN-hostile path).
  double ce_mark = 0;
  bool bleach_ecn = false;
  // Drop datagrams by index (0-based count of datagrams entering this link):
  // for "client packets 2-7 dropped". Applied before every other impairment.
  std::vector<uint64_t> drop_indices;
  // 0 = unlimited. A datagram (UDP payload) larger than this is dropped, as
  // a link whose MTU is mtu + 28 drops IPv4 packets without fragmenting.
  size_t mtu = 0;
  uint64_t seed = 1;
};

struct LinkStats {
  uint64_t sent = 0;  // datagrams entering the link (duplicates not counted)
  uint64_t delivered = 0;
  uint64_t dropped_loss = 0;  // drop_indices, burst and random loss
  uint64_t dropped_queue = 0;
  uint64_t dropped_mtu = 0;  // larger than LinkConfig::mtu
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t reordered = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_delivered = 0;
  // Reached the far end but no node owns the destination (an unknown
  // address, or a NAT mapping that was rebound): not counted as delivered.
  uint64_t dropped_unroutable = 0;
  uint64_t ce_marked = 0;
};

// A datagram handed out of the link: its bytes stay valid (and writable, for
// in-place decryption) until the next take_due() on the same link.
struct Delivery {
  PathAddresses path;  // as sent: local = source, remote = destination
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  std::span<uint8_t> bytes;
  Instant at = 0;  // scheduled arrival time
};

class Link {
 public:
  explicit Link(const LinkConfig& config);

  // Replaces the configuration from now on; datagrams in flight keep their
  // schedule, the random streams restart from the new seed and drop_indices
  // keep counting from the link's first datagram.
  void reconfigure(const LinkConfig& config);
  const LinkConfig& config() const { return config_; }

  // A datagram enters the link at `now` (non-decreasing across calls).
  // Returns whether it will be delivered (false: lost or tail-dropped).
  bool send(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
            std::span<const uint8_t> bytes);

  // The earliest scheduled arrival, or kNever when nothing is in flight.
  Instant next_delivery() const { return schedule_.empty() ? kNever : schedule_.front().at; }

  // Removes the earliest datagram due at or before `now` into `out`; ties go
  // in the order the datagrams were scheduled. Returns false if none is due.
  bool take_due(Instant now, Delivery& out);
  // The datagram last taken had no receiver: count it as unroutable instead
  // of delivered.
  void mark_taken_unroutable();

  const LinkStats& stats() const { return stats_; }
  size_t in_flight() const { return schedule_.size(); }
  // Bytes in the bottleneck (waiting or being serialized) at `now`.
  size_t queued_bytes(Instant now);

 private:
  struct Slot {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
    size_t length = 0;
    PathAddresses path;
    transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  };
  struct Scheduled {
    Instant at;
    uint64_t sequence;  // ties broken by scheduling order
    uint32_t slot;
  };
  // A datagram accepted into the bottleneck: leaves it at `done`.
  struct Serializing {
    Instant done;
    size_t size;
  };

  uint32_t acquire_slot(size_t size);
  void release_slot(uint32_t slot);
  void schedule(Instant at, uint32_t slot);
  void drain_bottleneck(Instant now);
  // Doubles queue_, keeping its datagrams in order from index 0.
  void grow_queue();
  // Queues a datagram of `size` bytes at `now` behind those being
  // serialized; false (counted) when the queue tail-drops it, else true
  // with `departs` set to when its serialization ends.
  bool enter_bottleneck(Instant now, size_t size, Instant& departs);
  // Schedules a copy of slot `original_slot`'s datagram to arrive at `at`.
  void schedule_copy(Instant at, uint32_t original_slot, size_t size);
  Duration serialization_time(size_t size) const;

  LinkConfig config_;
  Impairment impairment_;
  LinkStats stats_;

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Scheduled> schedule_;  // min-heap on (at, sequence)
  uint64_t next_sequence_ = 0;
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  uint32_t taken_slot_ = kNoSlot;

  // The bottleneck: busy until busy_until_; queue_ is a ring of the
  // datagrams not yet fully serialized (kept only when queue_bytes is set).
  Instant busy_until_ = 0;
  std::vector<Serializing> queue_;  // power-of-two ring
  size_t queue_head_ = 0;
  size_t queue_count_ = 0;
  size_t queue_bytes_ = 0;
};

}  // namespace dpquic::harness
