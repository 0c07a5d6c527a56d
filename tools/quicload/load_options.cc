#include "tools/quicload/load_options.h"

#include <string_view>

#include "quic/recovery/congestion_factory.h"

namespace dpquic::tools {

namespace {

constexpr char kUsage[] =
    "usage: quicload [flags] URL...\n"
    "\n"
    "Loads a QUIC server with dpquic's client and reports handshakes, requests, goodput,\n"
    "latency percentiles and errors. URLs: https://HOST:PORT/PATH (HTTP/3 GET; dpquic's\n"
    "server answers /N with N synthetic bytes, which are checked) or perf://HOST:PORT/BYTES\n"
    "(perf protocol). Several URLs: requests cycle over them; all name one server and scheme.\n"
    "Exit 0 when everything succeeded, 1 when any request or handshake failed, 2 on bad usage.\n"
    "\n"
    "  --connections=N        concurrent connections (default 1)\n"
    "  --streams=N            concurrent requests per connection (default 1)\n"
    "  --requests=N           requests in all (default: one per connection); with\n"
    "                         --handshake-only, handshakes in all\n"
    "  --duration=SECONDS     instead of --requests: run this long; requests still open then\n"
    "                         may finish for 5 s more, then are abandoned (not failures)\n"
    "  --per-connection=N     requests per connection, then it closes and a new one opens\n"
    "                         (default: no limit)\n"
    "  --upload=BYTES         perf:// request body size (default 0)\n"
    "  --handshake-only       connect, complete the handshake, close (NO_ERROR), repeat;\n"
    "                         --connections handshakes in flight at once\n"
    "  --idle=SECONDS         open --connections connections and hold them all open and\n"
    "                         quiet (keep-alive PINGs every 10 s) for SECONDS after the\n"
    "                         last one is established, then close them; sends no requests\n"
    "  --connections-in-flight=N  --idle: handshakes under way at once (default 100)\n"
    "  --resume               the first connection of each core gets a ticket; later ones\n"
    "                         resume with fresh tickets (or reuse the last one)\n"
    "  --0rtt                 with --resume (implied): send requests in 0-RTT; only fresh\n"
    "                         tickets are used\n"
    "  --verify=FILE          every https:// response body must equal FILE byte for byte\n"
    "  --timeout=SECONDS      handshake timeout (default 10)\n"
    "  --cores=N              client threads (shards); connections are split over them\n"
    "                         (default 1)\n"
    "  --shared-port          every connection of a shard sends from the same UDP port\n"
    "                         (default: a port of its own per connection, as separate\n"
    "                         clients; a socket each on kernel UDP)\n"
    "  --cc=cubic|newreno|bbr congestion controller (default cubic)\n"
    "  --max-udp-payload=N    largest datagram to send, 1200..16383 (default 16383)\n"
    "  --ca=PEM               verify the server against these certificates (default: none)\n"
    "  --json=FILE            write the final report as JSON to FILE\n"
    "  --qlog-dir=DIR         one qlog file per connection in DIR\n"
    "  --no-progress          no live progress line\n"
    "  --backend=udp|dpdk     I/O (default udp: kernel sockets)\n"
    "  --eal=\"ARGS\"           dpdk: EAL arguments; client shards run on the worker lcores\n"
    "  --ip=ADDR[/PREFIX]     dpdk: our address and subnet (the server's family)\n"
    "  --gateway=ADDR         dpdk: next hop for a server off the subnet\n"
    "  --local-port=N         dpdk: the UDP port to send from with --shared-port, else the\n"
    "                         first of the connections' ports (default: chosen at start)\n"
    "  --help                 this text\n"
    "\n"
    "SSLKEYLOGFILE, when set, names a file TLS secrets are appended to.\n";

struct Parser {
  LoadOptions& options;
  std::string& error;
  bool requests_given = false;

  bool fail(std::string text) {
    error = "quicload: " + std::move(text);
    return false;
  }
  bool bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
    return fail(std::string(flag) + "=" + std::string(value) + ": expected " +
                std::string(expected));
  }
  bool number(std::string_view flag, std::string_view value, uint64_t min, uint64_t max,
              uint64_t& out) {
    if (parse_number(value, min, max, out)) return true;
    return bad_value(flag, value, std::to_string(min) + ".." + std::to_string(max));
  }

