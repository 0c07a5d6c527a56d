#pragma once
// Finding the packets an ACK frame newly acknowledges (RFC 9002 §A.7).
//
// The XOR method: over the in-flight window only (SentPackets' ring, not
// every packet ever sent), `previous` is the bitstring of slots already known
// acknowledged (vacant), and `current` is `previous` OR the ACK frame's
// ranges clipped to the window. `current XOR previous` is exactly the newly
// acknowledged packets, found a 64-bit word at a time. Then the two swap by
// pointer, so `previous` holds the post-ACK state.
//
// The bitstrings live in an AckXorBuffer owned by the core's shard and reused
// for every ACK of every connection on it: it grows only when a larger window
// first appears and never shrinks, so ACK processing allocates nothing.

#include <cstddef>
#include <cstdint>

#include "quic/recovery/sent_packets.h"
#include "quic/wire/ack_ranges.h"
#include "quic/wire/errors.h"

namespace dpquic::recovery {

class NewlyAckedVisitor;
struct AckSummary;

class AckXorBuffer {
 public:
  AckXorBuffer() = default;
  ~AckXorBuffer();
  AckXorBuffer(const AckXorBuffer&) = delete;
  AckXorBuffer& operator=(const AckXorBuffer&) = delete;

  // Makes room for windows of `packets` packets (start-up; optional).
  void reserve(size_t packets);
  // Bits each bitstring can hold now.
  size_t capacity_bits() const;
  // Times the buffer has grown (tests prove it stops growing after warm-up).
  size_t growth_count() const;
  // Work done: ACKs that composed part of the window from the ring, and the
  // 64-packet words composed in all (monotonic; tests bound the work a peer
  // can cause per packet).
  size_t rebuilds() const { return rebuilds_; }
  uint64_t words_rebuilt() const { return words_rebuilt_; }

  // After a process_ack that reached the window: the known-acknowledged
  // bits once it was applied, bit i of word j for packet number
  // w + 64 * (first + j) + i, where w was window_begin() before the ACK and
  // first = (max(smallest acknowledged, w) - w) / 64. (Tests use it to see
  // the swap; ACK processing rebuilds it from the ring every time, since the
  // ring changes between ACKs.)
  const uint64_t* previous() const { return previous_; }

 private:
  friend wire::WireError process_ack(const wire::AckRangeView& ranges, SentPackets& sent,
                                     AckXorBuffer& buffer, NewlyAckedVisitor& visitor,
                                     AckSummary& summary);

  // Room for `words` words in each bitstring; false only if the heap fails.
  bool ensure_words(size_t words);

  // One block holding both bitstrings; previous_ and current_ point into it
  // and trade places by pointer after every ACK.
  uint64_t* storage_ = nullptr;
  uint64_t* previous_ = nullptr;
  uint64_t* current_ = nullptr;
  size_t capacity_words_ = 0;
  size_t growth_count_ = 0;
  size_t rebuilds_ = 0;
  uint64_t words_rebuilt_ = 0;
};

// Told about each newly acknowledged packet, in ascending packet-number
// order, just before it is removed from the ring.
class NewlyAckedVisitor {
 public:
  virtual void on_newly_acked(uint64_t packet_number, const SentPacket& packet) = 0;

 protected:
  ~NewlyAckedVisitor() = default;
};

struct AckSummary {
  size_t newly_acked = 0;
  // Valid when newly_acked > 0.
  uint64_t largest_newly_acked = 0;
  bool ack_eliciting_newly_acked = false;
};

// Validates the ACK first: a range naming a packet number never sent (above
// the largest sent, or skipped) is kProtocolViolation and nothing is changed.
// Otherwise visits and removes every newly acknowledged packet. Ranges below
// the window or on already-acknowledged packets are duplicates and ignored.
// `summary` is overwritten. The visitor must not change `sent`.
//
// Only the part of the window the ACK reaches is composed: window words
// (smallest acknowledged - window_begin) / 64 up to (largest - window_begin)
// / 64, so a 16k-packet window answering a small ACK costs a few words.
wire::WireError process_ack(const wire::AckRangeView& ranges, SentPackets& sent,
                            AckXorBuffer& buffer, NewlyAckedVisitor& visitor, AckSummary& summary);

// The reference method: walks the ranges packet by packet. Same contract and
// results as process_ack; for the equivalence test and the benchmark.
wire::WireError process_ack_range_walk(const wire::AckRangeView& ranges, SentPackets& sent,
                                       NewlyAckedVisitor& visitor, AckSummary& summary);

}  // namespace dpquic::recovery
