#include "dataplane/udp/socket_address_conv.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

namespace dpquic::dataplane {
namespace {

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

std::string quoted(std::string_view text) {
  std::string out = "'";
  out.append(text);
  out += "'";
  return out;
}

// Decimal 1..65535, digits only (no sign, no spaces).
std::optional<uint16_t> parse_port(std::string_view text, std::string& error) {
  if (text.empty()) {
    error = "missing port after ':'";
    return std::nullopt;
  }
  uint32_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      error = "port " + quoted(text) + " is not a decimal number";
      return std::nullopt;
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 65535) break;
  }
  if (value == 0 || value > 65535) {
    error = "port " + quoted(text) + " is out of range 1..65535";
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

std::optional<conn::SocketAddress> resolve(const std::string& host, uint16_t port,
                                           std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_protocol = IPPROTO_UDP;
  addrinfo* results = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &results);
  if (status != 0) {
    error = "cannot resolve " + quoted(host) + ": " + gai_strerror(status);
    return std::nullopt;
  }
  std::optional<conn::SocketAddress> found;
  for (const addrinfo* entry = results; entry != nullptr; entry = entry->ai_next) {
    conn::SocketAddress address = from_sockaddr(entry->ai_addr);
    if (address.valid()) {
      address.port = port;
      found = address;
      break;
    }
  }
  freeaddrinfo(results);
  if (!found) error = "no IPv4 or IPv6 address for " + quoted(host);
  return found;
}

}  // namespace

bool to_sockaddr(const conn::SocketAddress& address, sockaddr_storage& storage, socklen_t& length) {
  if (address.family == conn::AddressFamily::kIpv4) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(address.port);
    std::memcpy(&v4.sin_addr, address.ip.data(), 4);
    std::memcpy(&storage, &v4, sizeof(v4));
    length = sizeof(v4);
    return true;
  }
  if (address.family == conn::AddressFamily::kIpv6) {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(address.port);
    std::memcpy(&v6.sin6_addr, address.ip.data(), 16);
    std::memcpy(&storage, &v6, sizeof(v6));
    length = sizeof(v6);
    return true;
  }
  return false;
}

conn::SocketAddress address_from_ip(const void* ip, bool ipv6, uint16_t port) {
  conn::SocketAddress address;
  address.port = port;
  const auto* bytes = static_cast<const uint8_t*>(ip);
  if (!ipv6) {
    address.family = conn::AddressFamily::kIpv4;
    std::memcpy(address.ip.data(), bytes, 4);
  } else if (std::memcmp(bytes, kV4MappedPrefix, sizeof(kV4MappedPrefix)) == 0) {
    address.family = conn::AddressFamily::kIpv4;
    std::memcpy(address.ip.data(), bytes + 12, 4);
  } else {
    address.family = conn::AddressFamily::kIpv6;
    std::memcpy(address.ip.data(), bytes, 16);
  }
  return address;
}

conn::SocketAddress from_sockaddr(const sockaddr* address) {
  if (address == nullptr) return {};
  if (address->sa_family == AF_INET) {
    sockaddr_in v4;
    std::memcpy(&v4, address, sizeof(v4));
    return address_from_ip(&v4.sin_addr, false, ntohs(v4.sin_port));
  }
  if (address->sa_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, address, sizeof(v6));
    return address_from_ip(&v6.sin6_addr, true, ntohs(v6.sin6_port));
  }
  return {};
}

bool is_wildcard(const conn::SocketAddress& address) {
  if (!address.valid()) return false;
  for (size_t i = 0; i < address.ip_length(); ++i) {
    if (address.ip[i] != 0) return false;
  }
  return true;
}

std::optional<conn::SocketAddress> parse_host_port(std::string_view text, std::string& error) {
  if (text.empty()) {
    error = "empty address";
    return std::nullopt;
  }
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      error = "missing ']' after the IPv6 address";
      return std::nullopt;
    }
    const std::string host(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      error = "missing ':PORT' after ']'";
      return std::nullopt;
    }
    const std::optional<uint16_t> port = parse_port(rest.substr(1), error);
    if (!port) return std::nullopt;
    in6_addr ip;
    if (inet_pton(AF_INET6, host.c_str(), &ip) != 1) {
      error = quoted(host) + " is not an IPv6 address";
      return std::nullopt;
    }
    return address_from_ip(&ip, true, *port);
  }

  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    error = "missing ':PORT'";
    return std::nullopt;
  }
  const std::string host(text.substr(0, colon));
  if (host.empty()) {
    error = "missing HOST before ':'";
    return std::nullopt;
  }
  if (host.find(':') != std::string::npos) {
    error = "an IPv6 address needs brackets, as in [::1]:4433";
    return std::nullopt;
  }
  const std::optional<uint16_t> port = parse_port(text.substr(colon + 1), error);
  if (!port) return std::nullopt;
  in_addr ip;
  if (inet_pton(AF_INET, host.c_str(), &ip) == 1) return address_from_ip(&ip, false, *port);
  // Digits and dots only is a mistyped IPv4 address, not a name to look up.
  if (host.find_first_not_of("0123456789.") == std::string::npos) {
    error = quoted(host) + " is not an IPv4 address";
    return std::nullopt;
  }
  return resolve(host, *port, error);
}

std::string format_address(const conn::SocketAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.family == conn::AddressFamily::kIpv4) {
    inet_ntop(AF_INET, address.ip.data(), text, sizeof(text));
    return std::string(text) + ":" + std::to_string(address.port);
  }
  if (address.family == conn::AddressFamily::kIpv6) {
    inet_ntop(AF_INET6, address.ip.data(), text, sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(address.port);
  }
  return "(none)";
}

}  // namespace dpquic::dataplane
