#include "tools/impair/impair_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::impair {
namespace {

// A whole-string decimal number (no sign, no exponent, no hex).
std::optional<double> parse_number(std::string_view text) {
  if (text.empty() || text.size() > 40) return std::nullopt;
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '.') {
      return std::nullopt;
    }
  }
  if (!digit) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

bool strip_suffix(std::string_view& text, std::string_view suffix) {
  if (text.size() < suffix.size() || text.substr(text.size() - suffix.size()) != suffix) {
    return false;
  }
  text.remove_suffix(suffix.size());
  return true;
}

// Splits "a,b,c" into at most `max` parts.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

// The flags that set one LinkConfig field from its text; false when the
// text is bad.
using LinkSetter = std::function<bool(LinkConfig&, std::string_view)>;

bool set_probability(double& field, std::string_view text) {
  const std::optional<double> p = parse_probability(text);
  if (!p) return false;
  field = *p;
  return true;
}

bool set_duration(Duration& field, std::string_view text) {
  const std::optional<Duration> d = parse_duration(text, kMillisecond);
  if (!d || *d > kMaxDuration) return false;
  field = *d;
  return true;
}

bool set_burst_loss(LinkConfig& config, std::string_view text) {
  const std::vector<std::string_view> parts = split(text, ',');
  if (parts.size() < 2 || parts.size() > 3) return false;
  double enter, exit, in_bad = 1;
  if (!set_probability(enter, parts[0]) || !set_probability(exit, parts[1])) return false;
  if (parts.size() == 3 && !set_probability(in_bad, parts[2])) return false;
  if (enter > 0 && exit == 0) return false;  // would stay bad for ever
  config.burst_enter = enter;
  config.burst_exit = exit;
  config.burst_loss_in_bad = in_bad;
  return true;
}

bool set_reorder(LinkConfig& config, std::string_view text) {
  const std::vector<std::string_view> parts = split(text, ',');
  if (parts.empty() || parts.size() > 2) return false;
  double p;
  if (!set_probability(p, parts[0])) return false;
  uint32_t packets = 3;
  Duration delay = 0;
  if (parts.size() == 2) {
    const std::optional<uint64_t> n = parse_count(parts[1]);
    if (n) {
      if (*n == 0 || *n > 10000) return false;
      packets = static_cast<uint32_t>(*n);
    } else {
      // A hold time needs its unit, so "3" (packets) is never read as 3 ms.
      if (parts[1].find_first_not_of("0123456789.") == std::string_view::npos) return false;
      if (!set_duration(delay, parts[1]) || delay == 0) return false;
    }
  }
  config.reorder = p;
  config.reorder_packets = packets;
  config.reorder_delay = delay;
  return true;
}

bool set_rate(LinkConfig& config, std::string_view text) {
  const std::optional<uint64_t> rate = parse_rate(text);
  if (!rate || *rate < 8000 || *rate > 1'000'000'000'000ull) return false;
  config.rate_bits_per_second = *rate;
  return true;
}

// --rate-burst and --queue: 1 byte to 1 GiB.
bool set_byte_count(uint64_t& field, std::string_view text) {
  const std::optional<uint64_t> bytes = parse_bytes(text);
  if (!bytes || *bytes == 0 || *bytes > (1ull << 30)) return false;
  field = *bytes;
  return true;
}

bool set_blackhole(LinkConfig& config, std::string_view text) {
  const std::vector<std::string_view> parts = split(text, '/');
  if (parts.size() != 2) return false;
  Duration on, off;
  if (!set_duration(on, parts[0]) || !set_duration(off, parts[1]) || on == 0) return false;
  config.blackhole_on = on;
  config.blackhole_off = off;
  return true;
}

std::optional<LinkSetter> link_setter(std::string_view name) {
  if (name == "loss") {
    return [](LinkConfig& c, std::string_view t) { return set_probability(c.loss, t); };
  }
  if (name == "duplicate") {
    return [](LinkConfig& c, std::string_view t) { return set_probability(c.duplicate, t); };
  }
  if (name == "corrupt") {
    return [](LinkConfig& c, std::string_view t) { return set_probability(c.corrupt, t); };
  }
  if (name == "delay") {
    return [](LinkConfig& c, std::string_view t) { return set_duration(c.delay, t); };
  }
  if (name == "jitter") {
    return [](LinkConfig& c, std::string_view t) { return set_duration(c.jitter, t); };
  }
  if (name == "burst-loss") {
    return [](LinkConfig& c, std::string_view t) { return set_burst_loss(c, t); };
  }
  if (name == "reorder") {
    return [](LinkConfig& c, std::string_view t) { return set_reorder(c, t); };
  }
  if (name == "rate") {
    return [](LinkConfig& c, std::string_view t) { return set_rate(c, t); };
  }
  if (name == "rate-burst") {
    return [](LinkConfig& c, std::string_view t) { return set_byte_count(c.rate_burst_bytes, t); };
  }
  if (name == "queue") {
    return [](LinkConfig& c, std::string_view t) { return set_byte_count(c.queue_bytes, t); };
  }
  if (name == "blackhole") {
    return [](LinkConfig& c, std::string_view t) { return set_blackhole(c, t); };
  }
  return std::nullopt;
}

