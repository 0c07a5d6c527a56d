// Writing frames: UDP/IP headers for every datagram sent, and the ARP, ND
// and ICMP echo replies and requests a shard sends.
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <rte_mbuf_core.h>

#include "dataplane/dpdk/frame.h"
#include "dataplane/dpdk/frame_layout.h"

namespace dpquic::dataplane::dpdk {
namespace {

using namespace frame_layout;  // NOLINT: the private vocabulary of frame writing

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

// DPDK's 16-bit one's-complement sum over the UDP header and payload,
// compiled twice: the baseline build, and an AVX2 one for CPUs that have it
// (the sum loop vectorizes twice as wide), picked once at run time. On
// ports without checksum offload this is the one pass over every sent byte
// besides the AEAD.
__attribute__((target("avx2"))) uint16_t raw_sum_avx2(const uint8_t* l4, size_t length) {
  return rte_raw_cksum(l4, length);
}
uint16_t raw_sum(const uint8_t* l4, size_t length) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? raw_sum_avx2(l4, length) : rte_raw_cksum(l4, length);
}

}  // namespace

size_t udp_header_length(conn::AddressFamily family) {
  switch (family) {
    case AddressFamily::kIpv4: return kIpv4L4Offset + kUdpHeader;
    case AddressFamily::kIpv6: return kIpv6L4Offset + kUdpHeader;
    case AddressFamily::kNone: break;
  }
  return 0;
}

void write_udp_headers_for_offload(uint8_t* frame, size_t payload_length,
                                   const UdpFrameSpec& spec) {
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
  // Checksums are stored as computed: DPDK sums native 16-bit loads, so the
  // value is already in the byte order of the frame.
  if (ipv6) {
    const rte_ipv6_hdr ip =
        ipv6_header(ecn, udp_length, IPPROTO_UDP, spec.hop_limit, local.ip, remote.ip);
    store(frame + kEthernetHeader, ip);
    udp.dgram_cksum = rte_ipv6_phdr_cksum(&ip, RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM);
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
    udp.dgram_cksum = rte_ipv4_phdr_cksum(&ip, RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM);
  }
  store(frame + l4, udp);
}

void complete_udp_checksum(uint8_t* frame, AddressFamily family) {
  uint8_t* udp = frame + (family == AddressFamily::kIpv6 ? kIpv6L4Offset : kIpv4L4Offset);
  const size_t udp_length = rte_be_to_cpu_16(load<rte_udp_hdr>(udp).dgram_len);
  // The sum includes the field, which holds the pseudo-header sum: their
  // one's-complement total is the checksum's.
  uint16_t checksum = static_cast<uint16_t>(~raw_sum(udp, udp_length));
  if (checksum == 0) checksum = 0xffff;
  store(udp + offsetof(rte_udp_hdr, dgram_cksum), checksum);
}

void write_udp_headers(uint8_t* frame, size_t payload_length, const UdpFrameSpec& spec) {
  write_udp_headers_for_offload(frame, payload_length, spec);
  if (!spec.offload_udp_checksum) complete_udp_checksum(frame, spec.path.local.family);
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
