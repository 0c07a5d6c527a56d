#pragma once
// Conversions between the sans-IO conn::SocketAddress and the kernel's
// sockaddr structures, plus parsing and printing of "HOST:PORT" text for the
// command line and log lines.

#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

#include "quic/conn/socket_address.h"

namespace dpquic::dataplane {

// Writes `address` as a sockaddr_in / sockaddr_in6 into `storage` and its
// length into `length`. False (and nothing written) for an invalid address.
bool to_sockaddr(const conn::SocketAddress& address, sockaddr_storage& storage, socklen_t& length);

// Reads an AF_INET / AF_INET6 sockaddr. An IPv4-mapped IPv6 address
// (::ffff:a.b.c.d) becomes the IPv4 address, so a peer has one identity
// whichever socket family saw it. Null or another family gives an invalid
// (family kNone) address.
conn::SocketAddress from_sockaddr(const sockaddr* address);

// Converts a raw IP taken from a PKTINFO cmsg (4 or 16 bytes) to an address
// with `port`, mapping ::ffff:a.b.c.d to IPv4 as from_sockaddr does.
conn::SocketAddress address_from_ip(const void* ip, bool ipv6, uint16_t port);

// True for 0.0.0.0 and ::, the addresses that bind every interface.
bool is_wildcard(const conn::SocketAddress& address);

// Parses "127.0.0.1:4433", "[::1]:4433" or "localhost:4433". A name that is
// not a numeric IP is resolved with getaddrinfo (first result). The port is
// decimal, 1..65535. On failure returns nullopt and sets `error` to a short
// reason (e.g. "missing ':PORT'"); the caller adds which option it was.
std::optional<conn::SocketAddress> parse_host_port(std::string_view text, std::string& error);

// "127.0.0.1:4433" or "[::1]:4433"; "(none)" for an invalid address.
std::string format_address(const conn::SocketAddress& address);

}  // namespace dpquic::dataplane
