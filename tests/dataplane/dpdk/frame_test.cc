// parse_frame: every FrameKind and DropReason, on frames built by hand.
#include "dataplane/dpdk/frame.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "tests/dataplane/dpdk/frame_test_util.h"

namespace dpquic::dataplane::dpdk {
namespace {

using namespace testing;  // NOLINT: the frame builders
using transmit::EcnCodepoint;

ParsedFrame parse(const Bytes& frame, const ChecksumStatus& checksums = {}) {
  return parse_frame(frame, our_interface(), checksums);
}

void expect_drop(const Bytes& frame, DropReason reason, const ChecksumStatus& checksums = {}) {
  const ParsedFrame parsed = parse(frame, checksums);
  EXPECT_EQ(parsed.kind, FrameKind::kDrop);
  EXPECT_EQ(parsed.drop, reason) << drop_reason_name(parsed.drop) << " instead of "
                                 << drop_reason_name(reason);
}

const Bytes kPayload = {'q', 'u', 'i', 'c', 0x00, 0xff, 0x10};

TEST(DropReasonNameTest, EveryReasonHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(DropReason::kCount); ++i) {
    const std::string name = drop_reason_name(static_cast<DropReason>(i));
    EXPECT_NE(name, "unknown");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(DropReason::kCount));
  EXPECT_STREQ(drop_reason_name(DropReason::kNone), "none");
  EXPECT_STREQ(drop_reason_name(DropReason::kBadL4Checksum), "bad_l4_checksum");
  EXPECT_STREQ(drop_reason_name(DropReason::kCount), "unknown");
}

// --- IPv4 UDP ---

TEST(ParseIpv4Test, UdpGivesPathEcnAndPayload) {
  Ipv4Fields fields;
  fields.tos = 0xb8 | 0b10;  // DSCP EF, ECT(0)
  const Bytes frame = ipv4_udp_frame(kPayload, 50000, 443, fields);
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kUdp) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.drop, DropReason::kNone);
  EXPECT_EQ(parsed.source_mac, kPeerMac);
  EXPECT_EQ(parsed.path.local, v4(kOurIp4, 443));
  EXPECT_EQ(parsed.path.remote, v4(kPeerIp4, 50000));
  EXPECT_EQ(parsed.ecn, EcnCodepoint::kEct0);
  EXPECT_EQ(parsed.l3_offset, 14);
  EXPECT_EQ(parsed.l4_offset, 34);
  EXPECT_EQ(parsed.payload_offset, 42);
  EXPECT_EQ(parsed.payload_length, kPayload.size());
  EXPECT_EQ(Bytes(frame.begin() + 42, frame.end()), kPayload);
}

TEST(ParseIpv4Test, EveryEcnCodepoint) {
  for (uint8_t ecn = 0; ecn < 4; ++ecn) {
    Ipv4Fields fields;
    fields.tos = static_cast<uint8_t>(0x20 | ecn);
    const ParsedFrame parsed = parse(ipv4_udp_frame(kPayload, 1, 2, fields));
    ASSERT_EQ(parsed.kind, FrameKind::kUdp);
    EXPECT_EQ(static_cast<uint8_t>(parsed.ecn), ecn);
  }
}

TEST(ParseIpv4Test, EthernetPaddingIsIgnored) {
  const Bytes payload = {1, 2, 3, 4};
  Bytes frame = ipv4_udp_frame(payload);
  ASSERT_EQ(frame.size(), 46u);
  frame.resize(60, 0xee);  // minimum Ethernet frame, padded with junk
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kUdp);
  EXPECT_EQ(parsed.payload_length, 4);
}

TEST(ParseIpv4Test, UdpLengthShorterThanIpPayloadBoundsThePayload) {
  // A 3-byte datagram inside an IP payload with 5 extra bytes; the UDP
  // checksum covers only the UDP length.
  const Bytes payload = {7, 8, 9};
  Ipv4Fields fields;
  const uint32_t pseudo = sum_words(fields.source, sum_words(fields.destination, 17));
  Bytes l4 = udp_segment(1000, 443, payload, pseudo);
  append(l4, Bytes{0xde, 0xad, 0xbe, 0xef, 0x00});
  const ParsedFrame parsed = parse(ipv4_frame(fields, l4));
  ASSERT_EQ(parsed.kind, FrameKind::kUdp) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.payload_length, 3);
}

TEST(ParseIpv4Test, UdpLengthOutOfBounds) {
  Bytes frame = ipv4_udp_frame(kPayload);
  set16(frame, 34 + 4, 7);  // shorter than the UDP header
  expect_drop(frame, DropReason::kMalformed);
  set16(frame, 34 + 4, static_cast<uint16_t>(8 + kPayload.size() + 1));  // past the IP payload
  expect_drop(frame, DropReason::kTruncated);
}

