#pragma once
// Command line of the impairment proxy. Every impairment flag takes a
// direction suffix: --loss=2% sets both directions, --loss-up (client to
// server) or --loss-down (server to client) one of them; a later flag
// overrides an earlier one.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "tools/impair/impaired_link.h"

namespace dpquic::impair {

struct ImpairOptions {
  conn::SocketAddress listen;
  conn::SocketAddress server;
  uint64_t seed = 1;
  Duration duration = 60 * kSecond;
  uint64_t max_packets = 0;     // datagrams received in all; 0: no limit
  Duration stats_interval = 0;  // 0: counters only at exit
  Duration rebind_every = 0;    // 0: never
  size_t max_clients = 16;
  LinkConfig up;    // client -> server
  LinkConfig down;  // server -> client
  bool help = false;
};

inline constexpr Duration kMaxDuration = 3600 * kSecond;

// Parses argv[1..]; on a bad or missing flag returns nullopt and sets
// `error` to one line naming the flag.
std::optional<ImpairOptions> parse_impair_options(const std::vector<std::string>& args,
                                                  std::string& error);

std::string impair_usage();

// "2%", "0.02" -> 0.02; nullopt unless in [0, 1].
std::optional<double> parse_probability(std::string_view text);
// "250ms", "2s", "1.5s", "500us", "10ns"; a bare number is in `bare_unit`.
std::optional<Duration> parse_duration(std::string_view text, Duration bare_unit);
// "20M", "20Mbit", "500kbit/s", "1G", "1000000" -> bits per second.
std::optional<uint64_t> parse_rate(std::string_view text);
// "64K", "2M" (binary multiples), "1500" -> bytes.
std::optional<uint64_t> parse_bytes(std::string_view text);

// True for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z.
bool is_loopback(const conn::SocketAddress& address);

}  // namespace dpquic::impair
