#pragma once
// What quicload counts and how it reports it: counters per worker (merged at
// the end), the live progress line, the final human-readable report and the
// JSON report with stable keys (documented in docs/quicload.md).

#include <array>
#include <cstdint>
#include <string>

#include "tools/quicload/latency_histogram.h"

namespace dpquic::tools {

// Why a handshake or a request failed.
enum class ErrorKind : uint8_t {
  kHandshakeTimeout,  // no handshake within --timeout (nothing answering)
  kRefused,           // the server refused the connection (CONNECTION_REFUSED)
  kReset,             // the server reset the request's stream
  kMismatch,          // a body of the wrong size, or bytes that differ
  kClosed,            // the connection closed while the request was open
  kProtocol,          // a TLS, QUIC or HTTP/3 error
  kStatus,            // an HTTP status other than 200
  kCount,
};
inline constexpr size_t kErrorKinds = static_cast<size_t>(ErrorKind::kCount);
// The JSON key of a kind: "handshake_timeout", "refused", ...
const char* error_key(ErrorKind kind);

struct LoadCounters {
  uint64_t connections_opened = 0;  // connection attempts
  uint64_t handshakes = 0;          // handshakes completed
  uint64_t handshakes_failed = 0;
  uint64_t resumed = 0;  // handshakes that resumed a session
  uint64_t zero_rtt_offered = 0;
  uint64_t zero_rtt_accepted = 0;
  uint64_t requests_ok = 0;
  // Requests that failed, plus those never sent because every connection
  // that could carry them had failed (requests_not_sent, also counted here).
  uint64_t requests_failed = 0;
  uint64_t requests_not_sent = 0;
  uint64_t requests_abandoned = 0;  // still open 5 s after --duration ran out
  // Requests a server's GOAWAY refused (not processed), sent again on
  // another connection: not failures.
  uint64_t requests_retried_after_goaway = 0;
  uint64_t goaways = 0;  // connections a GOAWAY retired
  // New connections refused (CONNECTION_REFUSED) within --timeout of a
  // GOAWAY: the server is draining; opened again, not failures.
  uint64_t connections_refused_after_goaway = 0;
  uint64_t bytes_received = 0;  // response body bytes (of every request)
  uint64_t bytes_sent = 0;      // request body bytes (perf uploads)
  // --idle: connections open when the last one was established.
  uint64_t idle_connections = 0;
  std::array<uint64_t, kErrorKinds> errors{};

  void add(const LoadCounters& other);
  uint64_t error_total() const;
  void count(ErrorKind kind) { ++errors[static_cast<size_t>(kind)]; }
};

// Everything the final report shows.
struct LoadSummary {
  std::string mode = "requests";  // or "handshakes", "idle"
  std::string backend = "udp";
  uint64_t connections = 0;  // --connections
  uint64_t streams = 0;
  uint64_t cores = 0;
  double duration_sec = 0;
  LoadCounters counters;
  // Request latency (issued -> last body byte), or the handshake time
  // (connect -> established) with --handshake-only; successes only.
  LatencyHistogram latency;
  LatencyHistogram handshake;  // connect -> established
  // --idle: start -> every connection established (the slowest worker's),
  // and how long they were then held.
  double idle_established_sec = 0;
  double idle_sec = 0;
  uint64_t source_ports = 0;  // distinct UDP source ports the connections used
};

double goodput_gbps(uint64_t bytes, double seconds);

// The live line: elapsed, completed/total (total 0: unbounded), goodput and
// handshakes per second over the last `interval_sec`, errors, p50/p99.
std::string format_progress(double elapsed_sec, double interval_sec, uint64_t total,
                            bool handshake_only, const LoadCounters& now,
                            const LoadCounters& before, const LatencyHistogram& latency);

std::string format_report_text(const LoadSummary& summary);
// One JSON object (no trailing newline). Keys are stable; see docs/quicload.md.
std::string format_report_json(const LoadSummary& summary);

// Exit status: 0 when nothing failed and some handshake completed, 1
// otherwise.
int exit_code_for(const LoadCounters& counters);

}  // namespace dpquic::tools
