#pragma once
// What the interop test clients (dpquic_client, exhaustion_client) share:
// their TLS client context, a client shard on loopback, one turn of the
// shard's loop, number flags, and main()'s guard.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "crypto/tls_context.h"
#include "dataplane/shard/shard.h"
#include "quic/conn/socket_address.h"
#include "quic/time.h"

namespace dpquic::interop {

// The loopback address of `server`'s family, port 0: tests stay on this host.
conn::SocketAddress loopback_for(const conn::SocketAddress& server);

// A command-line argument "--name=value" split at its first '=': name is
// all of `arg` and value empty when there is none.
struct FlagArgument {
  std::string_view name;
  std::string_view value;
};
FlagArgument split_flag(std::string_view arg);

// A whole decimal number in [min, max], nothing else.
bool parse_number(std::string_view text, uint64_t min, uint64_t max, uint64_t& out);

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

// Does the shard's pending work at `now`; when there was none, sleeps until
// input arrives, `deadline` or `now + tick`, whichever comes first.
void poll_or_wait(dataplane::Shard& shard, Instant now, Instant deadline, Duration tick);

// main()'s body: runs `body` with SIGPIPE ignored (a closed pipe must not
// kill a test client) and turns a start-up exception into "program: what"
// on stderr and exit code 2.
int guarded_main(const char* program, const std::function<int()>& body);

}  // namespace dpquic::interop
