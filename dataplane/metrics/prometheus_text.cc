#include "dataplane/metrics/prometheus_text.h"

#include <iterator>

namespace dpquic::dataplane {
namespace {

struct CounterFamily {
  const char* field;  // the CounterSnapshot field, as the totals line and telemetry name it
  uint64_t CounterSnapshot::*value;
  bool gauge;
  const char* help;
};

constexpr CounterFamily kCounterFamilies[] = {
    {"connections", &CounterSnapshot::connections, true, "Connections held now."},
    {"handshakes", &CounterSnapshot::handshakes, false, "Handshakes completed."},
    {"datagrams_in", &CounterSnapshot::datagrams_in, false, "UDP datagrams received."},
    {"datagrams_out", &CounterSnapshot::datagrams_out, false, "UDP datagrams sent."},
    {"bytes_in", &CounterSnapshot::bytes_in, false, "UDP payload bytes received."},
    {"bytes_out", &CounterSnapshot::bytes_out, false, "UDP payload bytes sent."},
    {"drops", &CounterSnapshot::drops, false,
     "Datagrams dropped: unroutable or malformed, steering ring full, send failures, "
     "truncated receives."},
    {"retries", &CounterSnapshot::retries, false, "Retry packets sent."},
    {"refused", &CounterSnapshot::refused, false, "Initials answered with CONNECTION_REFUSED."},
    {"steered", &CounterSnapshot::steered, false,
     "Datagrams handed to the shard that owns their connection."},
    {"gso_fallbacks", &CounterSnapshot::gso_fallbacks, false,
     "Sends that fell back from UDP GSO to one datagram per message."},
    {"version_negotiations", &CounterSnapshot::version_negotiations, false,
     "Version Negotiation packets sent."},
    {"half_open_dropped", &CounterSnapshot::half_open_dropped, false,
     "Handshakes from unvalidated addresses dropped under pressure."},
    {"stateless_resets", &CounterSnapshot::stateless_resets, false, "Stateless resets sent."},
};

// A new CounterSnapshot field needs its family above.
static_assert(sizeof(CounterSnapshot) == std::size(kCounterFamilies) * sizeof(uint64_t));

constexpr char kHandshakeFamily[] = "dpquic_handshake_duration_seconds";

void append_header(std::string& out, const std::string& name, const char* help, const char* type) {
  out += "# HELP " + name + " " + help + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

void append_sample(std::string& out, const std::string& name, size_t shard, const char* le,
                   const std::string& value) {
  out += name;
  out += "{shard=\"" + std::to_string(shard) + "\"";
  if (le != nullptr) out += std::string(",le=\"") + le + "\"";
  out += "} " + value + "\n";
}

void append_counters(std::string& out, std::span<const ShardMetrics> shards) {
  for (const CounterFamily& family : kCounterFamilies) {
    const std::string name = std::string("dpquic_") + family.field + (family.gauge ? "" : "_total");
    append_header(out, name, family.help, family.gauge ? "gauge" : "counter");
    for (size_t i = 0; i < shards.size(); ++i) {
      append_sample(out, name, i, nullptr, std::to_string(shards[i].counters.*family.value));
    }
  }
}

struct LoopTimeFamily {
  const char* name;
  uint64_t LoopTimeSnapshot::*value;
  const char* help;
};

constexpr LoopTimeFamily kLoopTimeFamilies[] = {
    {"dpquic_dpdk_poll_seconds_total", &LoopTimeSnapshot::poll_ns,
     "Time the DPDK shard's worker lcore spent in its poll loop (TSC)."},
    {"dpquic_dpdk_busy_seconds_total", &LoopTimeSnapshot::busy_ns,
     "Time in poll loop iterations that did work: received or transmitted packets, took steered "
     "ones, ran due timers or connection events (TSC)."},
};

void append_loop_time(std::string& out, std::span<const ShardMetrics> shards) {
  bool any = false;
  for (const ShardMetrics& shard : shards) any |= shard.loop_time.has_value();
  if (!any) return;
  for (const LoopTimeFamily& family : kLoopTimeFamilies) {
    append_header(out, family.name, family.help, "counter");
    for (size_t i = 0; i < shards.size(); ++i) {
      if (!shards[i].loop_time) continue;
      append_sample(out, family.name, i, nullptr,
                    format_seconds((*shards[i].loop_time).*family.value));
    }
  }
}

void append_histograms(std::string& out, std::span<const ShardMetrics> shards) {
  const std::string name = kHandshakeFamily;
  append_header(out, name,
                "Time from a connection's first Initial accepted to handshake completion.",
                "histogram");
  for (size_t i = 0; i < shards.size(); ++i) {
    const HistogramSnapshot& h = shards[i].handshake_time;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kHandshakeBucketCount; ++b) {
      cumulative += h.buckets[b];
      const std::string le = b < kHandshakeBucketBounds.size()
                                 ? format_seconds(kHandshakeBucketBounds[b])
                                 : std::string("+Inf");
      append_sample(out, name + "_bucket", i, le.c_str(), std::to_string(cumulative));
    }
    append_sample(out, name + "_sum", i, nullptr, format_seconds(h.sum_ns));
    append_sample(out, name + "_count", i, nullptr, std::to_string(h.count));
  }
}

}  // namespace

std::string format_seconds(uint64_t nanoseconds) {
  std::string text = std::to_string(nanoseconds / kSecond);
  uint64_t fraction = nanoseconds % kSecond;
  if (fraction == 0) return text;
  std::string digits = std::to_string(fraction);
  digits.insert(0, 9 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return text + "." + digits;
}

std::string format_prometheus_text(std::span<const ShardMetrics> shards) {
  std::string out;
  append_counters(out, shards);
  append_loop_time(out, shards);
  append_histograms(out, shards);
  return out;
}

}  // namespace dpquic::dataplane
