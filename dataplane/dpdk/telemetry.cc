#include "dataplane/dpdk/telemetry.h"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <string>

namespace dpquic::dataplane::dpdk {
namespace {

constexpr const char* kStatsCommand = "/dpquic/stats";
constexpr const char* kShardsCommand = "/dpquic/shards";

// Telemetry answers from its own threads (one per client socket) while the
// main thread sets or clears the source: everything below is under `mutex`.
struct Source {
  std::mutex mutex;
  bool registered = false;
  bool present = false;
  std::vector<const ShardCounters*> shards;
};

Source& source() {
  static Source* const instance = new Source();  // outlives every telemetry thread
  return *instance;
}

int add_counters(rte_tel_data* data, const CounterSnapshot& snapshot) {
  for (const TelemetryCounter& counter : telemetry_counters(snapshot)) {
    if (const int result = rte_tel_data_add_dict_u64(data, counter.name, counter.value);
        result < 0) {
      return result;
    }
  }
  return 0;
}

}  // namespace

std::array<TelemetryCounter, kTelemetryCounterCount> telemetry_counters(
    const CounterSnapshot& snapshot) {
  return {{
      {"connections", snapshot.connections},
      {"handshakes", snapshot.handshakes},
      {"datagrams_in", snapshot.datagrams_in},
      {"datagrams_out", snapshot.datagrams_out},
      {"bytes_in", snapshot.bytes_in},
      {"bytes_out", snapshot.bytes_out},
      {"drops", snapshot.drops},
      {"retries", snapshot.retries},
      {"refused", snapshot.refused},
      {"steered", snapshot.steered},
      {"gso_fallbacks", snapshot.gso_fallbacks},
      {"version_negotiations", snapshot.version_negotiations},
      {"half_open_dropped", snapshot.half_open_dropped},
      {"stateless_resets", snapshot.stateless_resets},
  }};
}

void set_telemetry_source(std::span<const ShardCounters* const> shards) {
  Source& state = source();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.registered) {
    // rte_telemetry keeps commands for the life of the process: once.
    if (rte_telemetry_register_cmd(kStatsCommand, telemetry_stats_command,
                                   "dpquic counters summed over all shards. No parameters") != 0 ||
        rte_telemetry_register_cmd(kShardsCommand, telemetry_shards_command,
                                   "dpquic counters of each shard, keyed by shard index. No "
                                   "parameters") != 0) {
      throw std::runtime_error("cannot register the /dpquic telemetry commands");
    }
    state.registered = true;
  }
  state.shards.assign(shards.begin(), shards.end());
  state.present = true;
}

void clear_telemetry_source() {
  Source& state = source();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.shards.clear();
  state.present = false;
}

CounterSnapshot sum_snapshots(std::span<const CounterSnapshot> shards) {
  CounterSnapshot total;
  for (const CounterSnapshot& shard : shards) {
    total.connections += shard.connections;
    total.handshakes += shard.handshakes;
    total.datagrams_in += shard.datagrams_in;
    total.datagrams_out += shard.datagrams_out;
    total.bytes_in += shard.bytes_in;
    total.bytes_out += shard.bytes_out;
    total.drops += shard.drops;
    total.retries += shard.retries;
    total.refused += shard.refused;
    total.steered += shard.steered;
    total.gso_fallbacks += shard.gso_fallbacks;
    total.version_negotiations += shard.version_negotiations;
    total.half_open_dropped += shard.half_open_dropped;
    total.stateless_resets += shard.stateless_resets;
  }
  return total;
}

std::optional<std::vector<CounterSnapshot>> telemetry_shard_snapshots() {
  Source& state = source();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.present) return std::nullopt;
  std::vector<CounterSnapshot> snapshots(state.shards.size());
  for (size_t i = 0; i < state.shards.size(); ++i) snapshots[i].add(*state.shards[i]);
  return snapshots;
}

int telemetry_stats_command(const char* /*command*/, const char* /*parameters*/,
                            rte_tel_data* data) {
  if (const int result = rte_tel_data_start_dict(data); result < 0) return result;
  const std::optional<std::vector<CounterSnapshot>> shards = telemetry_shard_snapshots();
  if (!shards) return 0;
  const CounterSnapshot total = sum_snapshots(*shards);
  if (const int result = rte_tel_data_add_dict_u64(data, "shards", shards->size()); result < 0) {
    return result;
  }
  return add_counters(data, total);
}

int telemetry_shards_command(const char* /*command*/, const char* /*parameters*/,
                             rte_tel_data* data) {
  if (const int result = rte_tel_data_start_dict(data); result < 0) return result;
  const std::optional<std::vector<CounterSnapshot>> shards = telemetry_shard_snapshots();
  if (!shards) return 0;
  // A telemetry dict holds at most RTE_TEL_MAX_DICT_ENTRIES entries.
  const size_t reported = std::min<size_t>(shards->size(), RTE_TEL_MAX_DICT_ENTRIES);
  for (size_t i = 0; i < reported; ++i) {
    rte_tel_data* shard = rte_tel_data_alloc();
    if (shard == nullptr) return -ENOMEM;
    int result = rte_tel_data_start_dict(shard);
    if (result >= 0) result = add_counters(shard, (*shards)[i]);
    // keep = 0: telemetry frees the container once it has written it out.
    if (result >= 0)
      result = rte_tel_data_add_dict_container(data, std::to_string(i).c_str(), shard, 0);
    if (result < 0) {
      rte_tel_data_free(shard);
      return result;
    }
  }
  return 0;
}

}  // namespace dpquic::dataplane::dpdk