TEST(ParseIpv4Test, IpPayloadShorterThanUdpHeader) {
  expect_drop(ipv4_frame({}, Bytes{0, 1, 0, 2, 0}), DropReason::kTruncated);
}

TEST(ParseIpv4Test, UdpChecksum) {
  Bytes frame = ipv4_udp_frame(kPayload);
  frame.back() ^= 0x40;
  expect_drop(frame, DropReason::kBadL4Checksum);
  // Not verified when the NIC did, or when software verification is off.
  EXPECT_EQ(parse(frame, {.l4_verified = true}).kind, FrameKind::kUdp);
  EXPECT_EQ(parse(frame, {.verify_udp = false}).kind, FrameKind::kUdp);
  // Zero means "no checksum" over IPv4 (RFC 768).
  set16(frame, 34 + 6, 0);
  EXPECT_EQ(parse(frame).kind, FrameKind::kUdp);
}

TEST(ParseIpv4Test, AcceptsChecksumSentAsAllOnes) {
  // Find a payload whose checksum computes to 0, so it is sent as 0xffff.
  Ipv4Fields fields;
  Bytes payload = {0, 0};
  const uint32_t pseudo = sum_words(fields.source, sum_words(fields.destination, 17));
  Bytes probe = udp_segment(1, 2, payload, pseudo, /*checksum=*/false);
  const uint16_t rest = fold(sum_words(probe, pseudo + probe.size()));
  // rest + word == 0xffff in one's complement.
  const uint16_t word = static_cast<uint16_t>(0xffff - rest);
  payload = {static_cast<uint8_t>(word >> 8), static_cast<uint8_t>(word)};
  const Bytes frame = ipv4_udp_frame(payload, 1, 2, fields);
  ASSERT_EQ(read16(frame, 34 + 6), 0xffff);
  EXPECT_EQ(parse(frame).kind, FrameKind::kUdp);
}

TEST(ParseIpv4Test, HeaderChecksum) {
  Ipv4Fields fields;
  fields.corrupt_checksum = true;
  const Bytes frame = ipv4_udp_frame(kPayload, 1, 2, fields);
  expect_drop(frame, DropReason::kBadIpChecksum);
  EXPECT_EQ(parse(frame, {.ip_verified = true}).kind, FrameKind::kUdp);
}

TEST(ParseIpv4Test, HeaderFieldErrors) {
  Ipv4Fields options;
  options.options = {1, 1, 1, 0};  // NOP NOP NOP EOL: IHL 6
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, options), DropReason::kIpv4Options);

  Ipv4Fields version;
  version.version = 6;
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, version), DropReason::kMalformed);

  Bytes short_ihl = ipv4_udp_frame(kPayload);
  short_ihl[14] = 0x44;
  expect_drop(short_ihl, DropReason::kMalformed);

  Ipv4Fields tiny_total;
  tiny_total.total_length_delta = -static_cast<int>(8 + kPayload.size() + 1);  // 19
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, tiny_total), DropReason::kMalformed);

  Ipv4Fields long_total;
  long_total.total_length_delta = 1;
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, long_total), DropReason::kTruncated);
}

TEST(ParseIpv4Test, Fragments) {
  Ipv4Fields more;
  more.flags_fragment = 0x2000;  // MF
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, more), DropReason::kIpv4Fragment);
  Ipv4Fields last;
  last.flags_fragment = 0x0001;  // offset 8, no MF
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, last), DropReason::kIpv4Fragment);
  Ipv4Fields whole;
  whole.flags_fragment = 0x0000;  // no DF: still whole
  EXPECT_EQ(parse(ipv4_udp_frame(kPayload, 1, 2, whole)).kind, FrameKind::kUdp);
}

TEST(ParseIpv4Test, NotForUs) {
  Ipv4Fields other_ip;
  other_ip.destination = {192, 0, 2, 3};
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, other_ip), DropReason::kNotForUs);
  Ipv4Fields other_mac;
  other_mac.destination_mac = kOtherMac;
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, other_mac), DropReason::kNotForUs);
  Ipv4Fields broadcast;
  broadcast.destination_mac = kBroadcast;
  expect_drop(ipv4_udp_frame(kPayload, 1, 2, broadcast), DropReason::kNotForUs);
  InterfaceAddresses no_ipv4 = our_interface();
  no_ipv4.ipv4.reset();
  EXPECT_EQ(parse_frame(ipv4_udp_frame(kPayload), no_ipv4, {}).drop, DropReason::kNotForUs);
}

