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

#include "dataplane/dpdk/frame_layout.h"

namespace dpquic::dataplane::dpdk {
namespace {

using namespace frame_layout;  // NOLINT: the private vocabulary of frame parsing

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

// Which of our addresses an IPv6 packet is for.
Ipv6Destination ipv6_destination(const uint8_t* destination, const std::array<uint8_t, 16>& ours) {
  if (std::memcmp(destination, ours.data(), 16) == 0) return Ipv6Destination::kOurs;
  if (std::memcmp(destination, solicited_node(ours).data(), 16) == 0) {
    return Ipv6Destination::kSolicitedNode;
  }
  if (std::memcmp(destination, kAllNodesGroup.data(), 16) == 0) return Ipv6Destination::kAllNodes;
  return Ipv6Destination::kOther;
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

  const Ipv6Destination destination = ipv6_destination(ip.dst_addr, interface.ipv6->ip);
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

}  // namespace dpquic::dataplane::dpdk
