#pragma once
// Frames built by hand, byte by byte, with a reference one's-complement sum
// written here independently of DPDK, for the frame.h tests.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dataplane/dpdk/frame.h"
#include "quic/conn/socket_address.h"

namespace dpquic::dataplane::dpdk::testing {

using Bytes = std::vector<uint8_t>;
using Ip6 = std::array<uint8_t, 16>;

inline constexpr MacAddress kOurMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
inline constexpr MacAddress kPeerMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
inline constexpr MacAddress kOtherMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x09};
inline constexpr MacAddress kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
inline constexpr std::array<uint8_t, 4> kOurIp4 = {192, 0, 2, 1};
inline constexpr std::array<uint8_t, 4> kPeerIp4 = {192, 0, 2, 2};
inline constexpr Ip6 kOurIp6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0,    0,    0,
                                0,    0,    0,    0,    0, 0xab, 0xcd, 0x01};
inline constexpr Ip6 kPeerIp6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
inline constexpr Ip6 kUnspecified = {};
inline constexpr Ip6 kAllNodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
// ff02::1:ff + the last 24 bits of kOurIp6.
inline constexpr Ip6 kOurSolicitedNode = {0xff, 0x02, 0, 0, 0,    0,    0,    0,
                                          0,    0,    0, 1, 0xff, 0xab, 0xcd, 0x01};
inline constexpr MacAddress kOurSolicitedNodeMac = {0x33, 0x33, 0xff, 0xab, 0xcd, 0x01};

inline conn::SocketAddress v4(const std::array<uint8_t, 4>& ip, uint16_t port) {
  return conn::SocketAddress::ipv4(ip[0], ip[1], ip[2], ip[3], port);
}
inline conn::SocketAddress v6(const Ip6& ip, uint16_t port) {
  return conn::SocketAddress::ipv6(ip, port);
}

inline InterfaceAddresses our_interface() {
  InterfaceAddresses interface;
  interface.mac = kOurMac;
  interface.ipv4 = v4(kOurIp4, 0);
  interface.ipv4_prefix = 24;
  interface.ipv6 = v6(kOurIp6, 0);
  interface.ipv6_prefix = 64;
  return interface;
}

// --- reference checksum: big-endian 16-bit words, end-around carry ---

inline uint32_t sum_words(std::span<const uint8_t> bytes, uint32_t sum = 0) {
  for (size_t i = 0; i < bytes.size(); i += 2) {
    const uint32_t high = bytes[i];
    const uint32_t low = i + 1 < bytes.size() ? bytes[i + 1] : 0;
    sum += (high << 8) | low;
  }
  return sum;
}
inline uint16_t fold(uint32_t sum) {
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}
inline uint16_t complement(uint32_t sum) { return static_cast<uint16_t>(~fold(sum)); }

inline uint32_t ipv4_pseudo_sum(std::span<const uint8_t> source, std::span<const uint8_t> dest,
                                uint8_t protocol, size_t length) {
  return sum_words(source, sum_words(dest, protocol + static_cast<uint32_t>(length)));
}
inline uint32_t ipv6_pseudo_sum(const Ip6& source, const Ip6& dest, uint8_t next_header,
                                size_t length) {
  // 32-bit length and next header: both fit their low 16 bits here.
  return sum_words(source, sum_words(dest, next_header + static_cast<uint32_t>(length)));
}

inline uint16_t read16(std::span<const uint8_t> bytes, size_t offset) {
  return static_cast<uint16_t>(bytes[offset] << 8 | bytes[offset + 1]);
}
inline void put16(Bytes& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value));
}
inline void set16(Bytes& out, size_t offset, uint16_t value) {
  out[offset] = static_cast<uint8_t>(value >> 8);
  out[offset + 1] = static_cast<uint8_t>(value);
}
template <typename Range>
void append(Bytes& out, const Range& range) {
  out.insert(out.end(), std::begin(range), std::end(range));
}

inline Bytes ethernet(const MacAddress& destination, const MacAddress& source,
                      uint16_t ether_type) {
  Bytes out;
  append(out, destination);
  append(out, source);
  put16(out, ether_type);
  return out;
}

// --- IPv4 ---

struct Ipv4Fields {
  std::array<uint8_t, 4> source = kPeerIp4;
  std::array<uint8_t, 4> destination = kOurIp4;
  uint8_t protocol = 17;
  uint8_t tos = 0;
  uint8_t ttl = 64;
  uint16_t id = 0x1234;
  uint16_t flags_fragment = 0x4000;  // DF
  uint8_t version = 4;
  Bytes options;               // IHL grows by options.size() / 4
  int total_length_delta = 0;  // added to the true total length
  bool corrupt_checksum = false;
  MacAddress destination_mac = kOurMac;
  MacAddress source_mac = kPeerMac;
};

// Ethernet + IPv4 header (checksummed) + l4.
inline Bytes ipv4_frame(const Ipv4Fields& fields, const Bytes& l4) {
  Bytes out = ethernet(fields.destination_mac, fields.source_mac, 0x0800);
  const size_t header_length = 20 + fields.options.size();
  const size_t ip_start = out.size();
  out.push_back(static_cast<uint8_t>(fields.version << 4 | header_length / 4));
  out.push_back(fields.tos);
  put16(out, static_cast<uint16_t>(header_length + l4.size() + fields.total_length_delta));
  put16(out, fields.id);
  put16(out, fields.flags_fragment);
  out.push_back(fields.ttl);
  out.push_back(fields.protocol);
  put16(out, 0);
  append(out, fields.source);
  append(out, fields.destination);
  append(out, fields.options);
  uint16_t checksum = complement(sum_words(std::span(out).subspan(ip_start, header_length)));
  if (fields.corrupt_checksum) checksum ^= 0x0101;
  set16(out, ip_start + 10, checksum);
  append(out, l4);
  return out;
}

