#pragma once
// Ethernet/IPv4/IPv6/UDP frames as the DPDK backend sees them, parsed and
// written with DPDK's own header definitions (rte_ether.h, rte_ip.h,
// rte_udp.h, rte_arp.h, rte_icmp.h). Everything works on plain byte spans,
// so it is tested without EAL, and the shard hands it mbuf data areas.
//
// Nothing here allocates or throws: a frame that is not for us, malformed,
// fragmented or carrying IP options is a kDrop with a reason the shard counts.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "quic/conn/socket_address.h"
#include "quic/transmit/burst.h"

namespace dpquic::dataplane::dpdk {

using MacAddress = std::array<uint8_t, 6>;

// The addresses the engine owns on one port (the kernel owns none of them).
// SocketAddress ports are unused here.
struct InterfaceAddresses {
  MacAddress mac{};
  std::optional<conn::SocketAddress> ipv4;
  uint8_t ipv4_prefix = 32;
  std::optional<conn::SocketAddress> ipv6;
  uint8_t ipv6_prefix = 128;
  // Next hops for peers outside the prefixes.
  std::optional<conn::SocketAddress> gateway4;
  std::optional<conn::SocketAddress> gateway6;
};

// What each ARP/ND kind may teach a neighbour cache is learn_from_frame's
// (neighbour_cache.h); parse_frame only vouches for its sender (below).
enum class FrameKind : uint8_t {
  kUdp,                     // UDP to one of our addresses: path, ecn, payload set
  kArpRequest,              // asks for our IPv4 address: answer with write_arp_reply
  kArpReply,                // an answer to us: sender_ip -> sender_mac
  kArpOther,                // a request or reply for another address (RFC 826 merge)
  kNeighbourSolicitation,   // asks for our IPv6 address: answer in place
  kNeighbourAdvertisement,  // sender_ip (the target) -> sender_mac, with its flags
  kIcmpEchoRequest,         // IPv4 ping to us: answer in place
  kIcmp6EchoRequest,        // IPv6 ping to us: answer in place
  kDrop,
};

enum class DropReason : uint8_t {
  kNone = 0,
  kTruncated,  // shorter than its headers or than the IP/UDP length says
  kUnsupportedEtherType,
  kNotForUs,             // wrong destination MAC or IP, or ARP/ND for another address
  kIpv4Options,          // IHL > 5
  kIpv4Fragment,         // MF set or a non-zero fragment offset
  kIpv6ExtensionHeader,  // next header is an extension header (fragments included)
  kBadIpChecksum,
  kBadL4Checksum,        // UDP, ICMP or ICMPv6
  kUnsupportedProtocol,  // other IP protocols, other ICMP types, other ARP opcodes
  kMalformed,            // bad IP version/lengths, UDP length < 8, bad ARP/ND fields
                         // (hop limit != 255 for ND, group sender address, ...), a group
                         // Ethernet source
  kOffLinkSender,        // ARP/ND for us from an address outside our prefix that is not
                         // our gateway, or claiming our own address
  kCount,
};

const char* drop_reason_name(DropReason reason);

struct ParsedFrame {
  FrameKind kind = FrameKind::kDrop;
  DropReason drop = DropReason::kNone;
  MacAddress source_mac{};
  // kUdp: local = our address and the destination port, remote = the sender.
  conn::PathAddresses path;
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  uint16_t l3_offset = 0;       // IP (or ARP) header
  uint16_t l4_offset = 0;       // UDP / ICMP / ICMPv6 header
  uint16_t payload_offset = 0;  // kUdp: the UDP payload
  uint16_t payload_length = 0;
  // ARP and ND: the neighbour (sender IP, its link-layer address; the
  // source MAC when ND carries no link-layer option). sender_ip is left
  // invalid (nothing to learn, but still answer) for an ARP probe from
  // 0.0.0.0 and a duplicate-address-detection NS from ::. A valid sender_ip
  // is on-link (on_link, or our gateway) and not ours; sender_mac and
  // source_mac are individual (unicast) addresses.
  conn::SocketAddress sender_ip;
  MacAddress sender_mac{};
  // ND: sender_mac came from a source/target link-layer option.
  bool link_layer_option = false;
  // kNeighbourAdvertisement: its Solicited and Override flags (RFC 4861 §4.4).
  bool advert_solicited = false;
  bool advert_override = false;
};

struct ChecksumStatus {
  // Set when the NIC verified the checksum (RTE_MBUF_F_RX_*_CKSUM_GOOD):
  // the software check is skipped.
  bool ip_verified = false;
  bool l4_verified = false;
  // Off: UDP checksums are not verified in software (QUIC's AEAD rejects
  // corrupted payloads anyway); IPv4 header and ICMP checksums always are.
  bool verify_udp = true;
};

// True when `address` is inside our prefix of its family (IPv6 link-local
// fe80::/10 always, RFC 4291), so it is reached without a gateway. False
// when we have no address of that family.
bool on_link(const conn::SocketAddress& address, const InterfaceAddresses& interface);

// Classifies one received frame. Accepts unicast to interface.mac, broadcast
// (ARP) and IPv6 multicast (solicited-node ND) from an individual source MAC
// (IEEE 802: a group address is never a source); UDP and ICMP only to our
// addresses. ARP and ND senders outside our prefix (and not our gateway)
// are dropped (kOffLinkSender; ARP for another address: kNotForUs). A UDP
// datagram with a zero IPv4 checksum field is accepted (RFC 768); over IPv6
// a zero UDP checksum is dropped (RFC 8200 §8.1). Group-addressed IPv6
// (33:33 MAC, solicited-node or all-nodes address) is accepted for NS/NA
// only, so echo requests reached us unicast. Bytes past the IP length
// (Ethernet padding) are ignored; a UDP length shorter than the IP payload
// bounds the payload.
ParsedFrame parse_frame(std::span<const uint8_t> frame, const InterfaceAddresses& interface,
                        const ChecksumStatus& checksums);

// Ethernet + IPv4 + UDP (42) or Ethernet + IPv6 + UDP (62) bytes; 0 for
// AddressFamily::kNone.
size_t udp_header_length(conn::AddressFamily family);
inline constexpr size_t kMaxUdpHeaderLength = 62;

struct UdpFrameSpec {
  MacAddress source_mac{};
  MacAddress destination_mac{};
  conn::PathAddresses path;  // local = source
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  uint8_t hop_limit = 64;
  uint16_t ipv4_id = 0;
  // Offloads: the IPv4 header checksum is left zero for the NIC; the UDP
  // checksum field gets the pseudo-header sum the NIC completes (as
  // rte_ipv4_phdr_cksum / rte_ipv6_phdr_cksum give it).
  bool offload_ip_checksum = false;
  bool offload_udp_checksum = false;
};

// Writes the headers into frame[0, udp_header_length) for a UDP payload of
// `payload_length` bytes already at frame + udp_header_length. IPv4 has DF
// set (QUIC's path MTU discovery needs unfragmented datagrams). Without
// offload_udp_checksum the UDP checksum is computed over the payload:
// write_udp_headers_for_offload then complete_udp_checksum.
void write_udp_headers(uint8_t* frame, size_t payload_length, const UdpFrameSpec& spec);

// The headers as a port with UDP checksum offload gets them, whatever
// spec.offload_udp_checksum says: the UDP checksum field holds the
// pseudo-header sum the NIC completes. The two steps are separate so that
// the shard can count the software checksum, one pass over every byte
// sent, apart from what every port costs.
void write_udp_headers_for_offload(uint8_t* frame, size_t payload_length, const UdpFrameSpec& spec);
// Completes in software the UDP checksum of a frame written by
// write_udp_headers_for_offload: the one's-complement sum of the UDP header
// (its checksum field holding the pseudo-header sum) and payload, a
// computed 0 sent as 0xffff (RFC 768).
void complete_udp_checksum(uint8_t* frame, conn::AddressFamily family);

// In-place answers: `frame` holds the request parse_frame classified (its
// whole buffer, at least as long as the request); returns the reply's
// length (0: cannot answer, e.g. the buffer is too short).
size_t write_arp_reply(std::span<uint8_t> frame, const ParsedFrame& request,
                       const InterfaceAddresses& interface);
size_t write_neighbour_advertisement(std::span<uint8_t> frame, const ParsedFrame& solicitation,
                                     const InterfaceAddresses& interface);
size_t write_icmp_echo_reply(std::span<uint8_t> frame, const ParsedFrame& request);

// Requests for resolving `target` (IPv4: broadcast ARP; IPv6: NS to the
// solicited-node multicast address with our link-layer option). Return the
// length written into `out` (0: too short or no source address of that
// family).
size_t write_arp_request(std::span<uint8_t> out, const conn::SocketAddress& target,
                         const InterfaceAddresses& interface);
size_t write_neighbour_solicitation(std::span<uint8_t> out, const conn::SocketAddress& target,
                                    const InterfaceAddresses& interface);

}  // namespace dpquic::dataplane::dpdk
