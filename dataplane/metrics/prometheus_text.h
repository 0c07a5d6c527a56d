#pragma once
// The shards' counters and handshake histograms in the Prometheus text
// exposition format 0.0.4, as GET /metrics answers them. Every family has
// HELP and TYPE lines and one series per shard, labelled shard="N" (the
// shard's index); there is no unlabelled total: sum() over the label gives
// the server's. Counters are dpquic_<CounterSnapshot field>_total, the
// live connection count is the gauge dpquic_connections, and handshake
// durations are the histogram dpquic_handshake_duration_seconds. Poll-mode
// (DPDK) shards add their loop time: the counters
// dpquic_dpdk_poll_seconds_total and dpquic_dpdk_busy_seconds_total (only
// for shards with ShardMetrics::loop_time; families without any shard that
// has it are left out).

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "dataplane/shard/handshake_histogram.h"
#include "dataplane/shard/shard_counters.h"

namespace dpquic::dataplane {

// What one shard reports.
struct ShardMetrics {
  CounterSnapshot counters;
  HistogramSnapshot handshake_time;
  // DPDK shards: their poll loop's time (kernel UDP shards: none).
  std::optional<LoopTimeSnapshot> loop_time;
};

inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4";

// The whole exposition for `shards` (index = shard label), ending with a
// newline.
std::string format_prometheus_text(std::span<const ShardMetrics> shards);

// `nanoseconds` as seconds in exact decimal, without trailing zeros:
// 500000 -> "0.0005", 2000000000 -> "2", 0 -> "0".
std::string format_seconds(uint64_t nanoseconds);

}  // namespace dpquic::dataplane
