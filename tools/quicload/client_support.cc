#include "tools/quicload/client_support.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::tools {

FlagArgument split_flag(std::string_view arg) {
  const size_t equals = arg.find('=');
  if (equals == std::string_view::npos) return {arg, {}};
  return {arg.substr(0, equals), arg.substr(equals + 1)};
}

bool parse_number(std::string_view text, uint64_t min, uint64_t max, uint64_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && out >= min && out <= max;
}

std::optional<ParsedUrl> parse_url(std::string_view url, std::string& error) {
  ParsedUrl parsed;
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("perf://")) {
    rest = url.substr(7);
    parsed.scheme = UrlScheme::kPerf;
  } else {
    error = "expected https:// or perf://";
    return std::nullopt;
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  if (authority.empty()) {
    error = "no HOST:PORT";
    return std::nullopt;
  }
  const auto server = dataplane::parse_host_port(authority, error);
  if (!server) return std::nullopt;
  std::string_view host = authority.substr(0, authority.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  parsed.authority = std::string(authority);
  parsed.host = std::string(host);
  parsed.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  parsed.server = *server;
  return parsed;
}

std::unique_ptr<crypto::TlsContext> make_client_tls(const ClientTlsOptions& options) {
  crypto::TlsClientConfig config;
  config.alpn_protocols = {options.alpn};
  config.verification = options.ca_file.empty() ? crypto::PeerVerification::kInsecureNoVerify
                                                : crypto::PeerVerification::kTrustedCertificates;
  config.trusted_certificates_file = options.ca_file;
  config.early_data_enabled = options.early_data;
  if (const char* keylog = std::getenv("SSLKEYLOGFILE")) config.keylog_file = keylog;
  return crypto::TlsContext::create_client(config);
}

dataplane::ShardConfig client_shard_config(const conn::SocketAddress& local,
                                           size_t max_connections) {
  dataplane::ShardConfig config;
  config.endpoint.role = wire::Role::kClient;
  config.endpoint.max_connections = max_connections;
  config.listen = {local};
  config.reuse_port = false;
  return config;
}

conn::SocketAddress local_address_for(const conn::SocketAddress& server) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (!dataplane::to_sockaddr(server, storage, length)) {
    throw std::runtime_error("invalid server address");
  }
  const int fd = socket(storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&storage), length) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0;
  const int saved = errno;
  close(fd);
  if (!ok) {
    throw std::runtime_error("cannot reach " + dataplane::format_address(server) + ": " +
                             std::strerror(saved));
  }
  conn::SocketAddress address = dataplane::from_sockaddr(reinterpret_cast<const sockaddr*>(&local));
  address.port = 0;
  return address;
}

uint64_t raise_descriptor_limit(uint64_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur >= wanted) return limit.rlim_cur;
  const rlim_t raised = std::min<rlim_t>(wanted, limit.rlim_max);
  if (raised > limit.rlim_cur) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = raised;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  return limit.rlim_cur;
}

void poll_or_wait(dataplane::Shard& shard, Instant now, Instant deadline, Duration tick) {
  if (!shard.poll_once(now)) shard.wait(std::min(deadline, now + tick));
}

}  // namespace dpquic::tools
