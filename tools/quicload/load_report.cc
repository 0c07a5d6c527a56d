#include "tools/quicload/load_report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace dpquic::tools {

namespace {

double ms(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1e6; }

void append(std::string& out, const char* format, auto... values) {
  char buffer[256];
  const int n = std::snprintf(buffer, sizeof(buffer), format, values...);
  if (n > 0) out.append(buffer, static_cast<size_t>(std::min<int>(n, sizeof(buffer) - 1)));
}

uint64_t completed(const LoadCounters& c, bool handshake_only) {
  return handshake_only ? c.handshakes + c.handshakes_failed : c.requests_ok + c.requests_failed;
}

}  // namespace

const char* error_key(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kHandshakeTimeout: return "handshake_timeout";
    case ErrorKind::kRefused: return "refused";
    case ErrorKind::kReset: return "reset";
    case ErrorKind::kMismatch: return "mismatch";
    case ErrorKind::kClosed: return "closed";
    case ErrorKind::kProtocol: return "protocol";
    case ErrorKind::kStatus: return "status";
    case ErrorKind::kCount: break;
  }
  return "unknown";
}

void LoadCounters::add(const LoadCounters& o) {
  connections_opened += o.connections_opened;
  handshakes += o.handshakes;
  handshakes_failed += o.handshakes_failed;
  resumed += o.resumed;
  zero_rtt_offered += o.zero_rtt_offered;
  zero_rtt_accepted += o.zero_rtt_accepted;
  requests_ok += o.requests_ok;
  requests_failed += o.requests_failed;
  requests_not_sent += o.requests_not_sent;
  requests_abandoned += o.requests_abandoned;
  requests_retried_after_goaway += o.requests_retried_after_goaway;
  goaways += o.goaways;
  connections_refused_after_goaway += o.connections_refused_after_goaway;
  bytes_received += o.bytes_received;
  bytes_sent += o.bytes_sent;
  idle_connections += o.idle_connections;
  for (size_t i = 0; i < kErrorKinds; ++i) errors[i] += o.errors[i];
}

uint64_t LoadCounters::error_total() const {
  uint64_t total = 0;
  for (uint64_t n : errors) total += n;
  return total;
}

double goodput_gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) * 8.0 / seconds / 1e9 : 0.0;
}

std::string format_progress(double elapsed_sec, double interval_sec, uint64_t total,
                            bool handshake_only, const LoadCounters& now,
                            const LoadCounters& before, const LatencyHistogram& latency) {
  std::string line;
  append(line, "[%7.1fs] %s %" PRIu64, elapsed_sec, handshake_only ? "handshakes" : "requests",
         completed(now, handshake_only));
  if (total != 0) append(line, "/%" PRIu64, total);
  append(line,
         "  goodput %.3f Gbps  handshakes %.1f/s  errors %" PRIu64 "  p50 %.3f ms  p99 %.3f ms",
         goodput_gbps(now.bytes_received - before.bytes_received, interval_sec),
         interval_sec > 0 ? static_cast<double>(now.handshakes - before.handshakes) / interval_sec
                          : 0.0,
         now.error_total(), ms(latency.percentile(50)), ms(latency.percentile(99)));
  return line;
}

