#include "dataplane/server_options.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string_view>

#include "crypto/host_keys.h"
#include "crypto/ticket_keys.h"
#include "dataplane/udp/socket_address_conv.h"
#include "quic/recovery/congestion_factory.h"

namespace dpquic::dataplane {

namespace {

constexpr char kUsage[] =
    "usage: dataplane [flags]\n"
    "\n"
    "Terminates QUIC (RFC 9000/9001/9002) and serves HTTP/3 (ALPN h3) and the perf\n"
    "protocol (ALPN perf). Without flags: kernel UDP on 127.0.0.1:4433 and [::1]:4433,\n"
    "a self-signed ECDSA P-256 certificate, synthetic responses (GET /<N> returns N bytes).\n"
    "\n"
    "  --backend=udp|dpdk        I/O backend (default udp). dpdk: poll-mode shards on the\n"
    "                            EAL worker lcores of --eal (the main lcore supervises),\n"
    "                            DPDK port 0, addresses from --ip/--ip6; only the ports\n"
    "                            of --listen apply; --poll and --gso do not\n"
    "  --listen=HOST:PORT        address to serve on; repeatable; IPv4 or [IPv6]\n"
    "                            (default 127.0.0.1:4433 and [::1]:4433)\n"
    "  --cert=PEM --key=PEM      certificate chain and private key (default: a fresh\n"
    "                            self-signed certificate; its SHA-256 fingerprint is printed)\n"
    "  --root=DIR                serve files under DIR (paths out of DIR get 404)\n"
    "  --cores=N                 shards, one per core (default: the online cores; dpdk:\n"
    "                            the worker lcores)\n"
    "  --poll=epoll|busy         wait in epoll, or spin on the sockets (default epoll)\n"
    "  --retry=auto|always|never address validation with Retry (default auto: under load)\n"
    "  --max-connections=N       connections the server holds at once (default 4096)\n"
    "  --max-half-open-per-address=N\n"
    "                            handshakes from one source /32 (IPv4) or /64 (IPv6) whose\n"
    "                            address is not validated yet, per core; beyond it Initials\n"
    "                            get Retry (with --retry=never: CONNECTION_REFUSED)\n"
    "                            (default 32; 0: no bound)\n"
    "  --cc=newreno|cubic|bbr    congestion controller (default cubic)\n"
    "  --gso=on|off              UDP segmentation offload (default on)\n"
    "  --max-udp-payload=N       largest datagram to send, 1200..16383 (default 16383):\n"
    "                            the ceiling of path MTU discovery, which starts at 1452\n"
    "                            (RFC 8899); 1452 or less turns discovery off\n"
    "  --qlog-dir=DIR            write one qlog (JSON-SEQ) per connection into DIR\n"
    "  --qlog-max-mb=MIB         bound of all qlog files together; when used up, no more\n"
    "                            qlog is written (default 1024)\n"
    "  --stats=SECONDS           print a summary line every SECONDS (default off)\n"
    "  --metrics=HOST:PORT       serve Prometheus metrics at http://HOST:PORT/metrics\n"
    "                            (TCP; IPv4 or [IPv6]; default: off)\n"
    "  --drain-timeout=SECONDS   bound of the graceful stop on SIGTERM/SIGINT (default 30;\n"
    "                            0: close every connection at once)\n"
    "  --eal=\"ARGS\"              DPDK EAL arguments (with --backend=dpdk), e.g.\n"
    "                            \"-a 0000:3b:00.0 -l 0-3\" or, without a NIC,\n"
    "                            \"--no-huge --no-pci --no-shconf --vdev=net_tap0,iface=dpq0\"\n"
    "  --ip=ADDR[/PREFIX]        the engine's IPv4 address and subnet (with --backend=dpdk)\n"
    "  --ip6=ADDR[/PREFIX]       the engine's IPv6 address and subnet (with --backend=dpdk)\n"
    "  --gateway=ADDR            next hop for peers off the subnet (with --backend=dpdk)\n"
    "  --server-id=HEX           1..8 bytes (2..16 hex digits) written after the first\n"
    "                            octet of every connection ID we issue (QUIC-LB plaintext\n"
    "                            layout), for a load balancer to route on (default: none)\n"
    "  --host-key=FILE           a secret of at least 32 bytes shared by every host of a\n"
    "                            fleet; the stateless-reset and address-token keys are\n"
    "                            derived from the first; tokens made under the others are\n"
    "                            still accepted (key rotation); repeatable, at most 4\n"
    "                            (default: random keys at start)\n"
    "  --ticket-key=FILE         a TLS session-ticket key in nginx's ssl_session_ticket_key\n"
    "                            format (48 or 80 bytes); the first encrypts new tickets,\n"
    "                            all decrypt; repeatable, at most 8 (default: a random key)\n"
    "  --help                    this text\n"
    "\n"
    "SSLKEYLOGFILE, when set, names a file TLS secrets are appended to.\n"
    "SIGTERM or SIGINT stops gracefully: new connections are refused, HTTP/3\n"
    "connections get GOAWAY, requests already accepted finish, then every connection\n"
    "is closed (H3_NO_ERROR, NO_ERROR) and the server exits 0, within --drain-timeout.\n"
    "A second signal closes every connection at once.\n"
    "docs/fleet.md: several hosts behind a load balancer.\n";

bool parse_count(std::string_view text, uint64_t min, uint64_t max, uint64_t& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= min && out <= max;
}

// Our CIDs are 16 bytes: first octet, server ID, core byte and at least
// 4 nonce bytes leave room for 10, of which the flag takes 1..8.
constexpr size_t kMaxServerIdLength = 8;
constexpr size_t kMaxHostKeyFiles = crypto::kMaxHostSecrets;
constexpr size_t kMaxTicketKeyFiles = crypto::kMaxTicketKeys;

bool parse_hex(std::string_view text, std::vector<uint8_t>& out) {
  out.clear();
  if (text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    uint8_t byte = 0;
    auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + i + 2, byte, 16);
    if (ec != std::errc() || ptr != text.data() + i + 2) return false;
    out.push_back(byte);
  }
  return true;
}

struct Parser {
  ServerOptions options;
  std::string& error;

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }
  bool bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
    return fail("dataplane: " + std::string(flag) + "=" + std::string(value) + ": expected " +
                std::string(expected));
  }

  bool apply(std::string_view flag, std::string_view value) {
    uint64_t n = 0;
    if (flag == "--backend") {
      if (value == "udp")
        options.backend = Backend::kUdp;
      else if (value == "dpdk")
        options.backend = Backend::kDpdk;
      else
        return bad_value(flag, value, "udp or dpdk");
    } else if (flag == "--listen") {
      std::string reason;
      auto address = parse_host_port(value, reason);
      if (!address) return fail("dataplane: --listen=" + std::string(value) + ": " + reason);
      if (options.listen_is_default) options.listen.clear();
      options.listen_is_default = false;
      options.listen.push_back(*address);
    } else if (flag == "--metrics") {
      std::string reason;
      auto address = parse_host_port(value, reason);
      if (!address) return fail("dataplane: --metrics=" + std::string(value) + ": " + reason);
      options.metrics = *address;
    } else if (flag == "--cert") {
      options.certificate_file = value;
    } else if (flag == "--key") {
      options.key_file = value;
    } else if (flag == "--root") {
      options.root = value;
    } else if (flag == "--cores") {
      const long online = sysconf(_SC_NPROCESSORS_ONLN);
      if (!parse_count(value, 1, 255, n))
        return bad_value(flag, value, "a number of cores, 1..255");
      if (online > 0 && n > static_cast<uint64_t>(online)) {
        return fail("dataplane: --cores=" + std::string(value) + ": this machine has " +
                    std::to_string(online) + " online cores");
      }
      options.cores = n;
    } else if (flag == "--poll") {
      if (value == "epoll")
        options.poll = PollMode::kEpoll;
      else if (value == "busy")
        options.poll = PollMode::kBusy;
      else
        return bad_value(flag, value, "epoll or busy");
    } else if (flag == "--retry") {
      if (value == "auto")
        options.retry = endpoint::RetryMode::kAuto;
      else if (value == "always")
        options.retry = endpoint::RetryMode::kAlways;
      else if (value == "never")
        options.retry = endpoint::RetryMode::kNever;
      else
        return bad_value(flag, value, "auto, always or never");
    } else if (flag == "--max-connections") {
      if (!parse_count(value, 1, 1u << 22, n)) return bad_value(flag, value, "1..4194304");
      options.max_connections = n;
    } else if (flag == "--max-half-open-per-address") {
      if (!parse_count(value, 0, 1u << 22, n)) return bad_value(flag, value, "0..4194304");
      options.max_half_open_per_address = n;
    } else if (flag == "--cc") {
      const auto algorithm = recovery::parse_congestion_control(value);
      if (!algorithm.has_value()) return bad_value(flag, value, recovery::kCongestionControlNames);
      options.congestion_control = *algorithm;
    } else if (flag == "--gso") {
      if (value == "on")
        options.gso = true;
      else if (value == "off")
        options.gso = false;
      else
        return bad_value(flag, value, "on or off");
    } else if (flag == "--max-udp-payload") {
      if (!parse_count(value, 1200, 16383, n)) return bad_value(flag, value, "1200..16383");
      options.max_udp_payload = n;
    } else if (flag == "--qlog-dir") {
      if (value.empty()) return bad_value(flag, value, "a directory");
      options.qlog_dir = value;
    } else if (flag == "--qlog-max-mb") {
      if (!parse_count(value, 1, uint64_t{1} << 20, n)) return bad_value(flag, value, "1..1048576");
      options.qlog_max_mb = n;
    } else if (flag == "--stats") {
      if (!parse_count(value, 1, 86400, n)) return bad_value(flag, value, "seconds, 1..86400");
      options.stats_seconds = static_cast<uint32_t>(n);
    } else if (flag == "--drain-timeout") {
      if (!parse_count(value, 0, 86400, n)) return bad_value(flag, value, "seconds, 0..86400");
      options.drain_timeout_seconds = static_cast<uint32_t>(n);
    } else if (flag == "--eal") {
      options.eal = value;
    } else if (flag == "--ip" || flag == "--ip6") {
      std::string reason;
      auto prefix = parse_ip_prefix(value, reason);
      if (!prefix)
        return fail("dataplane: " + std::string(flag) + "=" + std::string(value) + ": " + reason);
      const bool v6 = prefix->address.family == conn::AddressFamily::kIpv6;
      if (v6 != (flag == "--ip6")) {
        return bad_value(flag, value,
                         v6 ? "an IPv4 address (IPv6 goes in --ip6)" : "an IPv6 address");
      }
      (v6 ? options.ip6 : options.ip) = *prefix;
    } else if (flag == "--gateway") {
      std::string reason;
      auto prefix = parse_ip_prefix(value, reason);
      if (!prefix || prefix->prefix_length != prefix->address.ip_length() * 8 ||
          value.find('/') != std::string_view::npos) {
        return bad_value(flag, value, "an IP address");
      }
      options.gateway = prefix->address;
    } else if (flag == "--server-id") {
      if (!parse_hex(value, options.server_id) || options.server_id.empty() ||
          options.server_id.size() > kMaxServerIdLength) {
        return bad_value(flag, value, "1 to 8 bytes in hex (2 to 16 hex digits)");
      }
    } else if (flag == "--host-key") {
      if (value.empty()) return bad_value(flag, value, "a file");
      if (options.host_key_files.size() == kMaxHostKeyFiles)
        return fail("dataplane: --host-key: at most " + std::to_string(kMaxHostKeyFiles) +
                    " files");
      options.host_key_files.emplace_back(value);
    } else if (flag == "--ticket-key") {
      if (value.empty()) return bad_value(flag, value, "a file");
      if (options.ticket_key_files.size() == kMaxTicketKeyFiles)
        return fail("dataplane: --ticket-key: at most " + std::to_string(kMaxTicketKeyFiles) +
                    " files");
      options.ticket_key_files.emplace_back(value);
    } else {
      return fail("dataplane: unknown flag " + std::string(flag) + " (see --help)");
    }
    return true;
  }
};

}  // namespace