TEST(ParseIpv4Test, IcmpEchoRequest) {
  const Bytes frame = ipv4_frame({.protocol = 1}, icmp_echo(8, 0x77, 3, {1, 2, 3}));
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kIcmpEchoRequest) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.l3_offset, 14);
  EXPECT_EQ(parsed.l4_offset, 34);

  Bytes corrupted = frame;
  corrupted.back() ^= 1;
  expect_drop(corrupted, DropReason::kBadL4Checksum);
  // The NIC's L4 flag covers TCP/UDP only: ICMP is always checked.
  expect_drop(corrupted, DropReason::kBadL4Checksum, {.l4_verified = true});

  expect_drop(ipv4_frame({.protocol = 1}, icmp_echo(0, 1, 1, {})),  // a reply
              DropReason::kUnsupportedProtocol);
  expect_drop(ipv4_frame({.protocol = 1}, Bytes{8, 0, 0xf7, 0xff}), DropReason::kTruncated);
}

TEST(ParseIpv4Test, OtherProtocols) {
  expect_drop(ipv4_frame({.protocol = 6}, Bytes(20, 0)), DropReason::kUnsupportedProtocol);
  expect_drop(ipv4_frame({.protocol = 47}, Bytes(4, 0)), DropReason::kUnsupportedProtocol);
}

TEST(ParseEthernetTest, EtherTypes) {
  Bytes vlan = ethernet(kOurMac, kPeerMac, 0x8100);
  append(vlan, Bytes{0x00, 0x05, 0x08, 0x00});
  append(vlan, Bytes(40, 0));
  expect_drop(vlan, DropReason::kUnsupportedEtherType);
  Bytes lldp = ethernet(kOurMac, kPeerMac, 0x88cc);
  append(lldp, Bytes(46, 0));
  expect_drop(lldp, DropReason::kUnsupportedEtherType);
  expect_drop(Bytes(13, 0), DropReason::kTruncated);
  expect_drop({}, DropReason::kTruncated);
}

// --- ARP ---

TEST(ParseArpTest, RequestForOurAddress) {
  const ParsedFrame parsed = parse(arp_frame({}));
  ASSERT_EQ(parsed.kind, FrameKind::kArpRequest) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.l3_offset, 14);
  EXPECT_EQ(parsed.sender_ip, v4(kPeerIp4, 0));
  EXPECT_EQ(parsed.sender_mac, kPeerMac);
  // Unicast refresh requests (Linux's NUD probes) too.
  EXPECT_EQ(parse(arp_frame({.destination_mac = kOurMac})).kind, FrameKind::kArpRequest);
}

TEST(ParseArpTest, ProbeFromUnspecifiedIsAnsweredButNotLearnt) {
  const ParsedFrame parsed = parse(arp_frame({.sender_ip = {0, 0, 0, 0}}));
  ASSERT_EQ(parsed.kind, FrameKind::kArpRequest);
  EXPECT_FALSE(parsed.sender_ip.valid());
  EXPECT_EQ(parsed.sender_mac, kPeerMac);
}

TEST(ParseArpTest, ReplyToUs) {
  const MacAddress answer_mac = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
  const ParsedFrame parsed = parse(arp_frame(
      {.opcode = 2, .sender_mac = answer_mac, .target_mac = kOurMac, .destination_mac = kOurMac}));
  ASSERT_EQ(parsed.kind, FrameKind::kArpReply) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.sender_ip, v4(kPeerIp4, 0));
  EXPECT_EQ(parsed.sender_mac, answer_mac);  // ARP's sender, not the Ethernet source
  expect_drop(arp_frame({.opcode = 2, .sender_ip = {0, 0, 0, 0}}), DropReason::kMalformed);
}

TEST(ParseArpTest, Drops) {
  expect_drop(arp_frame({.destination_mac = kOtherMac}), DropReason::kNotForUs);
  expect_drop(arp_frame({.destination_mac = {0x33, 0x33, 0, 0, 0, 1}}), DropReason::kNotForUs);
  expect_drop(arp_frame({.hardware = 6}), DropReason::kMalformed);
  expect_drop(arp_frame({.protocol = 0x86dd}), DropReason::kMalformed);
  expect_drop(arp_frame({.hardware_length = 8}), DropReason::kMalformed);
  expect_drop(arp_frame({.protocol_length = 16}), DropReason::kMalformed);
  expect_drop(arp_frame({.sender_mac = kBroadcast}), DropReason::kMalformed);
  expect_drop(arp_frame({.sender_mac = {0x01, 0, 0x5e, 0, 0, 1}}), DropReason::kMalformed);
  expect_drop(arp_frame({.opcode = 2, .sender_mac = {0x33, 0x33, 0, 0, 0, 1}}),
              DropReason::kMalformed);
  expect_drop(arp_frame({.opcode = 3}), DropReason::kUnsupportedProtocol);
  Bytes short_arp = arp_frame({});
  short_arp.pop_back();
  expect_drop(short_arp, DropReason::kTruncated);
  InterfaceAddresses no_ipv4 = our_interface();
  no_ipv4.ipv4.reset();
  EXPECT_EQ(parse_frame(arp_frame({}), no_ipv4, {}).drop, DropReason::kNotForUs);
}

