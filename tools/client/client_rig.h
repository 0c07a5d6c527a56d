#pragma once
// What the interop test clients (dpquic_client, exhaustion_client) share:
// the loopback address they bind, main()'s guard, and (from quicload's
// client_support) their TLS client context, shard configuration, one turn of
// the shard's loop and number flags.

#include <functional>

#include "quic/conn/socket_address.h"
#include "tools/quicload/client_support.h"

namespace dpquic::interop {

// The loopback address of `server`'s family, port 0: tests stay on this host.
conn::SocketAddress loopback_for(const conn::SocketAddress& server);

// Flag and number parsing, TLS, the shard configuration and the loop turn
// live in tools/quicload/client_support.h (quicload uses them too).
using tools::client_shard_config;
using tools::ClientTlsOptions;
using tools::FlagArgument;
using tools::make_client_tls;
using tools::parse_number;
using tools::poll_or_wait;
using tools::split_flag;

// main()'s body: runs `body` with SIGPIPE ignored (a closed pipe must not
// kill a test client) and turns a start-up exception into "program: what"
// on stderr and exit code 2.
int guarded_main(const char* program, const std::function<int()>& body);

}  // namespace dpquic::interop
