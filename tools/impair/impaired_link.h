#pragma once
// The impairments of one direction of the proxy, as a sans-IO library: a
// datagram goes in with submit(now, bytes) and comes out of next_due(now)
// when its time has come, or never. Every random choice comes from a seeded
// PRNG, one stream per direction, so a run is reproducible from its seed and
// the order of the datagrams of that direction alone.
//
// Pipeline of a datagram: blackhole period -> random loss -> Gilbert-Elliott
// burst loss -> duplication -> (per copy) corruption -> rate limit (token
// bucket with a bounded queue) -> delay + jitter -> reordering.
//
// Buffers come from a pool of at most max_packets slots that grow to the
// largest datagram they held and are reused: after warm-up nothing is
// allocated per datagram.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quic/time.h"
#include "tools/impair/rng.h"

namespace dpquic::impair {

// A token bucket of `burst_bytes` filled at `rate_bits_per_second`, in front
// of a FIFO that holds at most `queue_bytes` waiting behind the bucket.
// admit() returns when a datagram leaves (now when tokens suffice), or
// nullopt when the data already queued ahead of it exceeds the queue: the
// datagram is dropped. A datagram larger than the bucket still passes, after
// waiting for its own size in tokens.
class TokenBucket {
 public:
  TokenBucket(uint64_t rate_bits_per_second, uint64_t burst_bytes, uint64_t queue_bytes);
  std::optional<Instant> admit(Instant now, size_t bytes);
  // Time the queue needs to drain, seen at `now`.
  Duration backlog(Instant now) const { return free_at_ > now ? free_at_ - now : 0; }

 private:
  // Tokens are kept in bit-nanoseconds (bits * 1e9) so integer refill at
  // rate bits/s per nanosecond is exact.
  uint64_t refill(uint64_t tokens, Duration elapsed) const;

  uint64_t rate_;
  uint64_t capacity_;
  Duration max_queue_delay_;
  Instant free_at_ = 0;
  uint64_t tokens_at_free_;
};

// Forward for `on`, drop everything for `off`, repeating from `start`.
class BlackholeSchedule {
 public:
  BlackholeSchedule(Duration on, Duration off, Instant start) : on_(on), off_(off), start_(start) {}
  bool dropping(Instant now) const;
  bool enabled() const { return off_ > 0; }

 private:
  Duration on_;
  Duration off_;
  Instant start_;
};

struct LinkConfig {
  double loss = 0;
  // Gilbert-Elliott; off while burst_enter == 0.
  double burst_enter = 0;
  double burst_exit = 1;
  double burst_loss_in_bad = 1;
  double duplicate = 0;
  double corrupt = 0;
  // A reordered datagram is held back reorder_delay, or, when that is 0,
  // until reorder_packets later datagrams have gone out (at most
  // reorder_hold_limit after it was due).
  double reorder = 0;
  uint32_t reorder_packets = 3;
  Duration reorder_delay = 0;
  Duration reorder_hold_limit = 100 * kMillisecond;
  Duration delay = 0;
  // Each datagram gets an extra delay uniform in [0, jitter]; this alone can
  // reorder datagrams less than jitter apart.
  Duration jitter = 0;
  uint64_t rate_bits_per_second = 0;  // 0: unlimited
  uint64_t rate_burst_bytes = 15000;
  uint64_t queue_bytes = 0;  // 0: 100 ms at the rate, at least 16 KB
  Duration blackhole_on = 0;
  Duration blackhole_off = 0;  // 0: no blackhole
  size_t max_packets = 65536;  // datagrams held at once (pool slots)
};

struct LinkCounters {
  uint64_t received = 0;
  uint64_t forwarded = 0;
  uint64_t dropped_blackhole = 0;
  uint64_t dropped_loss = 0;
  uint64_t dropped_burst = 0;
  uint64_t dropped_queue = 0;     // rate limit queue full
  uint64_t dropped_overflow = 0;  // no pool slot left
  uint64_t dropped_send = 0;      // the socket refused it
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t held = 0;         // chosen for reordering
  uint64_t reordered = 0;    // went out after a datagram submitted later
  uint64_t delayed = 0;      // got delay or jitter
  uint64_t rate_queued = 0;  // waited for tokens
};

class ImpairedLink {
 public:
  struct Due {
    std::span<const uint8_t> bytes;
    uint32_t flow;
  };

  ImpairedLink(const LinkConfig& config, uint64_t seed, Instant start);

  // Takes a copy of `bytes`; `flow` comes back with it (the proxy's client).
  void submit(Instant now, std::span<const uint8_t> bytes, uint32_t flow);
  // The next datagram due at `now`, or nullopt. The bytes stay valid until
  // the next call.
  std::optional<Due> next_due(Instant now);
  // When next_due() will next have something; kNever when nothing is held.
  Instant next_event() const;
  // Datagrams inside the link (queued, delayed or held).
  size_t in_flight() const { return heap_.size() + held_.size() + ready_.size(); }

  void count_send_failure() { ++counters_.dropped_send; }
  const LinkCounters& counters() const { return counters_; }

 private:
  struct Slot {
    std::vector<uint8_t> bytes;
    size_t length = 0;
    uint32_t flow = 0;
    uint64_t sequence = 0;
    bool hold = false;  // to be held back by packet count when due
  };
  struct Scheduled {
    Instant release;
    uint64_t sequence;
    uint32_t slot;
  };
  struct Held {
    uint32_t slot;
    uint32_t remaining;  // later datagrams still to go out before it
    Instant deadline;
  };

  std::optional<uint32_t> acquire(std::span<const uint8_t> bytes, uint32_t flow);
  void release_slot(uint32_t slot);
  void corrupt(Slot& slot);
  void schedule(Instant now, uint32_t slot);
  Due emit(uint32_t slot);

  LinkConfig config_;
  Rng rng_;
  GilbertElliott burst_;
  std::optional<TokenBucket> bucket_;
  BlackholeSchedule blackhole_;
  LinkCounters counters_;

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Scheduled> heap_;  // min-heap on (release, sequence)
  std::vector<Held> held_;
  std::vector<uint32_t> ready_;  // held datagrams released, in order
  size_t ready_head_ = 0;
  std::optional<uint32_t> returned_;  // slot handed out by the last next_due
  uint64_t next_sequence_ = 0;
  std::optional<uint64_t> highest_emitted_;
};

}  // namespace dpquic::impair