// --- IPv6 UDP ---

TEST(ParseIpv6Test, UdpGivesPathEcnAndPayload) {
  Ipv6Fields fields;
  fields.traffic_class = 0x28 | 0b01;  // ECT(1)
  const Bytes frame = ipv6_udp_frame(kPayload, 61000, 443, fields);
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kUdp) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.path.local, v6(kOurIp6, 443));
  EXPECT_EQ(parsed.path.remote, v6(kPeerIp6, 61000));
  EXPECT_EQ(parsed.ecn, EcnCodepoint::kEct1);
  EXPECT_EQ(parsed.l3_offset, 14);
  EXPECT_EQ(parsed.l4_offset, 54);
  EXPECT_EQ(parsed.payload_offset, 62);
  EXPECT_EQ(parsed.payload_length, kPayload.size());

  fields.traffic_class = 0x03;
  EXPECT_EQ(parse(ipv6_udp_frame(kPayload, 1, 2, fields)).ecn, EcnCodepoint::kCe);
}

TEST(ParseIpv6Test, PaddingAndLengths) {
  Bytes padded = ipv6_udp_frame(kPayload);
  padded.resize(padded.size() + 9, 0xee);
  const ParsedFrame parsed = parse(padded);
  ASSERT_EQ(parsed.kind, FrameKind::kUdp);
  EXPECT_EQ(parsed.payload_length, kPayload.size());

  Ipv6Fields too_long;
  too_long.payload_length_delta = 1;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, too_long), DropReason::kTruncated);
  Ipv6Fields version;
  version.version = 4;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, version), DropReason::kMalformed);

  Bytes bad_udp_length = ipv6_udp_frame(kPayload);
  set16(bad_udp_length, 54 + 4, 4);
  expect_drop(bad_udp_length, DropReason::kMalformed);
  expect_drop(ipv6_frame({}, Bytes{0, 1, 0, 2}), DropReason::kTruncated);
}

TEST(ParseIpv6Test, UdpChecksum) {
  Bytes frame = ipv6_udp_frame(kPayload);
  frame[62] ^= 0x80;
  expect_drop(frame, DropReason::kBadL4Checksum);
  EXPECT_EQ(parse(frame, {.l4_verified = true}).kind, FrameKind::kUdp);
  EXPECT_EQ(parse(frame, {.verify_udp = false}).kind, FrameKind::kUdp);
  // RFC 8200 §8.1: zero is never valid over IPv6, whatever verified it.
  set16(frame, 54 + 6, 0);
  expect_drop(frame, DropReason::kBadL4Checksum);
  expect_drop(frame, DropReason::kBadL4Checksum, {.l4_verified = true, .verify_udp = false});
}

TEST(ParseIpv6Test, NotForUs) {
  Ipv6Fields other;
  other.destination[15] = 0x99;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, other), DropReason::kNotForUs);
  // Group-addressed UDP is not ours, nor is unicast IP in a multicast frame.
  Ipv6Fields group;
  group.destination = kOurSolicitedNode;
  group.destination_mac = kOurSolicitedNodeMac;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, group), DropReason::kNotForUs);
  Ipv6Fields group_mac;
  group_mac.destination_mac = kOurSolicitedNodeMac;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, group_mac), DropReason::kNotForUs);
  Ipv6Fields broadcast_mac;
  broadcast_mac.destination_mac = kBroadcast;
  expect_drop(ipv6_udp_frame(kPayload, 1, 2, broadcast_mac), DropReason::kNotForUs);
  InterfaceAddresses no_ipv6 = our_interface();
  no_ipv6.ipv6.reset();
  EXPECT_EQ(parse_frame(ipv6_udp_frame(kPayload), no_ipv6, {}).drop, DropReason::kNotForUs);
}

TEST(ParseIpv6Test, ExtensionHeadersAndOtherProtocols) {
  for (uint8_t next_header : {0, 43, 44, 50, 51, 60, 135}) {
    Ipv6Fields fields;
    fields.next_header = next_header;
    expect_drop(ipv6_frame(fields, Bytes(16, 0)), DropReason::kIpv6ExtensionHeader);
  }
  Ipv6Fields tcp;
  tcp.next_header = 6;
  expect_drop(ipv6_frame(tcp, Bytes(20, 0)), DropReason::kUnsupportedProtocol);
}

// --- ICMPv6 ---

