#include "dataplane/udp/socket_address_conv.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

namespace dpquic::dataplane {
namespace {

using conn::AddressFamily;
using conn::SocketAddress;

constexpr std::array<uint8_t, 16> kIpv6Loopback = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

SocketAddress parse_ok(std::string_view text) {
  std::string error;
  const std::optional<SocketAddress> address = parse_host_port(text, error);
  EXPECT_TRUE(address.has_value()) << text << ": " << error;
  EXPECT_TRUE(error.empty()) << error;
  return address.value_or(SocketAddress{});
}

std::string parse_error(std::string_view text) {
  std::string error;
  const std::optional<SocketAddress> address = parse_host_port(text, error);
  EXPECT_FALSE(address.has_value()) << text;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  return error;
}

TEST(ParseHostPortTest, AcceptsIpv4) {
  EXPECT_EQ(parse_ok("127.0.0.1:4433"), SocketAddress::ipv4(127, 0, 0, 1, 4433));
  EXPECT_EQ(parse_ok("0.0.0.0:1"), SocketAddress::ipv4(0, 0, 0, 0, 1));
  EXPECT_EQ(parse_ok("1.2.3.4:65535"), SocketAddress::ipv4(1, 2, 3, 4, 65535));
}

TEST(ParseHostPortTest, AcceptsBracketedIpv6) {
  EXPECT_EQ(parse_ok("[::1]:443"), SocketAddress::ipv6(kIpv6Loopback, 443));
  EXPECT_EQ(parse_ok("[::1]:4433"), SocketAddress::ipv6(kIpv6Loopback, 4433));
  EXPECT_EQ(parse_ok("[::]:80"), SocketAddress::ipv6({}, 80));
  EXPECT_EQ(
      parse_ok("[2001:db8::2:1]:8443"),
      SocketAddress::ipv6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1}, 8443));
  // A v4-mapped address names the IPv4 host.
  EXPECT_EQ(parse_ok("[::ffff:10.1.2.3]:99"), SocketAddress::ipv4(10, 1, 2, 3, 99));
}

TEST(ParseHostPortTest, ResolvesLocalhost) {
  const SocketAddress address = parse_ok("localhost:4433");
  EXPECT_EQ(address.port, 4433);
  const bool loopback = (address.family == AddressFamily::kIpv4 && address.ip[0] == 127) ||
                        address == SocketAddress::ipv6(kIpv6Loopback, 4433);
  EXPECT_TRUE(loopback) << format_address(address);
}

TEST(ParseHostPortTest, RejectsWithAReason) {
  EXPECT_EQ(parse_error("1.2.3.4"), "missing ':PORT'");
  EXPECT_EQ(parse_error("1.2.3.4:0"), "port '0' is out of range 1..65535");
  EXPECT_EQ(parse_error(":80"), "missing HOST before ':'");
  EXPECT_EQ(parse_error("[::1"), "missing ']' after the IPv6 address");
  EXPECT_EQ(parse_error("host:99999"), "port '99999' is out of range 1..65535");
  EXPECT_EQ(parse_error("1.2.3.4:65536"), "port '65536' is out of range 1..65535");
  EXPECT_EQ(parse_error("1.2.3.4:123456789012345678901234"),
            "port '123456789012345678901234' is out of range 1..65535");
  EXPECT_EQ(parse_error(""), "empty address");
  EXPECT_EQ(parse_error("1.2.3.4:"), "missing port after ':'");
  EXPECT_EQ(parse_error("1.2.3.4:+80"), "port '+80' is not a decimal number");
  EXPECT_EQ(parse_error("1.2.3.4:8o"), "port '8o' is not a decimal number");
  EXPECT_EQ(parse_error("1.2.3.4: 80"), "port ' 80' is not a decimal number");
  EXPECT_EQ(parse_error("::1:443"), "an IPv6 address needs brackets, as in [::1]:4433");
  EXPECT_EQ(parse_error("[::1]443"), "missing ':PORT' after ']'");
  EXPECT_EQ(parse_error("[::1]"), "missing ':PORT' after ']'");
  EXPECT_EQ(parse_error("[1.2.3.4]:80"), "'1.2.3.4' is not an IPv6 address");
  EXPECT_EQ(parse_error("[]:80"), "'' is not an IPv6 address");
  EXPECT_EQ(parse_error("1.2.3.400:80"), "'1.2.3.400' is not an IPv4 address");
  EXPECT_EQ(parse_error("[::1]:0"), "port '0' is out of range 1..65535");
}

