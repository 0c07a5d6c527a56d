#pragma once
// rte_telemetry commands for dpdk-telemetry.py:
//   /dpquic/stats   totals over all shards (a dict of counter -> value)
//   /dpquic/shards  one dict per shard (a dict keyed by shard index)
// Counters are the shards' ShardCounters (relaxed loads; the shards publish
// once per loop iteration).

#include <rte_telemetry.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/shard/shard_counters.h"

namespace dpquic::dataplane::dpdk {

// Points the commands at `shards` (registering them on the first call).
// The counters must stay alive until clear_telemetry_source().
void set_telemetry_source(std::span<const ShardCounters* const> shards);
// After this the commands answer with empty data (the shards are gone).
void clear_telemetry_source();

// One counter as the commands name it.
struct TelemetryCounter {
  const char* name;
  uint64_t value;
};
inline constexpr size_t kTelemetryCounterCount = 14;

// Every ShardCounters field of `snapshot`, named; the handlers report these.
std::array<TelemetryCounter, kTelemetryCounterCount> telemetry_counters(
    const CounterSnapshot& snapshot);

// Totals over shards, as /dpquic/stats reports them.
CounterSnapshot sum_snapshots(std::span<const CounterSnapshot> shards);

// The source as the handlers see it now: one snapshot per shard, or nullopt
// when there is no source (the handlers then answer an empty dict).
std::optional<std::vector<CounterSnapshot>> telemetry_shard_snapshots();

// The command handlers, as rte_telemetry calls them (tests call them
// directly: the telemetry socket cannot bind inside the test sandbox).
int telemetry_stats_command(const char* command, const char* parameters, rte_tel_data* data);
int telemetry_shards_command(const char* command, const char* parameters, rte_tel_data* data);

}  // namespace dpquic::dataplane::dpdk