TEST(ParseIcmp6Test, EchoRequest) {
  const Bytes frame = icmp6_frame({}, 128, 0, Bytes{0, 9, 0, 1, 'p', 'i', 'n', 'g'});
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kIcmp6EchoRequest) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.l4_offset, 54);

  Bytes corrupted = frame;
  corrupted[60] ^= 0x10;
  expect_drop(corrupted, DropReason::kBadL4Checksum);
  // Echo to a group is not answered.
  Ipv6Fields all_nodes;
  all_nodes.destination = kAllNodes;
  all_nodes.destination_mac = {0x33, 0x33, 0, 0, 0, 1};
  expect_drop(icmp6_frame(all_nodes, 128, 0, Bytes(4, 0)), DropReason::kNotForUs);
  // Router advertisements, echo replies...: not handled.
  expect_drop(icmp6_frame(all_nodes, 134, 0, Bytes(12, 0)), DropReason::kUnsupportedProtocol);
  expect_drop(icmp6_frame({}, 129, 0, Bytes(4, 0)), DropReason::kUnsupportedProtocol);
  Ipv6Fields icmp;
  icmp.next_header = 58;
  expect_drop(ipv6_frame(icmp, Bytes{128, 0, 0, 0}), DropReason::kTruncated);
}

TEST(ParseIcmp6Test, NeighbourSolicitationWithSourceLinkLayerOption) {
  const MacAddress option_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  const Bytes frame = icmp6_frame(solicitation_fields(), 135, 0,
                                  nd_body(0, kOurIp6, link_layer_option(1, option_mac)));
  const ParsedFrame parsed = parse(frame);
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourSolicitation) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.l4_offset, 54);
  EXPECT_EQ(parsed.sender_ip, v6(kPeerIp6, 0));
  EXPECT_EQ(parsed.sender_mac, option_mac);
  EXPECT_EQ(parsed.source_mac, kPeerMac);
  EXPECT_TRUE(parsed.link_layer_option);
}

TEST(ParseIcmp6Test, NeighbourSolicitationVariants) {
  // Unicast (reachability confirmation), no option: the Ethernet source.
  Ipv6Fields unicast = solicitation_fields();
  unicast.destination = kOurIp6;
  unicast.destination_mac = kOurMac;
  ParsedFrame parsed = parse(icmp6_frame(unicast, 135, 0, nd_body(0, kOurIp6)));
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourSolicitation) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.sender_mac, kPeerMac);
  EXPECT_EQ(parsed.sender_ip, v6(kPeerIp6, 0));
  EXPECT_FALSE(parsed.link_layer_option);

  // Duplicate address detection: from ::, nothing to learn.
  Ipv6Fields dad = solicitation_fields();
  dad.source = kUnspecified;
  parsed = parse(icmp6_frame(dad, 135, 0, nd_body(0, kOurIp6)));
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourSolicitation) << drop_reason_name(parsed.drop);
  EXPECT_FALSE(parsed.sender_ip.valid());
  EXPECT_EQ(parsed.sender_mac, kPeerMac);
}

TEST(ParseIcmp6Test, NeighbourSolicitationDrops) {
  const Bytes option = link_layer_option(1, kPeerMac);
  Ipv6Fields hop = solicitation_fields();
  hop.hop_limit = 254;
  expect_drop(icmp6_frame(hop, 135, 0, nd_body(0, kOurIp6, option)), DropReason::kMalformed);
  expect_drop(icmp6_frame(solicitation_fields(), 135, 1, nd_body(0, kOurIp6, option)),
              DropReason::kMalformed);
  Ipv6Fields dad = solicitation_fields();
  dad.source = kUnspecified;
  expect_drop(icmp6_frame(dad, 135, 0, nd_body(0, kOurIp6, option)), DropReason::kMalformed);
  Ipv6Fields dad_unicast = dad;
  dad_unicast.destination = kOurIp6;
  dad_unicast.destination_mac = kOurMac;
  expect_drop(icmp6_frame(dad_unicast, 135, 0, nd_body(0, kOurIp6)), DropReason::kMalformed);
  // Options of length 0, or running past the message.
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0,
                          nd_body(0, kOurIp6, Bytes{1, 0, 0, 0, 0, 0, 0, 0})),
              DropReason::kMalformed);
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0,
                          nd_body(0, kOurIp6, Bytes{1, 2, 0, 0, 0, 0, 0, 0})),
              DropReason::kMalformed);
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0,
                          nd_body(0, kOurIp6, link_layer_option(1, kBroadcast))),
              DropReason::kMalformed);
  Ip6 multicast_target = kOurSolicitedNode;
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0, nd_body(0, multicast_target, option)),
              DropReason::kMalformed);
  Ip6 other_target = kOurIp6;
  other_target[15] = 0x77;
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0, nd_body(0, other_target, option)),
              DropReason::kNotForUs);
  Ipv6Fields to_all_nodes = solicitation_fields();
  to_all_nodes.destination = kAllNodes;
  expect_drop(icmp6_frame(to_all_nodes, 135, 0, nd_body(0, kOurIp6, option)),
              DropReason::kNotForUs);
  // Shorter than the target: 4 + 16 - 4 bytes.
  expect_drop(icmp6_frame(solicitation_fields(), 135, 0, Bytes(16, 0)), DropReason::kTruncated);
  Bytes corrupted = icmp6_frame(solicitation_fields(), 135, 0, nd_body(0, kOurIp6, option));
  corrupted[54 + 8] ^= 1;
  expect_drop(corrupted, DropReason::kBadL4Checksum);
}

