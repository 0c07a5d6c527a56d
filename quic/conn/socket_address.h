#pragma once
// A UDP endpoint address (IPv4 or IPv6 plus port) as plain bytes, so the
// sans-IO core can compare, hash and bind tokens to addresses without any
// socket headers. The dataplane converts to and from sockaddr / DPDK headers.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace dpquic::conn {

enum class AddressFamily : uint8_t { kNone = 0, kIpv4 = 4, kIpv6 = 6 };

struct SocketAddress {
  AddressFamily family = AddressFamily::kNone;
  uint16_t port = 0;  // host byte order
  // IPv4 uses the first 4 bytes; the rest stay zero so comparisons are exact.
  std::array<uint8_t, 16> ip{};

  static SocketAddress ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port) {
    SocketAddress address;
    address.family = AddressFamily::kIpv4;
    address.port = port;
    address.ip[0] = a;
    address.ip[1] = b;
    address.ip[2] = c;
    address.ip[3] = d;
    return address;
  }
  static SocketAddress ipv6(const std::array<uint8_t, 16>& bytes, uint16_t port) {
    SocketAddress address;
    address.family = AddressFamily::kIpv6;
    address.port = port;
    address.ip = bytes;
    return address;
  }

  bool valid() const { return family != AddressFamily::kNone; }
  size_t ip_length() const { return family == AddressFamily::kIpv6 ? 16 : 4; }
  bool same_ip(const SocketAddress& other) const {
    return family == other.family && same_bytes(ip, other.ip);
  }
  bool operator==(const SocketAddress& other) const {
    return family == other.family && port == other.port && same_bytes(ip, other.ip);
  }
  bool operator!=(const SocketAddress& other) const { return !(*this == other); }

  // The 16 IP bytes as two words. Every received datagram's path is looked
  // up by address, and std::array's == there became a call to memcmp that
  // cost more than the comparison.
  static bool same_bytes(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b) {
    uint64_t a_words[2], b_words[2];
    std::memcpy(a_words, a.data(), sizeof(a_words));
    std::memcpy(b_words, b.data(), sizeof(b_words));
    return ((a_words[0] ^ b_words[0]) | (a_words[1] ^ b_words[1])) == 0;
  }

  // Family, port and IP as bytes: what address-validation tokens bind to.
  // Returns the length written (7 or 19); `out` must hold kEncodedMax bytes.
  static constexpr size_t kEncodedMax = 19;
  size_t encode(std::span<uint8_t> out) const {
    if (out.size() < kEncodedMax) return 0;
    out[0] = static_cast<uint8_t>(family);
    out[1] = static_cast<uint8_t>(port >> 8);
    out[2] = static_cast<uint8_t>(port);
    std::memcpy(out.data() + 3, ip.data(), ip_length());
    return 3 + ip_length();
  }

  // Family and IP, without the port: what NEW_TOKEN tokens bind to, since
  // the later connection that presents one comes from a new socket, so from
  // another port (RFC 9000 §8.1.3). Returns the length written (5 or 17);
  // `out` must hold kEncodedIpMax bytes.
  static constexpr size_t kEncodedIpMax = 17;
  size_t encode_ip(std::span<uint8_t> out) const {
    if (out.size() < kEncodedIpMax) return 0;
    out[0] = static_cast<uint8_t>(family);
    std::memcpy(out.data() + 1, ip.data(), ip_length());
    return 1 + ip_length();
  }

  uint64_t hash() const {
    // FNV-1a over the meaningful bytes: cheap and good enough for table
    // placement (tables keyed by address also compare the full value).
    uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint8_t>(family);
    auto mix = [&h](uint8_t byte) { h = (h ^ byte) * 0x100000001b3ull; };
    mix(static_cast<uint8_t>(port >> 8));
    mix(static_cast<uint8_t>(port));
    for (size_t i = 0; i < ip_length(); ++i) mix(ip[i]);
    return h;
  }
};

// The two addresses of a path as the local endpoint sees it (RFC 9000 §9).
struct PathAddresses {
  SocketAddress local;
  SocketAddress remote;
  bool operator==(const PathAddresses& other) const {
    return local == other.local && remote == other.remote;
  }
  bool operator!=(const PathAddresses& other) const { return !(*this == other); }
};

}  // namespace dpquic::conn
