#include "dataplane/dpdk/frame.h"

#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf_core.h>
#include <rte_udp.h>

#include <algorithm>
#include <cstring>

namespace dpquic::dataplane::dpdk {
namespace {

using conn::AddressFamily;
using conn::SocketAddress;

constexpr size_t kEthernetHeader = sizeof(rte_ether_hdr);
constexpr size_t kIpv4Header = sizeof(rte_ipv4_hdr);
constexpr size_t kIpv6Header = sizeof(rte_ipv6_hdr);
constexpr size_t kUdpHeader = sizeof(rte_udp_hdr);
constexpr size_t kArpPacket = sizeof(rte_arp_hdr);
constexpr size_t kIcmpHeader = sizeof(rte_icmp_hdr);
static_assert(kEthernetHeader == 14 && kIpv4Header == 20 && kIpv6Header == 40);
static_assert(kUdpHeader == 8 && kArpPacket == 28 && kIcmpHeader == 8);
static_assert(kEthernetHeader + kIpv6Header + kUdpHeader == kMaxUdpHeaderLength);

constexpr size_t kIpv4L4Offset = kEthernetHeader + kIpv4Header;
constexpr size_t kIpv6L4Offset = kEthernetHeader + kIpv6Header;
constexpr size_t kArpFrameLength = kEthernetHeader + kArpPacket;

// RFC 4861 §4.3/§4.4: type, code, checksum, 4 bytes (reserved or flags),
// the 16-byte target; then options in units of 8 bytes.
constexpr size_t kNdMessage = 24;
constexpr size_t kNdTargetOffset = 8;
constexpr size_t kNdLinkLayerOption = 8;  // type, length 1, 6-byte MAC
constexpr size_t kNdFrameLength = kIpv6L4Offset + kNdMessage + kNdLinkLayerOption;
constexpr uint8_t kNdHopLimit = 255;
constexpr uint8_t kNaFlagSolicited = 0x40;  // first flags byte of an NA
constexpr uint8_t kNaFlagOverride = 0x20;

// Replies start a fresh hop count rather than echoing the request's.
constexpr uint8_t kReplyHopLimit = 64;

constexpr MacAddress kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr MacAddress kAllNodesMac = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
constexpr std::array<uint8_t, 16> kAllNodesGroup = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
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

MacAddress mac_of(const rte_ether_addr& address) {
  MacAddress mac;
  std::memcpy(mac.data(), address.addr_bytes, mac.size());
  return mac;
}
rte_ether_addr ether_of(const MacAddress& mac) {
  rte_ether_addr address;
  std::memcpy(address.addr_bytes, mac.data(), mac.size());
  return address;
}
bool is_multicast(const MacAddress& mac) { return (mac[0] & RTE_ETHER_GROUP_ADDR) != 0; }

bool has_family(const std::optional<SocketAddress>& address, AddressFamily family) {
  return address && address->family == family;
}

// True when the first `bits` bits of a and b agree.
bool same_prefix(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, size_t bits) {
  const size_t whole_bytes = bits / 8;
  if (!std::equal(a.begin(), a.begin() + whole_bytes, b.begin())) return false;
  const size_t rest = bits % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return ((a[whole_bytes] ^ b[whole_bytes]) & mask) == 0;
}

bool is_ipv6_link_local(const SocketAddress& address) {
  return address.ip[0] == 0xfe && (address.ip[1] & 0xc0) == 0x80;  // fe80::/10
}

// An ARP/ND sender we may hear from: on-link or our gateway of its family
// (which may lie outside a /32 or /128), and not claiming our own address.
bool on_link_sender(const SocketAddress& sender, const InterfaceAddresses& interface) {
  const bool ipv4 = sender.family == AddressFamily::kIpv4;
  const std::optional<SocketAddress>& ours = ipv4 ? interface.ipv4 : interface.ipv6;
  const std::optional<SocketAddress>& gateway = ipv4 ? interface.gateway4 : interface.gateway6;
  if (ours && ours->same_ip(sender)) return false;
  return on_link(sender, interface) || (gateway && gateway->same_ip(sender));
}

rte_be32_t ipv4_bytes(const SocketAddress& address) {
  rte_be32_t value;
  std::memcpy(&value, address.ip.data(), sizeof(value));
  return value;
}
SocketAddress ipv4_address(rte_be32_t network_order, uint16_t port) {
  SocketAddress address;
  address.family = AddressFamily::kIpv4;
  address.port = port;
  std::memcpy(address.ip.data(), &network_order, sizeof(network_order));
  return address;
}
SocketAddress ipv6_address(const uint8_t* bytes, uint16_t port) {
  SocketAddress address;
  address.family = AddressFamily::kIpv6;
  address.port = port;
  std::memcpy(address.ip.data(), bytes, address.ip.size());
  return address;
}

// ff02::1:ffXX:XXXX for the last 24 bits of `address` (RFC 4291 §2.7.1).
std::array<uint8_t, 16> solicited_node(const std::array<uint8_t, 16>& address) {
  std::array<uint8_t, 16> group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  std::copy(address.begin() + 13, address.end(), group.begin() + 13);
  return group;
}
// 33:33 and the group's last 32 bits (RFC 2464 §7).
MacAddress multicast_mac(const std::array<uint8_t, 16>& group) {
  return {0x33, 0x33, group[12], group[13], group[14], group[15]};
}

// The non-complemented sum of an L4 message plus its pseudo-header sum is
// 0xffff exactly when the checksum field inside is right (RFC 1071).
bool l4_checksum_ok(uint16_t pseudo_header_sum, const uint8_t* l4, size_t length) {
  uint32_t sum = uint32_t{pseudo_header_sum} + rte_raw_cksum(l4, length);
  sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

ParsedFrame dropped(ParsedFrame& out, DropReason reason) {
  out.kind = FrameKind::kDrop;
  out.drop = reason;
  return out;
}
ParsedFrame classified(ParsedFrame& out, FrameKind kind) {
  out.kind = kind;
  out.drop = DropReason::kNone;
  return out;
}

// The UDP header at l4 inside an IP payload of `ip_payload` bytes. The
// pseudo-header sum is computed only when the checksum is verified.
template <typename PseudoHeaderSum>
ParsedFrame parse_udp(std::span<const uint8_t> frame, size_t l4, size_t ip_payload,
                      bool zero_checksum_allowed, bool verify, PseudoHeaderSum pseudo_header_sum,
                      ParsedFrame& out) {
  out.l4_offset = static_cast<uint16_t>(l4);
  if (ip_payload < kUdpHeader) return dropped(out, DropReason::kTruncated);
  const auto udp = load<rte_udp_hdr>(frame.data() + l4);
  const size_t udp_length = rte_be_to_cpu_16(udp.dgram_len);
  if (udp_length < kUdpHeader) return dropped(out, DropReason::kMalformed);
  if (udp_length > ip_payload) return dropped(out, DropReason::kTruncated);
  if (udp.dgram_cksum == 0) {
    if (!zero_checksum_allowed) return dropped(out, DropReason::kBadL4Checksum);
  } else if (verify) {
    if (!l4_checksum_ok(pseudo_header_sum(udp_length), frame.data() + l4, udp_length)) {
      return dropped(out, DropReason::kBadL4Checksum);
    }
  }
  out.path.local.port = rte_be_to_cpu_16(udp.dst_port);
  out.path.remote.port = rte_be_to_cpu_16(udp.src_port);
  out.payload_offset = static_cast<uint16_t>(l4 + kUdpHeader);
  out.payload_length = static_cast<uint16_t>(udp_length - kUdpHeader);
  return classified(out, FrameKind::kUdp);
}

ParsedFrame parse_arp(std::span<const uint8_t> frame, const InterfaceAddresses& interface,
                      ParsedFrame& out) {
  out.l3_offset = kEthernetHeader;
  if (frame.size() < kArpFrameLength) return dropped(out, DropReason::kTruncated);
  const auto arp = load<rte_arp_hdr>(frame.data() + kEthernetHeader);
  if (rte_be_to_cpu_16(arp.arp_hardware) != RTE_ARP_HRD_ETHER ||
      rte_be_to_cpu_16(arp.arp_protocol) != RTE_ETHER_TYPE_IPV4 ||
      arp.arp_hlen != RTE_ETHER_ADDR_LEN || arp.arp_plen != sizeof(rte_be32_t)) {
    return dropped(out, DropReason::kMalformed);
  }
  const uint16_t opcode = rte_be_to_cpu_16(arp.arp_opcode);
  if (opcode != RTE_ARP_OP_REQUEST && opcode != RTE_ARP_OP_REPLY) {
    return dropped(out, DropReason::kUnsupportedProtocol);
  }
  if (!has_family(interface.ipv4, AddressFamily::kIpv4)) {
    return dropped(out, DropReason::kNotForUs);
  }
  const rte_be32_t sender_ip = arp.arp_data.arp_sip;
  const bool for_us = arp.arp_data.arp_tip == ipv4_bytes(*interface.ipv4);
  const MacAddress sender_mac = mac_of(arp.arp_data.arp_sha);
  out.sender_mac = sender_mac;
  if (sender_ip != 0) out.sender_ip = ipv4_address(sender_ip, 0);
  if (!for_us) {
    // RFC 826's merge: it may refresh what we hold for its sender, if that
    // sender is one we could have learnt.
    if (sender_ip == 0 || is_multicast(sender_mac) || !on_link_sender(out.sender_ip, interface)) {
      return dropped(out, DropReason::kNotForUs);
    }
    return classified(out, FrameKind::kArpOther);
  }
  // A group address would turn our unicast replies into floods.
  if (is_multicast(sender_mac)) return dropped(out, DropReason::kMalformed);
  if (sender_ip == 0) {
    // An ARP probe (RFC 5227): answered, never learnt.
    if (opcode == RTE_ARP_OP_REPLY) return dropped(out, DropReason::kMalformed);
  } else if (!on_link_sender(out.sender_ip, interface)) {
    return dropped(out, DropReason::kOffLinkSender);
  }
  return classified(out,
                    opcode == RTE_ARP_OP_REQUEST ? FrameKind::kArpRequest : FrameKind::kArpReply);
}

ParsedFrame parse_ipv4(std::span<const uint8_t> frame, const InterfaceAddresses& interface,
                       const ChecksumStatus& checksums, ParsedFrame& out) {
  out.l3_offset = kEthernetHeader;
  if (frame.size() < kIpv4L4Offset) return dropped(out, DropReason::kTruncated);
  const auto ip = load<rte_ipv4_hdr>(frame.data() + kEthernetHeader);
  if ((ip.version_ihl >> 4) != 4) return dropped(out, DropReason::kMalformed);
  const size_t header_length = rte_ipv4_hdr_len(&ip);
  if (header_length < kIpv4Header) return dropped(out, DropReason::kMalformed);
  if (header_length > kIpv4Header) return dropped(out, DropReason::kIpv4Options);
  const size_t total_length = rte_be_to_cpu_16(ip.total_length);
  if (total_length < kIpv4Header) return dropped(out, DropReason::kMalformed);
  // Bytes past total_length are Ethernet padding.
  if (total_length > frame.size() - kEthernetHeader) return dropped(out, DropReason::kTruncated);
  if (!has_family(interface.ipv4, AddressFamily::kIpv4) ||
      ip.dst_addr != ipv4_bytes(*interface.ipv4)) {
    return dropped(out, DropReason::kNotForUs);
  }
  // Over a header with its checksum in place, the complemented sum is 0.
  if (!checksums.ip_verified && rte_ipv4_cksum(&ip) != 0) {
    return dropped(out, DropReason::kBadIpChecksum);
  }
  const uint16_t fragment = rte_be_to_cpu_16(ip.fragment_offset);
  if ((fragment & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0) {
    return dropped(out, DropReason::kIpv4Fragment);
  }
  out.ecn = static_cast<transmit::EcnCodepoint>(ip.type_of_service & RTE_IPV4_HDR_ECN_MASK);
  const size_t ip_payload = total_length - kIpv4Header;
  switch (ip.next_proto_id) {
    case IPPROTO_UDP:
      out.path.local = ipv4_address(ip.dst_addr, 0);
      out.path.remote = ipv4_address(ip.src_addr, 0);
      return parse_udp(
          frame, kIpv4L4Offset, ip_payload, /*zero_checksum_allowed=*/true,
          checksums.verify_udp && !checksums.l4_verified,
          [&ip](size_t udp_length) {
            // The pseudo header carries the UDP length, which may be
            // shorter than the IP payload.
            rte_ipv4_hdr pseudo = ip;
            pseudo.total_length = rte_cpu_to_be_16(static_cast<uint16_t>(kIpv4Header + udp_length));
            return rte_ipv4_phdr_cksum(&pseudo, 0);
          },
          out);
    case IPPROTO_ICMP: {
      out.l4_offset = kIpv4L4Offset;
      if (ip_payload < kIcmpHeader) return dropped(out, DropReason::kTruncated);
      if (!l4_checksum_ok(0, frame.data() + kIpv4L4Offset, ip_payload)) {
        return dropped(out, DropReason::kBadL4Checksum);
      }
      if (frame[kIpv4L4Offset] != RTE_IP_ICMP_ECHO_REQUEST) {
        return dropped(out, DropReason::kUnsupportedProtocol);
      }
      return classified(out, FrameKind::kIcmpEchoRequest);
    }
    default: return dropped(out, DropReason::kUnsupportedProtocol);
  }
}

bool is_ipv6_extension_header(uint8_t next_header) {
  switch (next_header) {
    case IPPROTO_HOPOPTS:
    case IPPROTO_ROUTING:
    case IPPROTO_FRAGMENT:
    case IPPROTO_ESP:
    case IPPROTO_AH:
    case IPPROTO_DSTOPTS:
    case IPPROTO_MH:
    case 139:  // HIP (RFC 7401)
    case 140:  // Shim6 (RFC 5533)
    case 253:  // experimentation (RFC 3692)
    case 254: return true;
    default: return false;
  }
}

// Walks ND options (RFC 4861 §4.6): false when one has length zero or runs
// past the message. `mac` gets the first link-layer option of `wanted`.
bool find_link_layer_option(const uint8_t* options, size_t length, uint8_t wanted,
                            std::optional<MacAddress>& mac) {
  while (length > 0) {
    if (length < 2) return false;
    const size_t option_length = size_t{options[1]} * 8;
    if (option_length == 0 || option_length > length) return false;
    if (options[0] == wanted && !mac) {
      MacAddress found;
      std::memcpy(found.data(), options + 2, found.size());
      mac = found;
    }
    options += option_length;
    length -= option_length;
  }
  return true;
}

enum class Ipv6Destination : uint8_t { kOurs, kSolicitedNode, kAllNodes, kOther };

ParsedFrame parse_neighbour_discovery(std::span<const uint8_t> frame, const rte_ipv6_hdr& ip,
                                      Ipv6Destination destination,
                                      const InterfaceAddresses& interface, ParsedFrame& out) {
  const uint8_t* message = frame.data() + kIpv6L4Offset;
  const size_t length = rte_be_to_cpu_16(ip.payload_len);
  const bool solicitation = message[0] == ND_NEIGHBOR_SOLICIT;
  // RFC 4861 §7.1: only on-link senders (hop limit 255), code 0.
  if (ip.hop_limits != kNdHopLimit || message[1] != 0) return dropped(out, DropReason::kMalformed);
  if (length < kNdMessage) return dropped(out, DropReason::kTruncated);
  const uint8_t* target = message + kNdTargetOffset;
  if (target[0] == 0xff) return dropped(out, DropReason::kMalformed);
  std::optional<MacAddress> link_layer;
  if (!find_link_layer_option(message + kNdMessage, length - kNdMessage,
                              solicitation ? ND_OPT_SOURCE_LINKADDR : ND_OPT_TARGET_LINKADDR,
                              link_layer)) {
    return dropped(out, DropReason::kMalformed);
  }
  const MacAddress sender_mac = link_layer ? *link_layer : out.source_mac;
  if (is_multicast(sender_mac)) return dropped(out, DropReason::kMalformed);
  out.link_layer_option = link_layer.has_value();

  if (solicitation) {
    if (destination != Ipv6Destination::kOurs && destination != Ipv6Destination::kSolicitedNode) {
      return dropped(out, DropReason::kNotForUs);
    }
    if (std::memcmp(target, interface.ipv6->ip.data(), 16) != 0) {
      return dropped(out, DropReason::kNotForUs);
    }
    static constexpr std::array<uint8_t, 16> kUnspecified{};
    const bool from_unspecified = std::memcmp(ip.src_addr, kUnspecified.data(), 16) == 0;
    if (from_unspecified) {
      // Duplicate address detection: to the solicited-node group, no
      // source link-layer option (RFC 4861 §7.1.1); nothing to learn.
      if (destination != Ipv6Destination::kSolicitedNode || link_layer) {
        return dropped(out, DropReason::kMalformed);
      }
    } else {
      out.sender_ip = ipv6_address(ip.src_addr, 0);
      if (!on_link_sender(out.sender_ip, interface)) {
        return dropped(out, DropReason::kOffLinkSender);
      }
    }
    out.sender_mac = sender_mac;
    return classified(out, FrameKind::kNeighbourSolicitation);
  }

  if (destination != Ipv6Destination::kOurs && destination != Ipv6Destination::kAllNodes) {
    return dropped(out, DropReason::kNotForUs);
  }
  // RFC 4861 §7.1.2: a multicast advertisement is never "solicited".
  if (destination == Ipv6Destination::kAllNodes && (message[4] & kNaFlagSolicited) != 0) {
    return dropped(out, DropReason::kMalformed);
  }
  out.sender_ip = ipv6_address(target, 0);
  if (!on_link_sender(out.sender_ip, interface)) return dropped(out, DropReason::kOffLinkSender);
  out.sender_mac = sender_mac;
  out.advert_solicited = (message[4] & kNaFlagSolicited) != 0;
  out.advert_override = (message[4] & kNaFlagOverride) != 0;
  return classified(out, FrameKind::kNeighbourAdvertisement);
}

ParsedFrame parse_ipv6(std::span<const uint8_t> frame, const InterfaceAddresses& interface,
                       const ChecksumStatus& checksums, bool link_multicast, ParsedFrame& out) {
  out.l3_offset = kEthernetHeader;
  if (frame.size() < kIpv6L4Offset) return dropped(out, DropReason::kTruncated);
  const auto ip = load<rte_ipv6_hdr>(frame.data() + kEthernetHeader);
  const uint32_t version_class_flow = rte_be_to_cpu_32(ip.vtc_flow);
  if ((version_class_flow >> 28) != 6) return dropped(out, DropReason::kMalformed);
  const size_t payload_length = rte_be_to_cpu_16(ip.payload_len);
  if (payload_length > frame.size() - kIpv6L4Offset) return dropped(out, DropReason::kTruncated);
  if (!has_family(interface.ipv6, AddressFamily::kIpv6)) return dropped(out, DropReason::kNotForUs);

  const std::array<uint8_t, 16>& ours = interface.ipv6->ip;
  Ipv6Destination destination = Ipv6Destination::kOther;
  if (std::memcmp(ip.dst_addr, ours.data(), 16) == 0) {
    destination = Ipv6Destination::kOurs;
  } else if (std::memcmp(ip.dst_addr, solicited_node(ours).data(), 16) == 0) {
    destination = Ipv6Destination::kSolicitedNode;
  } else if (std::memcmp(ip.dst_addr, kAllNodesGroup.data(), 16) == 0) {
    destination = Ipv6Destination::kAllNodes;
  }
  if (destination == Ipv6Destination::kOther) return dropped(out, DropReason::kNotForUs);
  // Group-addressed frames are only for neighbour discovery; all else must
  // reach us unicast (replies swap the addresses).
  const bool unicast_to_us = destination == Ipv6Destination::kOurs && !link_multicast;

  out.ecn = static_cast<transmit::EcnCodepoint>((version_class_flow & RTE_IPV6_HDR_ECN_MASK) >>
                                                RTE_IPV6_HDR_TC_SHIFT);
  switch (ip.proto) {
    case IPPROTO_UDP:
      if (!unicast_to_us) return dropped(out, DropReason::kNotForUs);
      out.path.local = ipv6_address(ip.dst_addr, 0);
      out.path.remote = ipv6_address(ip.src_addr, 0);
      // RFC 8200 §8.1: a zero UDP checksum is invalid over IPv6.
      return parse_udp(
          frame, kIpv6L4Offset, payload_length, /*zero_checksum_allowed=*/false,
          checksums.verify_udp && !checksums.l4_verified,
          [&ip](size_t udp_length) {
            rte_ipv6_hdr pseudo = ip;
            pseudo.payload_len = rte_cpu_to_be_16(static_cast<uint16_t>(udp_length));
            return rte_ipv6_phdr_cksum(&pseudo, 0);
          },
          out);
    case IPPROTO_ICMPV6: {
      out.l4_offset = kIpv6L4Offset;
      if (payload_length < kIcmpHeader) return dropped(out, DropReason::kTruncated);
      if (!l4_checksum_ok(rte_ipv6_phdr_cksum(&ip, 0), frame.data() + kIpv6L4Offset,
                          payload_length)) {
        return dropped(out, DropReason::kBadL4Checksum);
      }
      switch (frame[kIpv6L4Offset]) {
        case ICMP6_ECHO_REQUEST:
          if (!unicast_to_us) return dropped(out, DropReason::kNotForUs);
          return classified(out, FrameKind::kIcmp6EchoRequest);
        case ND_NEIGHBOR_SOLICIT:
        case ND_NEIGHBOR_ADVERT:
          return parse_neighbour_discovery(frame, ip, destination, interface, out);
        default: return dropped(out, DropReason::kUnsupportedProtocol);
      }
    }
    default:
      return dropped(out, is_ipv6_extension_header(ip.proto) ? DropReason::kIpv6ExtensionHeader
                                                             : DropReason::kUnsupportedProtocol);
  }
}

void write_ethernet(uint8_t* frame, const MacAddress& destination, const MacAddress& source,
                    uint16_t ether_type) {
  rte_ether_hdr ethernet;
  ethernet.dst_addr = ether_of(destination);
  ethernet.src_addr = ether_of(source);
  ethernet.ether_type = rte_cpu_to_be_16(ether_type);
  store(frame, ethernet);
}

// An IPv6 header with traffic class `ecn` (DSCP 0) and flow label 0.
rte_ipv6_hdr ipv6_header(uint8_t traffic_class, size_t payload_length, uint8_t next_header,
                         uint8_t hop_limit, const std::array<uint8_t, 16>& source,
                         const std::array<uint8_t, 16>& destination) {
  rte_ipv6_hdr ip;
  ip.vtc_flow = rte_cpu_to_be_32((6u << 28) | (uint32_t{traffic_class} << RTE_IPV6_HDR_TC_SHIFT));
  ip.payload_len = rte_cpu_to_be_16(static_cast<uint16_t>(payload_length));
  ip.proto = next_header;
  ip.hop_limits = hop_limit;
  std::memcpy(ip.src_addr, source.data(), 16);
  std::memcpy(ip.dst_addr, destination.data(), 16);
  return ip;
}

// Writes an ND message (NS or NA: type, flags byte, target, one link-layer
// option with our MAC) with its ICMPv6 checksum after `ip`.
size_t write_neighbour_discovery(uint8_t* frame, const rte_ipv6_hdr& ip, uint8_t type,
                                 uint8_t flags, const std::array<uint8_t, 16>& target,
                                 uint8_t option_type, const MacAddress& mac) {
  store(frame + kEthernetHeader, ip);
  uint8_t* message = frame + kIpv6L4Offset;
  std::memset(message, 0, kNdMessage + kNdLinkLayerOption);
  message[0] = type;
  message[4] = flags;
  std::memcpy(message + kNdTargetOffset, target.data(), target.size());
  message[kNdMessage] = option_type;
  message[kNdMessage + 1] = 1;  // in units of 8 bytes
  std::memcpy(message + kNdMessage + 2, mac.data(), mac.size());
  // Generic L4 sum over the pseudo header (next header 58 from `ip`).
  const uint16_t checksum = rte_ipv6_udptcp_cksum(&ip, message);
  store(message + offsetof(rte_icmp_hdr, icmp_cksum), checksum);
  return kNdFrameLength;
}

}  // namespace

const char* drop_reason_name(DropReason reason) {
  switch (reason) {
    case DropReason::kNone: return "none";
    case DropReason::kTruncated: return "truncated";
    case DropReason::kUnsupportedEtherType: return "unsupported_ether_type";
    case DropReason::kNotForUs: return "not_for_us";
    case DropReason::kIpv4Options: return "ipv4_options";
    case DropReason::kIpv4Fragment: return "ipv4_fragment";
    case DropReason::kIpv6ExtensionHeader: return "ipv6_extension_header";
    case DropReason::kBadIpChecksum: return "bad_ip_checksum";
    case DropReason::kBadL4Checksum: return "bad_l4_checksum";
    case DropReason::kUnsupportedProtocol: return "unsupported_protocol";
    case DropReason::kMalformed: return "malformed";
    case DropReason::kOffLinkSender: return "off_link_sender";
    case DropReason::kCount: break;
  }
  return "unknown";
}

ParsedFrame parse_frame(std::span<const uint8_t> frame, const InterfaceAddresses& interface,
                        const ChecksumStatus& checksums) {
  ParsedFrame out;
  if (frame.size() < kEthernetHeader) return dropped(out, DropReason::kTruncated);
  const auto ethernet = load<rte_ether_hdr>(frame.data());
  out.source_mac = mac_of(ethernet.src_addr);
  // IEEE 802: a source is always an individual address.
  if (is_multicast(out.source_mac)) return dropped(out, DropReason::kMalformed);
  const MacAddress destination = mac_of(ethernet.dst_addr);
  const bool to_us = destination == interface.mac;
  const bool broadcast = destination == kBroadcastMac;
  const bool ipv6_multicast = destination[0] == 0x33 && destination[1] == 0x33;
  if (!to_us && !broadcast && !ipv6_multicast) return dropped(out, DropReason::kNotForUs);
  // A VLAN tag (0x8100, 0x88a8) lands here too: ports run untagged.
  switch (rte_be_to_cpu_16(ethernet.ether_type)) {
    case RTE_ETHER_TYPE_ARP:
      if (!to_us && !broadcast) return dropped(out, DropReason::kNotForUs);
      return parse_arp(frame, interface, out);
    case RTE_ETHER_TYPE_IPV4:
      if (!to_us) return dropped(out, DropReason::kNotForUs);
      return parse_ipv4(frame, interface, checksums, out);
    case RTE_ETHER_TYPE_IPV6:
      if (!to_us && !ipv6_multicast) return dropped(out, DropReason::kNotForUs);
      return parse_ipv6(frame, interface, checksums, /*link_multicast=*/!to_us, out);
    default: return dropped(out, DropReason::kUnsupportedEtherType);
  }
}

bool on_link(const conn::SocketAddress& address, const InterfaceAddresses& interface) {
  switch (address.family) {
    case AddressFamily::kIpv4:
      return has_family(interface.ipv4, AddressFamily::kIpv4) &&
             same_prefix(address.ip, interface.ipv4->ip,
                         std::min<size_t>(interface.ipv4_prefix, 32));
    case AddressFamily::kIpv6:
      if (!has_family(interface.ipv6, AddressFamily::kIpv6)) return false;
      return is_ipv6_link_local(address) ||
             same_prefix(address.ip, interface.ipv6->ip,
                         std::min<size_t>(interface.ipv6_prefix, 128));
    case AddressFamily::kNone: break;
  }
  return false;
}

size_t udp_header_length(conn::AddressFamily family) {
  switch (family) {
    case AddressFamily::kIpv4: return kIpv4L4Offset + kUdpHeader;
    case AddressFamily::kIpv6: return kIpv6L4Offset + kUdpHeader;
    case AddressFamily::kNone: break;
  }
  return 0;
}

namespace {

// DPDK's UDP checksums over the whole datagram, compiled twice: the
// baseline build, and an AVX2 one for CPUs that have it (DPDK's 16-bit sum
// loop vectorizes twice as wide), picked once at run time. On ports
// without checksum offload this is the one pass over every sent byte
// besides the AEAD.
__attribute__((target("avx2"))) uint16_t udp_checksum_ipv4_avx2(const rte_ipv4_hdr& ip,
                                                                const uint8_t* l4) {
  return rte_ipv4_udptcp_cksum(&ip, l4);
}
__attribute__((target("avx2"))) uint16_t udp_checksum_ipv6_avx2(const rte_ipv6_hdr& ip,
                                                                const uint8_t* l4) {
  return rte_ipv6_udptcp_cksum(&ip, l4);
}
bool cpu_has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
uint16_t udp_checksum_ipv4(const rte_ipv4_hdr& ip, const uint8_t* l4) {
  return cpu_has_avx2() ? udp_checksum_ipv4_avx2(ip, l4) : rte_ipv4_udptcp_cksum(&ip, l4);
}
uint16_t udp_checksum_ipv6(const rte_ipv6_hdr& ip, const uint8_t* l4) {
  return cpu_has_avx2() ? udp_checksum_ipv6_avx2(ip, l4) : rte_ipv6_udptcp_cksum(&ip, l4);
}

}  // namespace

void write_udp_headers(uint8_t* frame, size_t payload_length, const UdpFrameSpec& spec) {
  const SocketAddress& local = spec.path.local;
  const SocketAddress& remote = spec.path.remote;
  const bool ipv6 = local.family == AddressFamily::kIpv6;
  const size_t l4 = ipv6 ? kIpv6L4Offset : kIpv4L4Offset;
  const size_t udp_length = kUdpHeader + payload_length;
  const uint8_t ecn = static_cast<uint8_t>(spec.ecn);
  write_ethernet(frame, spec.destination_mac, spec.source_mac,
                 ipv6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);

  rte_udp_hdr udp;
  udp.src_port = rte_cpu_to_be_16(local.port);
  udp.dst_port = rte_cpu_to_be_16(remote.port);
  udp.dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(udp_length));
  udp.dgram_cksum = 0;
  store(frame + l4, udp);

  // Checksums are stored as computed: DPDK sums native 16-bit loads, so the
  // value is already in the byte order of the frame.
  uint16_t udp_checksum;
  if (ipv6) {
    const rte_ipv6_hdr ip =
        ipv6_header(ecn, udp_length, IPPROTO_UDP, spec.hop_limit, local.ip, remote.ip);
    store(frame + kEthernetHeader, ip);
    // With the offload the NIC completes the pseudo-header sum we leave.
    udp_checksum = spec.offload_udp_checksum
                       ? rte_ipv6_phdr_cksum(&ip, RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM)
                       : udp_checksum_ipv6(ip, frame + l4);
  } else {
    rte_ipv4_hdr ip;
    ip.version_ihl = RTE_IPV4_VHL_DEF;
    ip.type_of_service = ecn;
    ip.total_length = rte_cpu_to_be_16(static_cast<uint16_t>(kIpv4Header + udp_length));
    ip.packet_id = rte_cpu_to_be_16(spec.ipv4_id);
    ip.fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
    ip.time_to_live = spec.hop_limit;
    ip.next_proto_id = IPPROTO_UDP;
    ip.hdr_checksum = 0;
    ip.src_addr = ipv4_bytes(local);
    ip.dst_addr = ipv4_bytes(remote);
    if (!spec.offload_ip_checksum) ip.hdr_checksum = rte_ipv4_cksum(&ip);
    store(frame + kEthernetHeader, ip);
    const uint64_t offload_flags =
        RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM |
        (spec.offload_ip_checksum ? RTE_MBUF_F_TX_IP_CKSUM : uint64_t{0});
    // rte_ipv4_udptcp_cksum sends a computed 0 as 0xffff (RFC 768).
    udp_checksum = spec.offload_udp_checksum ? rte_ipv4_phdr_cksum(&ip, offload_flags)
                                             : udp_checksum_ipv4(ip, frame + l4);
  }
  store(frame + l4 + offsetof(rte_udp_hdr, dgram_cksum), udp_checksum);
}

size_t write_arp_reply(std::span<uint8_t> frame, const ParsedFrame& request,
                       const InterfaceAddresses& interface) {
  if (request.kind != FrameKind::kArpRequest || frame.size() < kArpFrameLength ||
      !has_family(interface.ipv4, AddressFamily::kIpv4)) {
    return 0;
  }
  uint8_t* arp_bytes = frame.data() + kEthernetHeader;
  auto arp = load<rte_arp_hdr>(arp_bytes);
  // RFC 826: the requester becomes the target; we answer for the address
  // it asked about (ours, as parse_frame checked).
  arp.arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
  arp.arp_data.arp_tha = arp.arp_data.arp_sha;
  arp.arp_data.arp_tip = arp.arp_data.arp_sip;
  arp.arp_data.arp_sha = ether_of(interface.mac);
  arp.arp_data.arp_sip = ipv4_bytes(*interface.ipv4);
  write_ethernet(frame.data(), request.sender_mac, interface.mac, RTE_ETHER_TYPE_ARP);
  store(arp_bytes, arp);
  return kArpFrameLength;
}

size_t write_neighbour_advertisement(std::span<uint8_t> frame, const ParsedFrame& solicitation,
                                     const InterfaceAddresses& interface) {
  if (solicitation.kind != FrameKind::kNeighbourSolicitation || frame.size() < kNdFrameLength ||
      !has_family(interface.ipv6, AddressFamily::kIpv6)) {
    return 0;
  }
  // RFC 4861 §7.2.4: answer the soliciting address, or all nodes (and not
  // "solicited") when it was the unspecified address.
  const bool solicited = solicitation.sender_ip.valid();
  const std::array<uint8_t, 16>& destination =
      solicited ? solicitation.sender_ip.ip : kAllNodesGroup;
  const MacAddress destination_mac = solicited ? solicitation.sender_mac : kAllNodesMac;
  const std::array<uint8_t, 16>& ours = interface.ipv6->ip;
  write_ethernet(frame.data(), destination_mac, interface.mac, RTE_ETHER_TYPE_IPV6);
  const rte_ipv6_hdr ip = ipv6_header(0, kNdMessage + kNdLinkLayerOption, IPPROTO_ICMPV6,
                                      kNdHopLimit, ours, destination);
  const uint8_t flags = static_cast<uint8_t>((solicited ? kNaFlagSolicited : 0) | kNaFlagOverride);
  return write_neighbour_discovery(frame.data(), ip, ND_NEIGHBOR_ADVERT, flags, ours,
                                   ND_OPT_TARGET_LINKADDR, interface.mac);
}

size_t write_icmp_echo_reply(std::span<uint8_t> frame, const ParsedFrame& request) {
  const bool ipv4 = request.kind == FrameKind::kIcmpEchoRequest;
  if (!ipv4 && request.kind != FrameKind::kIcmp6EchoRequest) return 0;
  if (frame.size() < (ipv4 ? kIpv4L4Offset : kIpv6L4Offset)) return 0;

  // parse_frame accepted the request only unicast to our MAC, so swapping
  // the link addresses makes ours the source.
  auto ethernet = load<rte_ether_hdr>(frame.data());
  std::swap(ethernet.dst_addr, ethernet.src_addr);
  uint8_t* l3 = frame.data() + kEthernetHeader;
  uint8_t* message;
  size_t reply_length;
  if (ipv4) {
    auto ip = load<rte_ipv4_hdr>(l3);
    const size_t total_length = rte_be_to_cpu_16(ip.total_length);
    if (total_length < kIpv4Header + kIcmpHeader || frame.size() - kEthernetHeader < total_length) {
      return 0;
    }
    const rte_be32_t source = ip.src_addr;
    ip.src_addr = ip.dst_addr;
    ip.dst_addr = source;
    ip.time_to_live = kReplyHopLimit;
    ip.hdr_checksum = 0;
    ip.hdr_checksum = rte_ipv4_cksum(&ip);
    store(l3, ip);
    message = frame.data() + kIpv4L4Offset;
    message[0] = RTE_IP_ICMP_ECHO_REPLY;
    store<uint16_t>(message + offsetof(rte_icmp_hdr, icmp_cksum), 0);
    const size_t message_length = total_length - kIpv4Header;
    const uint16_t checksum = static_cast<uint16_t>(~rte_raw_cksum(message, message_length));
    store(message + offsetof(rte_icmp_hdr, icmp_cksum), checksum);
    reply_length = kEthernetHeader + total_length;
  } else {
    auto ip = load<rte_ipv6_hdr>(l3);
    const size_t payload_length = rte_be_to_cpu_16(ip.payload_len);
    if (payload_length < kIcmpHeader || frame.size() - kIpv6L4Offset < payload_length) return 0;
    uint8_t source[16];
    std::memcpy(source, ip.src_addr, 16);
    std::memcpy(ip.src_addr, ip.dst_addr, 16);
    std::memcpy(ip.dst_addr, source, 16);
    ip.hop_limits = kReplyHopLimit;
    store(l3, ip);
    message = frame.data() + kIpv6L4Offset;
    message[0] = ICMP6_ECHO_REPLY;
    store<uint16_t>(message + offsetof(rte_icmp_hdr, icmp_cksum), 0);
    const uint16_t checksum = rte_ipv6_udptcp_cksum(&ip, message);
    store(message + offsetof(rte_icmp_hdr, icmp_cksum), checksum);
    reply_length = kIpv6L4Offset + payload_length;
  }
  store(frame.data(), ethernet);
  return reply_length;
}

size_t write_arp_request(std::span<uint8_t> out, const conn::SocketAddress& target,
                         const InterfaceAddresses& interface) {
  if (out.size() < kArpFrameLength || target.family != AddressFamily::kIpv4 ||
      !has_family(interface.ipv4, AddressFamily::kIpv4)) {
    return 0;
  }
  write_ethernet(out.data(), kBroadcastMac, interface.mac, RTE_ETHER_TYPE_ARP);
  rte_arp_hdr arp;
  arp.arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
  arp.arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  arp.arp_hlen = RTE_ETHER_ADDR_LEN;
  arp.arp_plen = sizeof(rte_be32_t);
  arp.arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
  arp.arp_data.arp_sha = ether_of(interface.mac);
  arp.arp_data.arp_sip = ipv4_bytes(*interface.ipv4);
  arp.arp_data.arp_tha = ether_of(MacAddress{});
  arp.arp_data.arp_tip = ipv4_bytes(target);
  store(out.data() + kEthernetHeader, arp);
  return kArpFrameLength;
}

size_t write_neighbour_solicitation(std::span<uint8_t> out, const conn::SocketAddress& target,
                                    const InterfaceAddresses& interface) {
  if (out.size() < kNdFrameLength || target.family != AddressFamily::kIpv6 ||
      !has_family(interface.ipv6, AddressFamily::kIpv6)) {
    return 0;
  }
  const std::array<uint8_t, 16> group = solicited_node(target.ip);
  write_ethernet(out.data(), multicast_mac(group), interface.mac, RTE_ETHER_TYPE_IPV6);
  const rte_ipv6_hdr ip = ipv6_header(0, kNdMessage + kNdLinkLayerOption, IPPROTO_ICMPV6,
                                      kNdHopLimit, interface.ipv6->ip, group);
  return write_neighbour_discovery(out.data(), ip, ND_NEIGHBOR_SOLICIT, 0, target.ip,
                                   ND_OPT_SOURCE_LINKADDR, interface.mac);
}

}  // namespace dpquic::dataplane::dpdk