TEST(ParseIcmp6Test, NeighbourAdvertisement) {
  const MacAddress option_mac = {0x02, 0x66, 0x77, 0x88, 0x99, 0xaa};
  Ipv6Fields fields;
  fields.hop_limit = 255;
  const Ip6 target = kPeerIp6;
  ParsedFrame parsed =
      parse(icmp6_frame(fields, 136, 0, nd_body(0x60, target, link_layer_option(2, option_mac))));
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourAdvertisement) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.sender_ip, v6(target, 0));
  EXPECT_EQ(parsed.sender_mac, option_mac);

  // Unsolicited, to all nodes, no option: the Ethernet source.
  Ipv6Fields all_nodes = fields;
  all_nodes.destination = kAllNodes;
  all_nodes.destination_mac = {0x33, 0x33, 0, 0, 0, 1};
  parsed = parse(icmp6_frame(all_nodes, 136, 0, nd_body(0x20, target)));
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourAdvertisement) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.sender_mac, kPeerMac);

  // "Solicited" to a group, bad hop limit, to our solicited-node group.
  expect_drop(icmp6_frame(all_nodes, 136, 0, nd_body(0x40, target)), DropReason::kMalformed);
  Ipv6Fields routed = fields;
  routed.hop_limit = 64;
  expect_drop(icmp6_frame(routed, 136, 0, nd_body(0x60, target)), DropReason::kMalformed);
  expect_drop(icmp6_frame(solicitation_fields(), 136, 0, nd_body(0x20, target)),
              DropReason::kNotForUs);
}

// --- Writers round trip ---

UdpFrameSpec spec_for(const conn::SocketAddress& local, const conn::SocketAddress& remote) {
  UdpFrameSpec spec;
  spec.source_mac = kOurMac;
  spec.destination_mac = kPeerMac;
  spec.path = {local, remote};
  return spec;
}

// What the peer sees: our frame parsed with the peer's addresses.
InterfaceAddresses peer_interface() {
  InterfaceAddresses interface;
  interface.mac = kPeerMac;
  interface.ipv4 = v4(kPeerIp4, 0);
  interface.ipv6 = v6(kPeerIp6, 0);
  return interface;
}

Bytes written_frame(const UdpFrameSpec& spec, const Bytes& payload) {
  const size_t header = udp_header_length(spec.path.local.family);
  Bytes frame(header + payload.size());
  std::copy(payload.begin(), payload.end(), frame.begin() + header);
  write_udp_headers(frame.data(), payload.size(), spec);
  return frame;
}

TEST(WriteUdpHeadersTest, HeaderLengths) {
  EXPECT_EQ(udp_header_length(conn::AddressFamily::kIpv4), 42u);
  EXPECT_EQ(udp_header_length(conn::AddressFamily::kIpv6), 62u);
  EXPECT_EQ(udp_header_length(conn::AddressFamily::kNone), 0u);
}

TEST(WriteUdpHeadersTest, Ipv4ExactBytes) {
  UdpFrameSpec spec = spec_for(v4(kOurIp4, 443), v4(kPeerIp4, 50000));
  spec.ecn = EcnCodepoint::kEct0;
  spec.hop_limit = 61;
  spec.ipv4_id = 0xbeef;
  const Bytes frame = written_frame(spec, kPayload);

  // The same frame by hand (DF, TOS = ECT(0)), checksums by the reference sum.
  Ipv4Fields fields;
  fields.source = kOurIp4;
  fields.destination = kPeerIp4;
  fields.tos = 0b10;
  fields.ttl = 61;
  fields.id = 0xbeef;
  fields.destination_mac = kPeerMac;
  const uint32_t pseudo = sum_words(kOurIp4, sum_words(kPeerIp4, 17));
  Bytes expected = ipv4_frame(fields, udp_segment(443, 50000, kPayload, pseudo));
  std::copy(kOurMac.begin(), kOurMac.end(), expected.begin() + 6);  // our source MAC
  EXPECT_EQ(frame, expected);

  const ParsedFrame parsed = parse_frame(frame, peer_interface(), {});
  ASSERT_EQ(parsed.kind, FrameKind::kUdp) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.path.local, v4(kPeerIp4, 50000));
  EXPECT_EQ(parsed.path.remote, v4(kOurIp4, 443));
  EXPECT_EQ(parsed.ecn, EcnCodepoint::kEct0);
  EXPECT_EQ(parsed.source_mac, kOurMac);
  EXPECT_EQ(parsed.payload_offset, 42);
  EXPECT_EQ(parsed.payload_length, kPayload.size());
}

