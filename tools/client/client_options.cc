#include "tools/client/client_options.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "quic/recovery/congestion_factory.h"
#include "tools/client/client_rig.h"
#include "tools/quicload/client_support.h"

namespace dpquic::interop {

namespace {

constexpr char kUsage[] =
    "usage: dpquic_client [flags] URL...\n"
    "\n"
    "Downloads every URL over one QUIC connection with dpquic's client. URLs are\n"
    "https://HOST:PORT/PATH (HTTP/3 GET) or perf://HOST:PORT/N (perf protocol, N bytes);\n"
    "all URLs name the same server and scheme. Exit 0 when every request succeeded.\n"
    "\n"
    "  --download=DIR       save each body as DIR/<last path segment>\n"
    "  --verify-synthetic   check /N bodies are the N synthetic bytes of dpquic's server\n"
    "  --ca=PEM             verify the server against these certificates (default: no check)\n"
    "  --sni=NAME           server name sent in TLS (default localhost)\n"
    "  --version=1|2        QUIC version to start with (default 1); after Version\n"
    "                       Negotiation, one new attempt in a listed version\n"
    "  --resume             then a second connection resuming the TLS session (and\n"
    "                       using a NEW_TOKEN), from a new local port\n"
    "  --0rtt               with --resume: send the requests in 0-RTT\n"
    "  --key-update         initiate a key update once 100 kB arrived\n"
    "  --migrate            move to a new local port once 100 kB arrived\n"
    "  --timeout=SECONDS    give up on a connection after this long (default 60)\n"
    "  --cc=newreno|cubic|bbr congestion controller (default cubic)\n"
    "  --max-udp-payload=N  largest datagram to send, 1200..16383 (default 16383): the\n"
    "                       ceiling of path MTU discovery from 1452; 1452 turns it off\n"
    "  --help               this text\n"
    "\n"
    "SSLKEYLOGFILE, when set, names a file TLS secrets are appended to.\n";

bool parse_url(std::string_view url, ClientOptions& options, std::string& error) {
  std::string reason;
  const auto parsed = tools::parse_url(url, reason);
  if (!parsed) {
    error = "dpquic_client: " + std::string(url) + ": " + reason;
    return false;
  }
  const bool perf = parsed->scheme == tools::UrlScheme::kPerf;
  if (!options.targets.empty() && (parsed->server != options.server || perf != options.perf)) {
    error = "dpquic_client: all URLs must name the same server and scheme";
    return false;
  }
  options.server = parsed->server;
  options.perf = perf;
  options.targets.push_back({std::string(url), parsed->authority, parsed->path});
  return true;
}

// The flags without a value; false when `arg` is none of them.
bool set_switch(std::string_view arg, ClientOptions& options) {
  if (arg == "--verify-synthetic") {
    options.verify_synthetic = true;
  } else if (arg == "--resume") {
    options.resume = true;
  } else if (arg == "--0rtt") {
    options.zero_rtt = true;
  } else if (arg == "--key-update") {
    options.key_update = true;
  } else if (arg == "--migrate") {
    options.migrate = true;
  } else {
    return false;
  }
  return true;
}

// The --name=value flags; false with `error` set for an unknown flag or a
// bad value.
bool set_valued_flag(std::string_view arg, ClientOptions& options, std::string& error) {
  const auto [flag, value] = split_flag(arg);
  uint64_t n = 0;
  if (flag == "--download") {
    options.download_dir = value;
  } else if (flag == "--ca") {
    options.ca_file = value;
  } else if (flag == "--sni") {
    options.server_name = value;
  } else if (flag == "--version") {
    if (value == "1")
      options.version = 0x00000001;
    else if (value == "2")
      options.version = 0x6b3343cf;
    else {
      error = "dpquic_client: --version=" + std::string(value) + ": expected 1 or 2";
      return false;
    }
  } else if (flag == "--timeout") {
    if (!parse_number(value, 1, 3600, n)) {
      error = "dpquic_client: --timeout=" + std::string(value) + ": expected 1..3600 seconds";
      return false;
    }
    options.timeout = n * kSecond;
  } else if (flag == "--max-udp-payload") {
    if (!parse_number(value, 1200, 16383, n)) {
      error = "dpquic_client: --max-udp-payload=" + std::string(value) + ": expected 1200..16383";
      return false;
    }
    options.max_udp_payload = n;
  } else if (flag == "--cc") {
    const auto algorithm = recovery::parse_congestion_control(value);
    if (!algorithm.has_value()) {
      error = "dpquic_client: --cc=" + std::string(value) + ": expected " +
              recovery::kCongestionControlNames;
      return false;
    }
    options.congestion_control = *algorithm;
  } else {
    error = "dpquic_client: unknown flag " + std::string(flag) + " (see --help)";
    return false;
  }
  return true;
}

}  // namespace

const char* client_usage() { return kUsage; }

std::optional<ClientOptions> parse_client_options(int argc, char** argv, std::string& error) {
  ClientOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    } else if (!arg.starts_with("--")) {
      if (!parse_url(arg, options, error)) return std::nullopt;
    } else if (!set_switch(arg, options)) {
      if (!set_valued_flag(arg, options, error)) return std::nullopt;
    }
  }
  if (options.targets.empty()) {
    error = "dpquic_client: no URL given (see --help)";
    return std::nullopt;
  }
  // The address the kernel routes the server from (loopback for a loopback
  // server; a namespace's own address behind a test's load balancer).
  try {
    options.local = tools::local_address_for(options.server);
  } catch (const std::runtime_error& e) {
    error = std::string("dpquic_client: ") + e.what();
    return std::nullopt;
  }
  return options;
}

}  // namespace dpquic::interop
