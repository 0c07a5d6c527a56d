#pragma once
// The flood tool's command line: every flag, its default and its bound. A
// bad flag or value is a one-line error (the tool exits 2 with it).

#include <cstdint>
#include <optional>
#include <string>

#include "quic/conn/socket_address.h"

namespace dpquic::flood {

enum class FloodKind : uint8_t { kValid, kGarbage };

// How the --sources sockets are bound: all to the loopback address of the
// target's family with port 0, or (IPv4 only) each to its own address in
// 127/8, so the server sees that many distinct source addresses.
enum class SourceAddresses : uint8_t { kSame, kDistinct };

inline constexpr uint64_t kMaxCount = 10'000'000;
inline constexpr uint64_t kMaxDurationSeconds = 600;
inline constexpr uint64_t kMaxRate = 10'000'000;
// Each source is one socket (one file descriptor).
inline constexpr uint64_t kMaxSources = 16'384;
inline constexpr uint64_t kMaxDrainMs = 10'000;

struct FloodOptions {
  conn::SocketAddress target;     // loopback only: 127/8 or ::1
  uint64_t count = 0;             // required
  uint64_t duration_seconds = 0;  // required
  uint64_t rate = 0;              // packets per second; 0: as fast as possible
  uint64_t sources = 1;
  SourceAddresses source_addresses = SourceAddresses::kSame;
  FloodKind kind = FloodKind::kValid;
  uint64_t drain_ms = 500;  // replies are still counted this long after the last send
  bool help = false;
};

// The usage text printed by --help.
const char* flood_usage();

// True for 127.0.0.0/8 and ::1: the only destinations the tool sends to.
bool is_loopback(const conn::SocketAddress& address);

// Parses argv; nullopt with `error` set (one line, no trailing newline) on
// a bad, missing or out-of-range flag. Accepts `--flag=value` only.
std::optional<FloodOptions> parse_flood_options(int argc, char** argv, std::string& error);

}  // namespace dpquic::flood