TEST(WriteUdpHeadersTest, Ipv6ExactBytes) {
  UdpFrameSpec spec = spec_for(v6(kOurIp6, 443), v6(kPeerIp6, 61000));
  spec.ecn = EcnCodepoint::kCe;
  spec.hop_limit = 17;
  const Bytes frame = written_frame(spec, kPayload);

  Ipv6Fields fields;
  fields.source = kOurIp6;
  fields.destination = kPeerIp6;
  fields.traffic_class = 0b11;
  fields.flow_label = 0;
  fields.hop_limit = 17;
  fields.destination_mac = kPeerMac;
  fields.source_mac = kOurMac;
  EXPECT_EQ(frame, ipv6_udp_frame(kPayload, 443, 61000, fields));

  const ParsedFrame parsed = parse_frame(frame, peer_interface(), {});
  ASSERT_EQ(parsed.kind, FrameKind::kUdp) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.path.local, v6(kPeerIp6, 61000));
  EXPECT_EQ(parsed.path.remote, v6(kOurIp6, 443));
  EXPECT_EQ(parsed.ecn, EcnCodepoint::kCe);
  EXPECT_EQ(parsed.payload_offset, 62);
  EXPECT_EQ(parsed.payload_length, kPayload.size());
}

TEST(WriteUdpHeadersTest, Ipv4Offloads) {
  UdpFrameSpec spec = spec_for(v4(kOurIp4, 443), v4(kPeerIp4, 50000));
  spec.offload_ip_checksum = true;
  spec.offload_udp_checksum = true;
  const Bytes frame = written_frame(spec, kPayload);
  EXPECT_EQ(read16(frame, 14 + 10), 0);  // left for the NIC
  // The non-complemented pseudo-header sum the NIC completes, stored as the
  // big-endian value of the reference sum.
  const size_t udp_length = 8 + kPayload.size();
  EXPECT_EQ(read16(frame, 34 + 6), fold(ipv4_pseudo_sum(kOurIp4, kPeerIp4, 17, udp_length)));
  const ChecksumStatus verified = {.ip_verified = true, .l4_verified = true};
  ASSERT_EQ(parse_frame(frame, peer_interface(), verified).kind, FrameKind::kUdp);
  EXPECT_EQ(parse_frame(frame, peer_interface(), {}).drop, DropReason::kBadIpChecksum);
  EXPECT_EQ(parse_frame(frame, peer_interface(), {.ip_verified = true}).drop,
            DropReason::kBadL4Checksum);

  // Only the UDP checksum offloaded: the IP header checksum is complete.
  spec.offload_ip_checksum = false;
  const Bytes udp_only = written_frame(spec, kPayload);
  EXPECT_EQ(complement(sum_words(std::span(udp_only).subspan(14, 20))), 0);
  EXPECT_EQ(read16(udp_only, 34 + 6), read16(frame, 34 + 6));
  // Only the IP checksum offloaded: the UDP checksum is complete.
  spec.offload_ip_checksum = true;
  spec.offload_udp_checksum = false;
  const Bytes ip_only = written_frame(spec, kPayload);
  EXPECT_EQ(read16(ip_only, 14 + 10), 0);
  EXPECT_EQ(parse_frame(ip_only, peer_interface(), {.ip_verified = true}).kind, FrameKind::kUdp);
}

TEST(WriteUdpHeadersTest, Ipv6Offload) {
  UdpFrameSpec spec = spec_for(v6(kOurIp6, 443), v6(kPeerIp6, 61000));
  spec.offload_udp_checksum = true;
  spec.offload_ip_checksum = true;  // meaningless for IPv6: ignored
  const Bytes frame = written_frame(spec, kPayload);
  const size_t udp_length = 8 + kPayload.size();
  EXPECT_EQ(read16(frame, 54 + 6), fold(ipv6_pseudo_sum(kOurIp6, kPeerIp6, 17, udp_length)));
  EXPECT_EQ(parse_frame(frame, peer_interface(), {.l4_verified = true}).kind, FrameKind::kUdp);
  EXPECT_EQ(parse_frame(frame, peer_interface(), {}).drop, DropReason::kBadL4Checksum);
}

// The shard's two steps (headers as for offload, then the software sum)
// give the bytes write_udp_headers gives, in both families.
TEST(WriteUdpHeadersTest, OffloadHeadersCompletedInSoftwareMatch) {
  for (const bool ipv6 : {false, true}) {
    const UdpFrameSpec spec = ipv6 ? spec_for(v6(kOurIp6, 443), v6(kPeerIp6, 61000))
                                   : spec_for(v4(kOurIp4, 443), v4(kPeerIp4, 50000));
    const Bytes expected = written_frame(spec, kPayload);
    Bytes frame(expected.size());
    const size_t header = udp_header_length(spec.path.local.family);
    std::copy(kPayload.begin(), kPayload.end(), frame.begin() + header);
    write_udp_headers_for_offload(frame.data(), kPayload.size(), spec);
    EXPECT_NE(frame, expected) << "ipv6=" << ipv6;  // only the pseudo-header sum so far
    complete_udp_checksum(frame.data(), spec.path.local.family);
    EXPECT_EQ(frame, expected) << "ipv6=" << ipv6;
  }
}

