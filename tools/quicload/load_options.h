#pragma once
// quicload's command line: URLs, flags, their defaults and checks. A bad
// value is one line of error (quicload exits 2 with it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/server_options.h"
#include "quic/conn/socket_address.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/time.h"
#include "tools/quicload/client_support.h"

namespace dpquic::tools {

enum class LoadBackend : uint8_t { kUdp, kDpdk };

// One URL the requests cycle over.
struct LoadTarget {
  std::string url;
  std::string authority;  // HOST:PORT as written (the h3 :authority)
  std::string path;       // starts with '/'
  // perf://: the response size asked for. https:// "/N": the N synthetic
  // bytes dpquic's server answers with (length- and content-checked).
  std::optional<uint64_t> synthetic_size;
};

struct LoadOptions {
  std::vector<LoadTarget> targets;
  UrlScheme scheme = UrlScheme::kHttps;  // every URL has the same scheme and server
  conn::SocketAddress server;
  std::string server_name;  // the URL's host (IP literals are not sent as SNI)

  uint64_t connections = 1;     // concurrent connections (handshakes with handshake_only)
  uint64_t streams = 1;         // concurrent requests per connection
  uint64_t requests = 0;        // total requests or handshakes; 0 with a duration
  Duration duration = 0;        // 0: run --requests
  uint64_t per_connection = 0;  // requests per connection before a new one; 0: no limit
  uint64_t upload = 0;          // perf request body bytes
  bool handshake_only = false;
  // --idle: open every connection (at most connections_in_flight handshakes
  // at once), hold them all open and quiet for `idle` (keep-alive PINGs),
  // then close them.
  bool idle_mode = false;
  Duration idle = 0;
  uint64_t connections_in_flight = 100;
  bool resume = false;
  bool zero_rtt = false;
  LoadBackend backend = LoadBackend::kUdp;
  // Every connection of a shard sends from one UDP port (its one socket on
  // kernel UDP). By default each connection has a source port of its own,
  // so that a layer-4 balancer and conntrack see one flow per connection.
  bool shared_port = false;
  std::string eal;
  std::optional<dataplane::IpPrefix> ip;  // dpdk: our address (the server's family)
  std::optional<conn::SocketAddress> gateway;
  // dpdk: the UDP port we send from with --shared-port, else the first of
  // the connections' ports (0: chosen at start).
  uint16_t local_port = 0;
  uint64_t cores = 1;
  recovery::CongestionControlAlgorithm congestion_control =
      recovery::CongestionControlAlgorithm::kCubic;
  size_t max_udp_payload = 16383;
  std::string json_path;
  std::string qlog_dir;
  std::string verify_file;
  std::string ca_file;
  Duration timeout = 10 * kSecond;  // handshake timeout
  bool progress = true;
  bool help = false;
};

// --idle: connections send a PING after this long without sending, well
// inside common idle timeouts (dpquic's server: 30 s).
inline constexpr Duration kIdleKeepAlive = 10 * kSecond;

// In-flight requests still open this long after --duration ran out are
// abandoned (counted as such, not as failures).
inline constexpr Duration kAbandonAfter = 5 * kSecond;

const char* load_usage();

// Parses argv; nullopt with `error` set (one line, "quicload: ...") on a
// bad URL, flag or value. Names in URLs are resolved here (getaddrinfo).
std::optional<LoadOptions> parse_load_options(int argc, const char* const* argv,
                                              std::string& error);

// "2", "0.5", "1.25": seconds with up to 9 decimals, in [min, max].
bool parse_seconds(std::string_view text, Duration min, Duration max, Duration& out);

}  // namespace dpquic::tools