std::string format_report_text(const LoadSummary& s) {
  const LoadCounters& c = s.counters;
  std::string text;
  append(text,
         "quicload: %s, %" PRIu64 " connections x %" PRIu64 " streams on %" PRIu64 " core%s (%s)\n",
         s.mode.c_str(), s.connections, s.streams, s.cores, s.cores == 1 ? "" : "s",
         s.backend.c_str());
  append(text, "  duration       %.3f s\n", s.duration_sec);
  append(text,
         "  handshakes     %" PRIu64 " ok, %" PRIu64 " failed (%.1f/s); resumed %" PRIu64
         ", 0-RTT offered %" PRIu64 ", accepted %" PRIu64 "\n",
         c.handshakes, c.handshakes_failed,
         s.duration_sec > 0 ? static_cast<double>(c.handshakes) / s.duration_sec : 0.0, c.resumed,
         c.zero_rtt_offered, c.zero_rtt_accepted);
  if (s.mode == "requests") {
    append(text,
           "  requests       %" PRIu64 " ok, %" PRIu64 " failed (%" PRIu64 " never sent), %" PRIu64
           " abandoned\n",
           c.requests_ok, c.requests_failed, c.requests_not_sent, c.requests_abandoned);
  }
  if (c.goaways != 0 || c.connections_refused_after_goaway != 0) {
    append(text,
           "  goaway         %" PRIu64 " connections retired, %" PRIu64
           " requests sent again, %" PRIu64 " new connections refused while draining\n",
           c.goaways, c.requests_retried_after_goaway, c.connections_refused_after_goaway);
  }
  append(text, "  source ports   %" PRIu64 "\n", s.source_ports);
  if (s.mode == "idle") {
    append(text,
           "  idle           %" PRIu64
           " connections open once all were established (%.3f s), "
           "held %.3f s\n",
           c.idle_connections, s.idle_established_sec, s.idle_sec);
  }
  append(text, "  bytes          %" PRIu64 " received, %" PRIu64 " sent; goodput %.3f Gbps\n",
         c.bytes_received, c.bytes_sent, goodput_gbps(c.bytes_received, s.duration_sec));
  append(
      text, "  %-14s p50 %.3f ms, p99 %.3f ms, max %.3f ms, mean %.3f ms (%" PRIu64 " samples)\n",
      s.mode == "requests" ? "latency" : "handshake time", ms(s.latency.percentile(50)),
      ms(s.latency.percentile(99)), ms(s.latency.max()), s.latency.mean() / 1e6, s.latency.count());
  if (s.mode == "requests" && s.handshake.count() != 0) {
    append(text, "  handshake time p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           ms(s.handshake.percentile(50)), ms(s.handshake.percentile(99)), ms(s.handshake.max()));
  }
  text += "  errors        ";
  for (size_t i = 0; i < kErrorKinds; ++i) {
    append(text, " %s %" PRIu64 "%s", error_key(static_cast<ErrorKind>(i)), c.errors[i],
           i + 1 < kErrorKinds ? "," : "\n");
  }
  return text;
}

std::string format_report_json(const LoadSummary& s) {
  const LoadCounters& c = s.counters;
  std::string json = "{";
  auto number = [&](const char* key, uint64_t value) {
    append(json, "\"%s\":%" PRIu64 ",", key, value);
  };
  auto real = [&](const char* key, double value, const char* format) {
    append(json, "\"%s\":", key);
    append(json, format, value);
    json += ',';
  };
  append(json, "\"mode\":\"%s\",\"backend\":\"%s\",", s.mode.c_str(), s.backend.c_str());
  real("duration_sec", s.duration_sec, "%.6f");
  number("connections", s.connections);
  number("streams", s.streams);
  number("cores", s.cores);
  number("connections_opened", c.connections_opened);
  number("handshakes", c.handshakes);
  number("handshakes_failed", c.handshakes_failed);
  real("handshakes_per_sec",
       s.duration_sec > 0 ? static_cast<double>(c.handshakes) / s.duration_sec : 0.0, "%.3f");
  number("resumed", c.resumed);
  number("zero_rtt_offered", c.zero_rtt_offered);
  number("zero_rtt_accepted", c.zero_rtt_accepted);
  number("requests_ok", c.requests_ok);
  number("requests_failed", c.requests_failed);
  number("requests_not_sent", c.requests_not_sent);
  number("requests_abandoned", c.requests_abandoned);
  number("requests_retried_after_goaway", c.requests_retried_after_goaway);
  number("goaways", c.goaways);
  number("connections_refused_after_goaway", c.connections_refused_after_goaway);
  number("source_ports", s.source_ports);
  number("bytes_received", c.bytes_received);
  number("bytes_sent", c.bytes_sent);
  real("goodput_gbps", goodput_gbps(c.bytes_received, s.duration_sec), "%.6f");
  real("latency_p50_ms", ms(s.latency.percentile(50)), "%.3f");
  real("latency_p99_ms", ms(s.latency.percentile(99)), "%.3f");
  real("latency_max_ms", ms(s.latency.max()), "%.3f");
  real("latency_mean_ms", s.latency.mean() / 1e6, "%.3f");
  real("handshake_p50_ms", ms(s.handshake.percentile(50)), "%.3f");
  real("handshake_p99_ms", ms(s.handshake.percentile(99)), "%.3f");
  if (s.mode == "idle") {
    number("idle_connections", c.idle_connections);
    real("idle_established_sec", s.idle_established_sec, "%.6f");
    real("idle_sec", s.idle_sec, "%.6f");
  }
  json += "\"errors\":{";
  for (size_t i = 0; i < kErrorKinds; ++i) {
    append(json, "\"%s\":%" PRIu64 "%s", error_key(static_cast<ErrorKind>(i)), c.errors[i],
           i + 1 < kErrorKinds ? "," : "");
  }
  json += "}}";
  return json;
}

int exit_code_for(const LoadCounters& c) {
  // Connections tried and not one handshake completed (a timed run against
  // a silent server ends before the handshake timeout): a failure too.
  const bool nothing = c.connections_opened != 0 && c.handshakes == 0;
  return c.requests_failed == 0 && c.handshakes_failed == 0 && c.error_total() == 0 && !nothing ? 0
                                                                                                : 1;
}

}  // namespace dpquic::tools