TEST(WriteUdpHeadersTest, ComputedZeroChecksumIsSentAsAllOnes) {
  for (const bool ipv6 : {false, true}) {
    const UdpFrameSpec spec = ipv6 ? spec_for(v6(kOurIp6, 443), v6(kPeerIp6, 9))
                                   : spec_for(v4(kOurIp4, 443), v4(kPeerIp4, 9));
    const size_t l4 = ipv6 ? 54 : 34;
    // Choose the last payload word so that the whole sum is 0xffff.
    Bytes payload = {1, 2, 3, 4, 0, 0};
    const uint32_t pseudo = ipv6 ? ipv6_pseudo_sum(kOurIp6, kPeerIp6, 17, 8 + payload.size())
                                 : ipv4_pseudo_sum(kOurIp4, kPeerIp4, 17, 8 + payload.size());
    Bytes udp = {0x01, 0xbb, 0x00, 0x09};
    put16(udp, static_cast<uint16_t>(8 + payload.size()));
    put16(udp, 0);
    append(udp, payload);
    const uint16_t word = static_cast<uint16_t>(0xffff - fold(sum_words(udp, pseudo)));
    payload[4] = static_cast<uint8_t>(word >> 8);
    payload[5] = static_cast<uint8_t>(word);
    const Bytes frame = written_frame(spec, payload);
    EXPECT_EQ(read16(frame, l4 + 6), 0xffff) << "ipv6=" << ipv6;
    EXPECT_EQ(parse_frame(frame, peer_interface(), {}).kind, FrameKind::kUdp);
  }
}

// --- Robustness ---

std::vector<Bytes> sample_frames() {
  const MacAddress option_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  Ipv6Fields advertisement;
  advertisement.hop_limit = 255;
  return {
      ipv4_udp_frame(kPayload),
      ipv6_udp_frame(kPayload),
      arp_frame({}),
      ipv4_frame({.protocol = 1}, icmp_echo(8, 1, 2, {1, 2, 3, 4})),
      icmp6_frame({}, 128, 0, Bytes{0, 1, 0, 2, 9, 9}),
      icmp6_frame(solicitation_fields(), 135, 0,
                  nd_body(0, kOurIp6, link_layer_option(1, option_mac))),
      icmp6_frame(advertisement, 136, 0, nd_body(0x60, kPeerIp6, link_layer_option(2, kPeerMac))),
  };
}

TEST(ParseRobustnessTest, SampleFramesAreAccepted) {
  const std::vector<FrameKind> kinds = {
      FrameKind::kUdp,
      FrameKind::kUdp,
      FrameKind::kArpRequest,
      FrameKind::kIcmpEchoRequest,
      FrameKind::kIcmp6EchoRequest,
      FrameKind::kNeighbourSolicitation,
      FrameKind::kNeighbourAdvertisement,
  };
  const std::vector<Bytes> frames = sample_frames();
  ASSERT_EQ(frames.size(), kinds.size());
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(parse(frames[i]).kind, kinds[i]) << i;
}

TEST(ParseRobustnessTest, EveryTruncationIsDroppedAsTruncated) {
  for (const Bytes& frame : sample_frames()) {
    for (size_t length = 0; length < frame.size(); ++length) {
      // A heap copy of exactly `length` bytes, so ASan sees any overread.
      const Bytes prefix(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(length));
      const ParsedFrame parsed = parse(prefix);
      EXPECT_EQ(parsed.kind, FrameKind::kDrop) << "length " << length;
      EXPECT_EQ(parsed.drop, DropReason::kTruncated) << "length " << length;
    }
  }
}

TEST(ParseRobustnessTest, RandomCorruptionNeverReadsOutOfBounds) {
  std::mt19937 random(8);
  const std::vector<Bytes> frames = sample_frames();
  size_t udp_accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    Bytes frame = frames[random() % frames.size()];
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) frame[random() % frame.size()] = static_cast<uint8_t>(random());
    frame.resize(random() % (frame.size() + 8));
    const ParsedFrame parsed =
        parse(frame, {.ip_verified = true, .l4_verified = true, .verify_udp = false});
    if (parsed.kind == FrameKind::kUdp) {
      ++udp_accepted;
      ASSERT_LE(size_t{parsed.payload_offset} + parsed.payload_length, frame.size());
    }
  }
  EXPECT_GT(udp_accepted, 0u);  // some corruptions only touch the payload
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