  bool url(std::string_view text) {
    std::string reason;
    const auto parsed = parse_url(text, reason);
    if (!parsed) return fail(std::string(text) + ": " + reason);
    if (!options.targets.empty() &&
        (parsed->server != options.server || parsed->scheme != options.scheme)) {
      return fail("all URLs must name the same server and scheme");
    }
    LoadTarget target{std::string(text), parsed->authority, parsed->path, std::nullopt};
    uint64_t size = 0;
    const std::string_view digits = std::string_view(parsed->path).substr(1);
    const bool numeric = parse_number(digits, 0, uint64_t{1} << 62, size);
    if (numeric) target.synthetic_size = size;
    if (parsed->scheme == UrlScheme::kPerf && !numeric) {
      return fail(std::string(text) + ": a perf URL's path is the response size in bytes");
    }
    options.scheme = parsed->scheme;
    options.server = parsed->server;
    options.server_name = parsed->host;
    options.targets.push_back(std::move(target));
    return true;
  }

  bool flag(std::string_view arg) {
    const auto [name, value] = split_flag(arg);
    uint64_t n = 0;
    if (name == "--connections") return number(name, value, 1, 100000, options.connections);
    if (name == "--streams") return number(name, value, 1, 10000, options.streams);
    if (name == "--requests") {
      requests_given = true;
      return number(name, value, 1, uint64_t{1} << 40, options.requests);
    }
    if (name == "--duration") {
      if (!parse_seconds(value, kMillisecond, 86400 * kSecond, options.duration)) {
        return bad_value(name, value, "seconds, up to 86400");
      }
      return true;
    }
    if (name == "--per-connection")
      return number(name, value, 1, uint64_t{1} << 40, options.per_connection);
    if (name == "--upload") return number(name, value, 0, uint64_t{1} << 40, options.upload);
    if (arg == "--handshake-only") return options.handshake_only = true;
    if (name == "--idle") {
      if (!parse_seconds(value, 0, 86400 * kSecond, options.idle)) {
        return bad_value(name, value, "seconds, up to 86400");
      }
      return options.idle_mode = true;
    }
    if (name == "--connections-in-flight")
      return number(name, value, 1, 100000, options.connections_in_flight);
    if (arg == "--resume") return options.resume = true;
    if (arg == "--shared-port") return options.shared_port = true;
    if (arg == "--0rtt") return options.resume = options.zero_rtt = true;
    if (name == "--verify") {
      if (value.empty()) return bad_value(name, value, "a file");
      options.verify_file = value;
      return true;
    }
    if (name == "--timeout") {
      if (!parse_seconds(value, kMillisecond, 3600 * kSecond, options.timeout)) {
        return bad_value(name, value, "seconds, up to 3600");
      }
      return true;
    }
    if (name == "--cores") return number(name, value, 1, 64, options.cores);
    if (name == "--cc") {
      const auto algorithm = recovery::parse_congestion_control(value);
      if (!algorithm.has_value()) return bad_value(name, value, recovery::kCongestionControlNames);
      options.congestion_control = *algorithm;
      return true;
    }
    if (name == "--max-udp-payload") {
      if (!number(name, value, 1200, 16383, n)) return false;
      options.max_udp_payload = n;
      return true;
    }
    if (name == "--ca") {
      if (value.empty()) return bad_value(name, value, "a PEM file");
      options.ca_file = value;
      return true;
    }
    if (name == "--json") {
      if (value.empty()) return bad_value(name, value, "a file");
      options.json_path = value;
      return true;
    }
    if (name == "--qlog-dir") {
      if (value.empty()) return bad_value(name, value, "a directory");
      options.qlog_dir = value;
      return true;
    }
    if (arg == "--no-progress") {
      options.progress = false;
      return true;
    }
    if (name == "--backend") {
      if (value == "udp") {
        options.backend = LoadBackend::kUdp;
      } else if (value == "dpdk") {
        options.backend = LoadBackend::kDpdk;
      } else {
        return bad_value(name, value, "udp or dpdk");
      }
      return true;
    }
    if (name == "--eal") {
      options.eal = value;
      return true;
    }
    if (name == "--ip") {
      std::string reason;
      options.ip = dataplane::parse_ip_prefix(value, reason);
      if (!options.ip) return fail("--ip=" + std::string(value) + ": " + reason);
      return true;
    }
    if (name == "--gateway") {
      std::string reason;
      const auto prefix = dataplane::parse_ip_prefix(value, reason);
      if (!prefix || value.find('/') != std::string_view::npos) {
        return bad_value(name, value, "an IP address");
      }
      options.gateway = prefix->address;
      return true;
    }
    if (name == "--local-port") {
      if (!number(name, value, 1, 65535, n)) return false;
      options.local_port = static_cast<uint16_t>(n);
      return true;
    }
    return fail("unknown flag " + std::string(name) + " (see --help)");
  }

