#pragma once
// A shard's counters as other threads read them: written by the shard once
// per loop iteration (relaxed stores of its own totals), read by the stats
// printer and telemetry. Cache-line aligned so shards never share a line.

#include <atomic>
#include <cstdint>

#include "dataplane/shard/handshake_histogram.h"

namespace dpquic::dataplane {

struct alignas(64) ShardCounters {
  std::atomic<uint64_t> connections{0};  // live now
  std::atomic<uint64_t> handshakes{0};   // completed, total
  std::atomic<uint64_t> datagrams_in{0};
  std::atomic<uint64_t> datagrams_out{0};
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  // Dropped: unroutable or malformed (endpoint), steering ring full, send
  // failures, truncated receives.
  std::atomic<uint64_t> drops{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> steered{0};  // handed to another shard
  std::atomic<uint64_t> gso_fallbacks{0};
  std::atomic<uint64_t> version_negotiations{0};
  // Handshakes from unvalidated addresses dropped under pressure (evicted
  // for a proven client, or expired early while Retry is on).
  std::atomic<uint64_t> half_open_dropped{0};
  // Stateless resets sent: packets for connections this host does not hold
  // (after a restart, or routed here by mistake).
  std::atomic<uint64_t> stateless_resets{0};
  // Poll-mode (DPDK) shards only, zero on kernel UDP: nanoseconds (TSC
  // cycles at the TSC's rate) of the shard's loop, all of it and its
  // iterations that did work (dataplane/dpdk/dpdk_shard.h, DpdkShardStats::
  // poll_cycles and busy_cycles). Not in CounterSnapshot: LoopTimeSnapshot.
  std::atomic<uint64_t> poll_ns{0};
  std::atomic<uint64_t> busy_ns{0};
  // Handshake durations, added to by ShardCore as each handshake completes
  // (on its own cache lines).
  HandshakeHistogram handshake_time;
};

// A plain copy of the counters, summed over shards.
struct CounterSnapshot {
  uint64_t connections = 0, handshakes = 0, datagrams_in = 0, datagrams_out = 0, bytes_in = 0,
           bytes_out = 0, drops = 0, retries = 0, refused = 0, steered = 0, gso_fallbacks = 0,
           version_negotiations = 0, half_open_dropped = 0, stateless_resets = 0;

  void add(const ShardCounters& c) {
    connections += c.connections.load(std::memory_order_relaxed);
    handshakes += c.handshakes.load(std::memory_order_relaxed);
    datagrams_in += c.datagrams_in.load(std::memory_order_relaxed);
    datagrams_out += c.datagrams_out.load(std::memory_order_relaxed);
    bytes_in += c.bytes_in.load(std::memory_order_relaxed);
    bytes_out += c.bytes_out.load(std::memory_order_relaxed);
    drops += c.drops.load(std::memory_order_relaxed);
    retries += c.retries.load(std::memory_order_relaxed);
    refused += c.refused.load(std::memory_order_relaxed);
    steered += c.steered.load(std::memory_order_relaxed);
    gso_fallbacks += c.gso_fallbacks.load(std::memory_order_relaxed);
    version_negotiations += c.version_negotiations.load(std::memory_order_relaxed);
    half_open_dropped += c.half_open_dropped.load(std::memory_order_relaxed);
    stateless_resets += c.stateless_resets.load(std::memory_order_relaxed);
  }
};

// A poll-mode shard's loop time, as a plain copy.
struct LoopTimeSnapshot {
  uint64_t poll_ns = 0, busy_ns = 0;

  void add(const ShardCounters& c) {
    poll_ns += c.poll_ns.load(std::memory_order_relaxed);
    busy_ns += c.busy_ns.load(std::memory_order_relaxed);
  }
};

}  // namespace dpquic::dataplane
