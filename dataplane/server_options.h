#pragma once
// The dataplane binary's command line: every flag, its default and its
// check. A bad value is a one-line error (the binary exits 2 with it).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/endpoint/retry_policy.h"
#include "quic/recovery/congestion_controller.h"

namespace dpquic::dataplane {

enum class Backend : uint8_t { kUdp, kDpdk };
enum class PollMode : uint8_t { kEpoll, kBusy };

// ADDR/PREFIX (the port of `address` is unused).
struct IpPrefix {
  conn::SocketAddress address;
  uint8_t prefix_length = 0;
};

// Parses "10.0.0.2/24", "fd00::2/64" or a bare address (a host prefix);
// nullopt with `error` set otherwise.
std::optional<IpPrefix> parse_ip_prefix(std::string_view text, std::string& error);

struct ServerOptions {
  Backend backend = Backend::kUdp;
  std::vector<conn::SocketAddress> listen;  // empty: the defaults
  bool listen_is_default = true;
  std::string certificate_file;
  std::string key_file;
  std::string root;  // empty: synthetic responses only
  size_t cores = 0;  // 0: the online cores
  endpoint::RetryMode retry = endpoint::RetryMode::kAuto;
  size_t max_connections = 4096;  // per server, split over the shards
  // Unvalidated half-open connections per source prefix and core; 0: none.
  size_t max_half_open_per_address = 32;
  recovery::CongestionControlAlgorithm congestion_control =
      recovery::CongestionControlAlgorithm::kCubic;
  bool gso = true;
  // The largest UDP payload we send: the ceiling of PMTU discovery
  // (datagrams start at 1452 and grow to what the path carries); 1452 turns
  // discovery off. What we accept is always 65527: the sockets take any size.
  size_t max_udp_payload = 16383;
  PollMode poll = PollMode::kEpoll;
  std::string qlog_dir;
  uint64_t qlog_max_mb = 1024;  // all qlog files together, MiB
  uint32_t stats_seconds = 0;   // 0: no stats lines
  // The bound of a graceful stop (SIGTERM/SIGINT); 0: close at once.
  uint32_t drain_timeout_seconds = 30;
  std::string eal;
  // DPDK backend addressing (the kernel owns addresses on the UDP backend).
  std::optional<IpPrefix> ip;
  std::optional<IpPrefix> ip6;
  std::optional<conn::SocketAddress> gateway;
  // Where GET /metrics answers (Prometheus text over HTTP); none: nothing
  // listens.
  std::optional<conn::SocketAddress> metrics;
  // Fleet: the QUIC-LB server ID in every CID we issue (empty: none), the
  // host-secret files (the first derives the keys, the rest still validate
  // tokens; empty: random keys) and the session-ticket key files (nginx
  // formats; the first encrypts; empty: a random key).
  std::vector<uint8_t> server_id;
  std::vector<std::string> host_key_files;
  std::vector<std::string> ticket_key_files;
  bool help = false;
};

// The usage text printed by --help.
const char* server_usage();

// Parses argv; nullopt with `error` set (one line, no trailing newline) on
// a bad flag or value. Accepts `--flag=value` and `--flag value`.
std::optional<ServerOptions> parse_server_options(int argc, char** argv, std::string& error);

}  // namespace dpquic::dataplane