  // Combinations, once everything is read.
  bool check() {
    if (options.targets.empty()) return fail("no URL given (see --help)");
    if (requests_given && options.duration != 0) {
      return fail("--requests and --duration exclude each other");
    }
    if (!requests_given && options.duration == 0) options.requests = options.connections;
    if (options.duration != 0) options.requests = 0;
    const bool perf = options.scheme == UrlScheme::kPerf;
    if (options.upload != 0 && !perf) {
      return fail("--upload applies to perf:// URLs (the h3 client sends no request bodies)");
    }
    if (!options.verify_file.empty() && perf) {
      return fail("--verify applies to https:// URLs (perf bodies are always checked)");
    }
    if (options.handshake_only &&
        (options.upload != 0 || !options.verify_file.empty() || options.per_connection != 0)) {
      return fail("--handshake-only sends no requests: drop --upload, --verify, --per-connection");
    }
    if (options.idle_mode) {
      if (requests_given || options.duration != 0 || options.handshake_only ||
          options.per_connection != 0 || options.resume || options.upload != 0 ||
          !options.verify_file.empty()) {
        return fail(
            "--idle sends no requests and runs until its connections were idle: drop "
            "--requests, --duration, --handshake-only, --per-connection, --resume, --0rtt, "
            "--upload, --verify");
      }
      options.requests = 0;
    }
    const bool dpdk = options.backend == LoadBackend::kDpdk;
    if (!dpdk && (options.ip || options.gateway || !options.eal.empty() || options.local_port)) {
      return fail("--eal, --ip, --gateway and --local-port apply to --backend=dpdk only");
    }
    if (dpdk) {
      if (!options.ip) return fail("--backend=dpdk needs --ip=ADDR/PREFIX: our own address");
      if (options.ip->address.family != options.server.family) {
        return fail("--ip and the server must be of the same address family");
      }
      if (options.gateway && options.gateway->family != options.server.family) {
        return fail("--gateway and the server must be of the same address family");
      }
    }
    return true;
  }
};

}  // namespace

const char* load_usage() { return kUsage; }

bool parse_seconds(std::string_view text, Duration min, Duration max, Duration& out) {
  const size_t dot = text.find('.');
  uint64_t whole = 0;
  if (!parse_number(text.substr(0, dot), 0, 1u << 30, whole)) return false;
  uint64_t fraction = 0;
  if (dot != std::string_view::npos) {
    const std::string_view decimals = text.substr(dot + 1);
    if (decimals.empty() || decimals.size() > 9 ||
        !parse_number(decimals, 0, 999999999, fraction)) {
      return false;
    }
    for (size_t i = decimals.size(); i < 9; ++i) fraction *= 10;
  }
  const Duration value = whole * kSecond + fraction;
  if (value < min || value > max) return false;
  out = value;
  return true;
}

std::optional<LoadOptions> parse_load_options(int argc, const char* const* argv,
                                              std::string& error) {
  LoadOptions options;
  Parser parser{options, error};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    const bool ok = arg.starts_with("--") ? parser.flag(arg) : parser.url(arg);
    if (!ok) return std::nullopt;
  }
  if (!parser.check()) return std::nullopt;
  return options;
}

}  // namespace dpquic::tools
