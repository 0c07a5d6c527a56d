#pragma once
// What dpquic's clients share (quicload, and the interop test clients through
// tools/client/client_rig.h): command-line number and flag parsing, URL
// parsing, the TLS client context, a client shard's configuration, the local
// address the kernel would use towards a server, and one turn of a shard's
// loop.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "crypto/tls_context.h"
#include "dataplane/shard/shard.h"
#include "quic/conn/socket_address.h"
#include "quic/time.h"

namespace dpquic::tools {

// A command-line argument "--name=value" split at its first '=': name is
// all of `arg` and value empty when there is none.
struct FlagArgument {
  std::string_view name;
  std::string_view value;
};
FlagArgument split_flag(std::string_view arg);

// A whole decimal number in [min, max], nothing else.
bool parse_number(std::string_view text, uint64_t min, uint64_t max, uint64_t& out);

enum class UrlScheme : uint8_t { kHttps, kPerf };

// https://HOST:PORT/PATH or perf://HOST:PORT/PATH, HOST an IPv4 literal, a
// bracketed IPv6 literal or a name (resolved with getaddrinfo, first result).
struct ParsedUrl {
  UrlScheme scheme = UrlScheme::kHttps;
  std::string authority;  // HOST:PORT as written
  std::string host;       // without brackets: the TLS server name
  std::string path;       // starts with '/'; "/" when the URL has none
  conn::SocketAddress server;
};
// nullopt with `error` set to a short reason (without the URL) otherwise.
std::optional<ParsedUrl> parse_url(std::string_view url, std::string& error);

struct ClientTlsOptions {
  std::string alpn = "h3";
  std::string ca_file;  // empty: the server is not verified
  bool early_data = false;
};

// A TLS client context. SSLKEYLOGFILE, when set, names a file the secrets
// are appended to. Throws std::runtime_error on failure (start-up only).
std::unique_ptr<crypto::TlsContext> make_client_tls(const ClientTlsOptions& options);

// A client shard with one socket on `local` (no SO_REUSEPORT) and room for
// `max_connections` connections; the caller adds what else it needs.
dataplane::ShardConfig client_shard_config(const conn::SocketAddress& local,
                                           size_t max_connections);

// The source address the kernel routes `server` from, port 0 (a UDP socket
// is connected, which sends nothing, and asked). Throws std::runtime_error
// naming the server when there is no route.
conn::SocketAddress local_address_for(const conn::SocketAddress& server);

// RLIMIT_NOFILE's soft limit, raised first towards `wanted` (at most to the
// hard limit) when it is below.
uint64_t raise_descriptor_limit(uint64_t wanted);

// Does the shard's pending work at `now`; when there was none, sleeps until
// input arrives, `deadline` or `now + tick`, whichever comes first.
void poll_or_wait(dataplane::Shard& shard, Instant now, Instant deadline, Duration tick);

}  // namespace dpquic::tools
