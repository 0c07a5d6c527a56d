#include "tests/interop/client_rig.h"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace dpquic::interop {

conn::SocketAddress loopback_for(const conn::SocketAddress& server) {
  return server.family == conn::AddressFamily::kIpv6
             ? conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0)
             : conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
}

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

void poll_or_wait(dataplane::Shard& shard, Instant now, Instant deadline, Duration tick) {
  if (!shard.poll_once(now)) shard.wait(std::min(deadline, now + tick));
}

int guarded_main(const char* program, const std::function<int()>& body) {
  signal(SIGPIPE, SIG_IGN);
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
}

}  // namespace dpquic::interop