const char* server_usage() { return kUsage; }

std::optional<IpPrefix> parse_ip_prefix(std::string_view text, std::string& error) {
  const size_t slash = text.find('/');
  const std::string address(text.substr(0, slash));
  IpPrefix prefix;
  in_addr v4;
  in6_addr v6;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    prefix.address = address_from_ip(&v4, false, 0);
  } else if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
    prefix.address = address_from_ip(&v6, true, 0);
  } else {
    error = "invalid CIDR: '" + address + "' is not an IP address";
    return std::nullopt;
  }
  const uint64_t max = prefix.address.ip_length() * 8;
  uint64_t length = max;
  if (slash != std::string_view::npos && !parse_count(text.substr(slash + 1), 0, max, length)) {
    error = "invalid CIDR: the prefix length must be 0.." + std::to_string(max);
    return std::nullopt;
  }
  prefix.prefix_length = static_cast<uint8_t>(length);
  return prefix;
}

std::optional<ServerOptions> parse_server_options(int argc, char** argv, std::string& error) {
  Parser parser{ServerOptions{}, error};
  ServerOptions& options = parser.options;
  options.listen = {
      conn::SocketAddress::ipv4(127, 0, 0, 1, 4433),
      conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 4433)};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (arg.substr(0, 2) != "--") {
      error = "dataplane: unexpected argument '" + std::string(arg) + "' (see --help)";
      return std::nullopt;
    }
    const size_t equals = arg.find('=');
    std::string_view flag = arg.substr(0, equals);
    std::string_view value;
    if (equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      error = "dataplane: " + std::string(flag) + " needs a value (see --help)";
      return std::nullopt;
    }
    if (!parser.apply(flag, value)) return std::nullopt;
  }
  if (options.backend != Backend::kDpdk &&
      (options.ip || options.ip6 || options.gateway || !options.eal.empty())) {
    error = "dataplane: --ip, --ip6, --gateway and --eal apply to --backend=dpdk only";
    return std::nullopt;
  }
  if (options.backend == Backend::kDpdk && !options.ip && !options.ip6) {
    error =
        "dataplane: --backend=dpdk needs --ip and/or --ip6: the engine's own address "
        "(the kernel does not own it)";
    return std::nullopt;
  }
  if (options.gateway) {
    const bool v4 = options.gateway->family == conn::AddressFamily::kIpv4;
    if ((v4 && !options.ip) || (!v4 && !options.ip6)) {
      error = std::string("dataplane: --gateway is an IPv") + (v4 ? "4" : "6") +
              " address but there is no --ip" + (v4 ? "" : "6");
      return std::nullopt;
    }
  }
  if (options.certificate_file.empty() != options.key_file.empty()) {
    error = "dataplane: --cert and --key go together";
    return std::nullopt;
  }
  return options;
}

}  // namespace dpquic::dataplane