std::optional<Duration> parse_seconds(std::string_view text) {
  return parse_duration(text, kSecond);
}

// The flags after the --help and --name=value checks, one at a time; each
// returns false with `error` set when the flag or its value is bad.
struct Parser {
  ImpairOptions& options;
  std::string& error;
  bool have_listen = false;
  bool have_server = false;

  bool fail(std::string_view flag, std::string_view why) {
    error = "impair: " + std::string(flag) + ": " + std::string(why);
    return false;
  }

  // --listen or --server.
  bool set_address(std::string_view name, std::string_view value, const std::string& flag) {
    // parse_host_port takes ports 1..65535; --listen also takes 0 (any).
    const bool any_port =
        name == "listen" && value.size() > 2 && value.substr(value.size() - 2) == ":0";
    const std::string text =
        any_port ? std::string(value.substr(0, value.size() - 1)) + "1" : std::string(value);
    std::string why;
    std::optional<conn::SocketAddress> address = dataplane::parse_host_port(text, why);
    if (!address) return fail(flag, why);
    if (any_port) address->port = 0;
    if (!is_loopback(*address)) {
      return fail(flag, "only loopback addresses are allowed (127.0.0.0/8 or ::1)");
    }
    (name == "listen" ? options.listen : options.server) = *address;
    (name == "listen" ? have_listen : have_server) = true;
    return true;
  }

  // --duration, --stats or --rebind-every.
  bool set_seconds(std::string_view name, std::string_view value, const std::string& flag) {
    const std::optional<Duration> d = parse_seconds(value);
    if (!d || *d > kMaxDuration) {
      return fail(flag, "expected seconds (e.g. 30, 1.5, 500ms), at most 3600 s");
    }
    if (name == "duration") {
      if (*d == 0) return fail(flag, "must be above 0");
      options.duration = *d;
    } else {
      (name == "stats" ? options.stats_interval : options.rebind_every) = *d;
    }
    return true;
  }

  // An impairment: NAME, NAME-up or NAME-down.
  bool set_impairment(std::string_view name, std::string_view value, const std::string& flag) {
    std::string_view base = name;
    bool up = true, down = true;
    if (strip_suffix(base, "-up")) {
      down = false;
    } else if (strip_suffix(base, "-down")) {
      up = false;
    }
    const std::optional<LinkSetter> setter = link_setter(base);
    if (!setter) return fail(flag, "unknown flag (see --help)");
    if ((up && !(*setter)(options.up, value)) || (down && !(*setter)(options.down, value))) {
      return fail(flag, "bad value '" + std::string(value) + "' (see --help)");
    }
    return true;
  }

  bool apply(std::string_view name, std::string_view value) {
    const std::string flag = "--" + std::string(name);
    if (name == "listen" || name == "server") return set_address(name, value, flag);
    if (name == "seed") {
      const std::optional<uint64_t> seed = parse_count(value);
      if (!seed) return fail(flag, "expected a decimal number");
      options.seed = *seed;
      return true;
    }
    if (name == "duration" || name == "stats" || name == "rebind-every") {
      return set_seconds(name, value, flag);
    }
    if (name == "max-packets") {
      const std::optional<uint64_t> n = parse_count(value);
      if (!n) return fail(flag, "expected a decimal number");
      options.max_packets = *n;
      return true;
    }
    if (name == "max-clients") {
      const std::optional<uint64_t> n = parse_count(value);
      if (!n || *n == 0 || *n > 1024) return fail(flag, "expected 1..1024");
      options.max_clients = *n;
      return true;
    }
    return set_impairment(name, value, flag);
  }
};

}  // namespace

std::optional<double> parse_probability(std::string_view text) {
  const bool percent = strip_suffix(text, "%");
  std::optional<double> value = parse_number(text);
  if (!value) return std::nullopt;
  if (percent) *value /= 100;
  if (*value < 0 || *value > 1) return std::nullopt;
  return value;
}

std::optional<Duration> parse_duration(std::string_view text, Duration bare_unit) {
  Duration unit = bare_unit;
  if (strip_suffix(text, "ns")) {
    unit = kNanosecond;
  } else if (strip_suffix(text, "us")) {
    unit = kMicrosecond;
  } else if (strip_suffix(text, "ms")) {
    unit = kMillisecond;
  } else if (strip_suffix(text, "s")) {
    unit = kSecond;
  }
  const std::optional<double> value = parse_number(text);
  if (!value) return std::nullopt;
  const double nanos = std::round(*value * static_cast<double>(unit));
  if (nanos > 1e18) return std::nullopt;
  return static_cast<Duration>(nanos);
}

