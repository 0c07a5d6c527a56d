#include "tools/flood/flood_options.h"

#include <charconv>
#include <string_view>

#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::flood {

namespace {

constexpr char kUsage[] =
    "usage: flood --target=127.0.0.1:PORT --count=N --duration=SECONDS [flags]\n"
    "\n"
    "Sends QUIC v1 client Initial packets (1200-byte datagrams) to a server on this\n"
    "machine, for load tests of its stateless defences (Retry, refusals, limits).\n"
    "Stops by itself after --count packets or --duration seconds, whichever comes\n"
    "first, keeps counting replies for --drain-ms, and prints what it sent and the\n"
    "replies it received by kind (Retry, Initial/Handshake, Version Negotiation, other).\n"
    "\n"
    "  --target=HOST:PORT        the server: loopback only (127.0.0.0/8 or [::1])\n"
    "  --count=N                 packets to send, 1..10000000 (required)\n"
    "  --duration=SECONDS        time limit for sending, 1..600 (required)\n"
    "  --rate=PPS                pace to PPS packets per second, 1..10000000\n"
    "                            (default: as fast as the sockets take them)\n"
    "  --sources=N               spread the packets round-robin over N sockets,\n"
    "                            1..16384 (default 1)\n"
    "  --source-addresses=same|distinct\n"
    "                            same: every socket on the loopback address with its\n"
    "                            own port (default); distinct (IPv4 only): socket i on\n"
    "                            127.0.H.L, its own address in 127/8\n"
    "  --kind=valid|garbage      valid: correctly protected Initials with random\n"
    "                            connection IDs carrying a real TLS ClientHello, which\n"
    "                            a server must decrypt and answer (default); garbage:\n"
    "                            Initial-looking long headers with random contents\n"
    "  --drain-ms=MS             count replies this long after the last send,\n"
    "                            0..10000 (default 500)\n"
    "  --help                    this text\n"
    "\n"
    "Exit status: 0 after a run, 1 if it could not start, 2 for a bad command line.\n";

bool parse_number(std::string_view text, uint64_t min, uint64_t max, uint64_t& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= min && out <= max;
}

// One --flag=value at a time, then the checks of the whole command line;
// each returns false with `error` set (one line) when something is wrong.
struct Parser {
  FloodOptions& options;
  std::string& error;
  bool have_target = false;
  bool have_count = false;
  bool have_duration = false;

  bool bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
    error = std::string(flag) + ": bad value '" + std::string(value) + "' (expected " +
            std::string(expected) + ")";
    return false;
  }

  bool set_target(std::string_view flag, std::string_view value) {
    std::string reason;
    const auto address = dataplane::parse_host_port(value, reason);
    if (!address) return bad_value(flag, value, "HOST:PORT: " + reason);
    if (!is_loopback(*address)) {
      error = "--target: " + std::string(value) +
              " is not a loopback address (only 127.0.0.0/8 and [::1] are allowed)";
      return false;
    }
    options.target = *address;
    have_target = true;
    return true;
  }

  // --source-addresses and --kind: one of two words each.
  bool set_choice(std::string_view flag, std::string_view value) {
    if (flag == "--source-addresses") {
      if (value == "same") {
        options.source_addresses = SourceAddresses::kSame;
      } else if (value == "distinct") {
        options.source_addresses = SourceAddresses::kDistinct;
      } else {
        return bad_value(flag, value, "same or distinct");
      }
    } else if (value == "valid") {
      options.kind = FloodKind::kValid;
    } else if (value == "garbage") {
      options.kind = FloodKind::kGarbage;
    } else {
      return bad_value(flag, value, "valid or garbage");
    }
    return true;
  }

  bool apply(std::string_view flag, std::string_view value) {
    if (flag == "--target") return set_target(flag, value);
    if (flag == "--count") {
      if (!parse_number(value, 1, kMaxCount, options.count)) {
        return bad_value(flag, value, "1..10000000");
      }
      have_count = true;
    } else if (flag == "--duration") {
      if (!parse_number(value, 1, kMaxDurationSeconds, options.duration_seconds)) {
        return bad_value(flag, value, "1..600 seconds");
      }
      have_duration = true;
    } else if (flag == "--rate") {
      if (!parse_number(value, 1, kMaxRate, options.rate)) {
        return bad_value(flag, value, "1..10000000");
      }
    } else if (flag == "--sources") {
      if (!parse_number(value, 1, kMaxSources, options.sources)) {
        return bad_value(flag, value, "1..16384");
      }
    } else if (flag == "--source-addresses" || flag == "--kind") {
      return set_choice(flag, value);
    } else if (flag == "--drain-ms") {
      if (!parse_number(value, 0, kMaxDrainMs, options.drain_ms)) {
        return bad_value(flag, value, "0..10000");
      }
    } else {
      error = "unknown flag '" + std::string(flag) + "' (see --help)";
      return false;
    }
    return true;
  }

  bool check_complete() {
    if (!have_target) {
      error = "--target=HOST:PORT is required";
    } else if (!have_count) {
      error = "--count=N is required";
    } else if (!have_duration) {
      error = "--duration=SECONDS is required";
    } else if (options.source_addresses == SourceAddresses::kDistinct &&
               options.target.family != conn::AddressFamily::kIpv4) {
      error = "--source-addresses=distinct needs an IPv4 target";
    } else {
      return true;
    }
    return false;
  }
};

}  // namespace

const char* flood_usage() { return kUsage; }

bool is_loopback(const conn::SocketAddress& address) {
  if (address.family == conn::AddressFamily::kIpv4) return address.ip[0] == 127;
  if (address.family == conn::AddressFamily::kIpv6) {
    for (size_t i = 0; i < 15; ++i) {
      if (address.ip[i] != 0) return false;
    }
    return address.ip[15] == 1;
  }
  return false;
}

std::optional<FloodOptions> parse_flood_options(int argc, char** argv, std::string& error) {
  FloodOptions options;
  Parser parser{options, error};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    const size_t equals = arg.find('=');
    if (arg.substr(0, 2) != "--" || equals == std::string_view::npos) {
      error = "unknown argument '" + std::string(arg) + "' (flags are --name=value; see --help)";
      return std::nullopt;
    }
    if (!parser.apply(arg.substr(0, equals), arg.substr(equals + 1))) return std::nullopt;
  }
  if (!parser.check_complete()) return std::nullopt;
  return options;
}

}  // namespace dpquic::flood
