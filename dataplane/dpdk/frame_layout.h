#pragma once
// What frame.cc (parsing) and frame_write.cc (writing) share: header sizes
// and offsets, fixed addresses, and byte-level helpers. Private to the frame
// library.

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "dataplane/dpdk/frame.h"

namespace dpquic::dataplane::dpdk::frame_layout {

using conn::AddressFamily;
using conn::SocketAddress;

inline constexpr size_t kEthernetHeader = sizeof(rte_ether_hdr);
inline constexpr size_t kIpv4Header = sizeof(rte_ipv4_hdr);
inline constexpr size_t kIpv6Header = sizeof(rte_ipv6_hdr);
inline constexpr size_t kUdpHeader = sizeof(rte_udp_hdr);
inline constexpr size_t kArpPacket = sizeof(rte_arp_hdr);
inline constexpr size_t kIcmpHeader = sizeof(rte_icmp_hdr);
static_assert(kEthernetHeader == 14 && kIpv4Header == 20 && kIpv6Header == 40);
static_assert(kUdpHeader == 8 && kArpPacket == 28 && kIcmpHeader == 8);
static_assert(kEthernetHeader + kIpv6Header + kUdpHeader == kMaxUdpHeaderLength);

inline constexpr size_t kIpv4L4Offset = kEthernetHeader + kIpv4Header;
inline constexpr size_t kIpv6L4Offset = kEthernetHeader + kIpv6Header;
inline constexpr size_t kArpFrameLength = kEthernetHeader + kArpPacket;

// RFC 4861 §4.3/§4.4: type, code, checksum, 4 bytes (reserved or flags),
// the 16-byte target; then options in units of 8 bytes.
inline constexpr size_t kNdMessage = 24;
inline constexpr size_t kNdTargetOffset = 8;
inline constexpr size_t kNdLinkLayerOption = 8;  // type, length 1, 6-byte MAC
inline constexpr size_t kNdFrameLength = kIpv6L4Offset + kNdMessage + kNdLinkLayerOption;
inline constexpr uint8_t kNdHopLimit = 255;
inline constexpr uint8_t kNaFlagSolicited = 0x40;  // first flags byte of an NA
inline constexpr uint8_t kNaFlagOverride = 0x20;

// Replies start a fresh hop count rather than echoing the request's.
inline constexpr uint8_t kReplyHopLimit = 64;

inline constexpr MacAddress kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
inline constexpr MacAddress kAllNodesMac = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
inline constexpr std::array<uint8_t, 16> kAllNodesGroup = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                                                           0,    0,    0, 0, 0, 0, 0, 1};

// Headers are copied in and out with memcpy: frame bytes carry no alignment
// or type guarantee, and the copies are a few dozen bytes.
template <typename T>
T load(const uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}
template <typename T>
void store(uint8_t* bytes, const T& value) {
  std::memcpy(bytes, &value, sizeof(T));
}

inline MacAddress mac_of(const rte_ether_addr& address) {
  MacAddress mac;
  std::memcpy(mac.data(), address.addr_bytes, mac.size());
  return mac;
}
inline rte_ether_addr ether_of(const MacAddress& mac) {
  rte_ether_addr address;
  std::memcpy(address.addr_bytes, mac.data(), mac.size());
  return address;
}
inline bool is_multicast(const MacAddress& mac) { return (mac[0] & RTE_ETHER_GROUP_ADDR) != 0; }

inline bool has_family(const std::optional<SocketAddress>& address, AddressFamily family) {
  return address && address->family == family;
}

inline rte_be32_t ipv4_bytes(const SocketAddress& address) {
  rte_be32_t value;
  std::memcpy(&value, address.ip.data(), sizeof(value));
  return value;
}

// ff02::1:ffXX:XXXX for the last 24 bits of `address` (RFC 4291 §2.7.1).
inline std::array<uint8_t, 16> solicited_node(const std::array<uint8_t, 16>& address) {
  std::array<uint8_t, 16> group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  std::copy(address.begin() + 13, address.end(), group.begin() + 13);
  return group;
}
// 33:33 and the group's last 32 bits (RFC 2464 §7).
inline MacAddress multicast_mac(const std::array<uint8_t, 16>& group) {
  return {0x33, 0x33, group[12], group[13], group[14], group[15]};
}

}  // namespace dpquic::dataplane::dpdk::frame_layout