// A UDP header + payload whose checksum is computed over `pseudo_sum`.
inline Bytes udp_segment(uint16_t source_port, uint16_t destination_port, const Bytes& payload,
                         uint32_t pseudo_sum_without_length, bool checksum = true) {
  Bytes out;
  put16(out, source_port);
  put16(out, destination_port);
  put16(out, static_cast<uint16_t>(8 + payload.size()));
  put16(out, 0);
  append(out, payload);
  if (checksum) {
    uint16_t value = complement(sum_words(out, pseudo_sum_without_length + out.size()));
    if (value == 0) value = 0xffff;
    set16(out, 6, value);
  }
  return out;
}

inline Bytes ipv4_udp_frame(const Bytes& payload, uint16_t source_port = 4433,
                            uint16_t destination_port = 443, Ipv4Fields fields = {}) {
  const uint32_t pseudo = sum_words(fields.source, sum_words(fields.destination, 17));
  return ipv4_frame(fields, udp_segment(source_port, destination_port, payload, pseudo));
}

// ICMP echo (type 8 request / 0 reply) with a reference checksum.
inline Bytes icmp_echo(uint8_t type, uint16_t identifier, uint16_t sequence, const Bytes& data) {
  Bytes out = {type, 0, 0, 0};
  put16(out, identifier);
  put16(out, sequence);
  append(out, data);
  set16(out, 2, complement(sum_words(out)));
  return out;
}

// --- ARP ---

struct ArpFields {
  uint16_t hardware = 1;
  uint16_t protocol = 0x0800;
  uint8_t hardware_length = 6;
  uint8_t protocol_length = 4;
  uint16_t opcode = 1;
  MacAddress sender_mac = kPeerMac;
  std::array<uint8_t, 4> sender_ip = kPeerIp4;
  MacAddress target_mac = {};
  std::array<uint8_t, 4> target_ip = kOurIp4;
  MacAddress destination_mac = kBroadcast;
  MacAddress source_mac = kPeerMac;  // Ethernet
};

inline Bytes arp_frame(const ArpFields& fields) {
  Bytes out = ethernet(fields.destination_mac, fields.source_mac, 0x0806);
  put16(out, fields.hardware);
  put16(out, fields.protocol);
  out.push_back(fields.hardware_length);
  out.push_back(fields.protocol_length);
  put16(out, fields.opcode);
  append(out, fields.sender_mac);
  append(out, fields.sender_ip);
  append(out, fields.target_mac);
  append(out, fields.target_ip);
  return out;
}

// --- IPv6 ---

struct Ipv6Fields {
  Ip6 source = kPeerIp6;
  Ip6 destination = kOurIp6;
  uint8_t next_header = 17;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0x12345;
  uint8_t hop_limit = 64;
  uint8_t version = 6;
  int payload_length_delta = 0;
  MacAddress destination_mac = kOurMac;
  MacAddress source_mac = kPeerMac;
};

inline Bytes ipv6_frame(const Ipv6Fields& fields, const Bytes& l4) {
  Bytes out = ethernet(fields.destination_mac, fields.source_mac, 0x86dd);
  const uint32_t first_word =
      uint32_t{fields.version} << 28 | uint32_t{fields.traffic_class} << 20 | fields.flow_label;
  put16(out, static_cast<uint16_t>(first_word >> 16));
  put16(out, static_cast<uint16_t>(first_word));
  put16(out, static_cast<uint16_t>(l4.size() + fields.payload_length_delta));
  out.push_back(fields.next_header);
  out.push_back(fields.hop_limit);
  append(out, fields.source);
  append(out, fields.destination);
  append(out, l4);
  return out;
}

inline Bytes ipv6_udp_frame(const Bytes& payload, uint16_t source_port = 4433,
                            uint16_t destination_port = 443, Ipv6Fields fields = {}) {
  fields.next_header = 17;
  const uint32_t pseudo = sum_words(fields.source, sum_words(fields.destination, 17));
  return ipv6_frame(fields, udp_segment(source_port, destination_port, payload, pseudo));
}

// An ICMPv6 message (type, code, 4 body bytes, rest) with its checksum over
// the pseudo header of `fields`.
inline Bytes icmp6_message(const Ipv6Fields& fields, uint8_t type, uint8_t code,
                           const Bytes& body) {
  Bytes out = {type, code, 0, 0};
  append(out, body);
  set16(out, 2,
        complement(
            sum_words(out, ipv6_pseudo_sum(fields.source, fields.destination, 58, out.size()))));
  return out;
}

inline Bytes icmp6_frame(Ipv6Fields fields, uint8_t type, uint8_t code, const Bytes& body) {
  fields.next_header = 58;
  return ipv6_frame(fields, icmp6_message(fields, type, code, body));
}

// NS/NA body: 4 flag/reserved bytes, target, then options.
inline Bytes nd_body(uint8_t flags, const Ip6& target, const Bytes& options = {}) {
  Bytes out = {flags, 0, 0, 0};
  append(out, target);
  append(out, options);
  return out;
}
inline Bytes link_layer_option(uint8_t type, const MacAddress& mac) {
  Bytes out = {type, 1};
  append(out, mac);
  return out;
}

// An NS for kOurIp6 to its solicited-node group, hop limit 255.
inline Ipv6Fields solicitation_fields() {
  Ipv6Fields fields;
  fields.destination = kOurSolicitedNode;
  fields.destination_mac = kOurSolicitedNodeMac;
  fields.hop_limit = 255;
  return fields;
}

}  // namespace dpquic::dataplane::dpdk::testing