TEST(FormatAddressTest, PrintsHostAndPort) {
  EXPECT_EQ(format_address(SocketAddress::ipv4(127, 0, 0, 1, 4433)), "127.0.0.1:4433");
  EXPECT_EQ(format_address(SocketAddress::ipv6(kIpv6Loopback, 4433)), "[::1]:4433");
  EXPECT_EQ(format_address(SocketAddress::ipv6(
                {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 443)),
            "[2001:db8::1]:443");
  EXPECT_EQ(format_address(SocketAddress{}), "(none)");
  // What format_address prints, parse_host_port reads back.
  for (const char* text : {"10.0.0.255:1", "[fe80::1:2]:65535", "[::]:9"}) {
    EXPECT_EQ(format_address(parse_ok(text)), text);
  }
}

TEST(SockaddrTest, Ipv4RoundTrip) {
  const SocketAddress address = SocketAddress::ipv4(192, 0, 2, 7, 4433);
  sockaddr_storage storage;
  socklen_t length = 0;
  ASSERT_TRUE(to_sockaddr(address, storage, length));
  ASSERT_EQ(length, sizeof(sockaddr_in));
  sockaddr_in v4;
  std::memcpy(&v4, &storage, sizeof(v4));
  EXPECT_EQ(v4.sin_family, AF_INET);
  EXPECT_EQ(ntohs(v4.sin_port), 4433);
  EXPECT_EQ(ntohl(v4.sin_addr.s_addr), 0xc0000207u);
  EXPECT_EQ(from_sockaddr(reinterpret_cast<const sockaddr*>(&storage)), address);
}

TEST(SockaddrTest, Ipv6RoundTrip) {
  const SocketAddress address =
      SocketAddress::ipv6({0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 65535);
  sockaddr_storage storage;
  socklen_t length = 0;
  ASSERT_TRUE(to_sockaddr(address, storage, length));
  ASSERT_EQ(length, sizeof(sockaddr_in6));
  sockaddr_in6 v6;
  std::memcpy(&v6, &storage, sizeof(v6));
  EXPECT_EQ(v6.sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(v6.sin6_port), 65535);
  EXPECT_EQ(std::memcmp(&v6.sin6_addr, address.ip.data(), 16), 0);
  EXPECT_EQ(from_sockaddr(reinterpret_cast<const sockaddr*>(&storage)), address);
}

TEST(SockaddrTest, V4MappedBecomesIpv4) {
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(853);
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:198.51.100.9", &v6.sin6_addr), 1);
  EXPECT_EQ(from_sockaddr(reinterpret_cast<const sockaddr*>(&v6)),
            SocketAddress::ipv4(198, 51, 100, 9, 853));
}

TEST(SockaddrTest, OtherFamiliesAreInvalid) {
  EXPECT_FALSE(from_sockaddr(nullptr).valid());
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  EXPECT_FALSE(from_sockaddr(reinterpret_cast<const sockaddr*>(&unix_address)).valid());
  sockaddr_storage storage;
  socklen_t length = 0;
  EXPECT_FALSE(to_sockaddr(SocketAddress{}, storage, length));
}

TEST(SockaddrTest, Wildcards) {
  EXPECT_TRUE(is_wildcard(SocketAddress::ipv4(0, 0, 0, 0, 443)));
  EXPECT_TRUE(is_wildcard(SocketAddress::ipv6({}, 443)));
  EXPECT_FALSE(is_wildcard(SocketAddress::ipv4(127, 0, 0, 1, 0)));
  EXPECT_FALSE(is_wildcard(SocketAddress::ipv6(kIpv6Loopback, 0)));
  EXPECT_FALSE(is_wildcard(SocketAddress{}));
}

}  // namespace
}  // namespace dpquic::dataplane