std::optional<uint64_t> parse_rate(std::string_view text) {
  if (!strip_suffix(text, "bit/s") && !strip_suffix(text, "bps")) strip_suffix(text, "bit");
  double multiplier = 1;
  if (strip_suffix(text, "k") || strip_suffix(text, "K")) {
    multiplier = 1e3;
  } else if (strip_suffix(text, "M")) {
    multiplier = 1e6;
  } else if (strip_suffix(text, "G")) {
    multiplier = 1e9;
  }
  const std::optional<double> value = parse_number(text);
  if (!value) return std::nullopt;
  const double rate = std::round(*value * multiplier);
  if (rate > 1e15) return std::nullopt;
  return static_cast<uint64_t>(rate);
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  uint64_t multiplier = 1;
  if (strip_suffix(text, "K") || strip_suffix(text, "k")) {
    multiplier = 1024;
  } else if (strip_suffix(text, "M")) {
    multiplier = 1024 * 1024;
  }
  const std::optional<uint64_t> value = parse_count(text);
  if (!value || *value > (1ull << 40)) return std::nullopt;
  return *value * multiplier;
}

bool is_loopback(const conn::SocketAddress& address) {
  if (address.family == conn::AddressFamily::kIpv4) return address.ip[0] == 127;
  if (address.family != conn::AddressFamily::kIpv6) return false;
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  bool mapped = true;
  for (size_t i = 0; i < 12; ++i) mapped = mapped && address.ip[i] == kMappedPrefix[i];
  if (mapped) return address.ip[12] == 127;
  for (size_t i = 0; i < 15; ++i) {
    if (address.ip[i] != 0) return false;
  }
  return address.ip[15] == 1;
}

std::optional<ImpairOptions> parse_impair_options(const std::vector<std::string>& args,
                                                  std::string& error) {
  ImpairOptions options;
  Parser parser{options, error};
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (arg.rfind("--", 0) != 0) {
      parser.fail(arg, "unexpected argument (flags are --name=value)");
      return std::nullopt;
    }
    const size_t equals = arg.find('=');
    if (equals == std::string::npos) {
      parser.fail(arg, "missing '=VALUE'");
      return std::nullopt;
    }
    const std::string_view name = std::string_view(arg).substr(2, equals - 2);
    const std::string_view value = std::string_view(arg).substr(equals + 1);
    if (!parser.apply(name, value)) return std::nullopt;
  }
  if (!parser.have_listen) {
    parser.fail("--listen", "required (e.g. --listen=127.0.0.1:4434)");
    return std::nullopt;
  }
  if (!parser.have_server) {
    parser.fail("--server", "required (e.g. --server=127.0.0.1:4433)");
    return std::nullopt;
  }
  return options;
}

std::string impair_usage() {
  return R"(Usage: impair --listen=127.0.0.1:PORT --server=127.0.0.1:PORT [flags]

A UDP relay on loopback that impairs the datagrams between clients and one
server. Clients send to --listen; each client gets its own upstream socket to
--server, and replies go back to the client they belong to. Both addresses
must be loopback (127.0.0.0/8 or ::1); --listen port 0 picks a free port.

General:
  --seed=N              PRNG seed; the same seed and traffic give the same run (1)
  --duration=SECONDS    exit after this long (60; at most 3600)
  --max-packets=N       exit after receiving N datagrams in all (0: no limit)
  --stats=SECONDS       print the counters this often (0: only at exit)
  --rebind-every=SECONDS  NAT rebinding: every SECONDS each client gets a new
                        upstream socket, so the server sees it at a new port
  --max-clients=N       client flows remembered (16); others are dropped

Impairments (FLAG sets both directions, FLAG-up client->server only,
FLAG-down server->client only):
  --loss=P              drop each datagram with probability P (2% or 0.02)
  --burst-loss=PE,PX[,PB]  Gilbert-Elliott bursts: enter the bad state with
                        PE, leave it with PX, lose with PB in it (1)
  --duplicate=P         send a second copy with probability P
  --corrupt=P           flip 1-3 random bits of the payload with probability P
  --reorder=P[,N|,D]    hold a datagram back with probability P, until N later
                        datagrams went out (3; at most 100 ms), or for time D
                        (with a unit: 10ms)
  --delay=D             fixed delay (unit ns/us/ms/s; bare numbers are ms)
  --jitter=D            extra delay uniform in [0, D]
  --rate=R              token bucket rate in bit/s (20M, 500k, 1G)
  --rate-burst=BYTES    bucket depth (15000)
  --queue=BYTES         bytes allowed to wait for tokens; beyond, drop
                        (100 ms at the rate, at least 16K)
  --blackhole=ON/OFF    forward for ON, drop everything for OFF, repeating (5s/2s)

Counters per direction are printed at exit (and every --stats): received,
forwarded, dropped by cause, duplicated, corrupted, held/reordered, delayed.
SIGINT/SIGTERM stop the relay and print the counters. Exit status 0; 2 for bad
flags; 1 when a socket cannot be opened.
)";
}

}  // namespace dpquic::impair
