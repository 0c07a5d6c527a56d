// parse_frame on who may speak ARP/ND to us: individual source MACs only,
// senders on our prefix (or our gateway) only, ARP between other hosts
// kept apart, and the advertisement flags learn_from_frame acts on.
#include <gtest/gtest.h>

#include "dataplane/dpdk/frame.h"
#include "tests/dataplane/dpdk/frame_test_util.h"

namespace dpquic::dataplane::dpdk {
namespace {

using namespace testing;  // NOLINT: the frame builders

const Bytes kPayload = {'q', 'u', 'i', 'c'};

ParsedFrame parse(const Bytes& frame) { return parse_frame(frame, our_interface(), {}); }

void expect_drop(const Bytes& frame, DropReason reason) {
  const ParsedFrame parsed = parse(frame);
  EXPECT_EQ(parsed.kind, FrameKind::kDrop);
  EXPECT_EQ(parsed.drop, reason) << drop_reason_name(parsed.drop) << " instead of "
                                 << drop_reason_name(reason);
}

TEST(ParseEthernetTest, GroupSourceAddressesAreMalformed) {
  // IEEE 802: the I/G bit marks a group; no frame comes from one. The ARP
  // sender address inside stays individual, so only the source gives it away.
  for (const MacAddress& group : {kBroadcast, MacAddress{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
                                  MacAddress{0x33, 0x33, 0x00, 0x00, 0x00, 0x01},
                                  MacAddress{0x03, 0x00, 0x00, 0x00, 0x00, 0x02}}) {
    expect_drop(arp_frame({.source_mac = group}), DropReason::kMalformed);
    expect_drop(arp_frame({.opcode = 2, .destination_mac = kOurMac, .source_mac = group}),
                DropReason::kMalformed);
    expect_drop(ipv4_udp_frame(kPayload, 4433, 443, {.source_mac = group}), DropReason::kMalformed);
    Ipv6Fields solicitation = solicitation_fields();
    solicitation.source_mac = group;
    expect_drop(
        icmp6_frame(solicitation, 135, 0, nd_body(0, kOurIp6, link_layer_option(1, kPeerMac))),
        DropReason::kMalformed);
    Ipv6Fields advertisement;
    advertisement.hop_limit = 255;
    advertisement.source_mac = group;
    expect_drop(
        icmp6_frame(advertisement, 136, 0, nd_body(0x60, kPeerIp6, link_layer_option(2, kPeerMac))),
        DropReason::kMalformed);
  }
  // The locally administered bit alone is an individual address.
  EXPECT_EQ(parse(arp_frame({.source_mac = {0x02, 0, 0, 0, 0, 0x42}})).kind,
            FrameKind::kArpRequest);
}

TEST(ParseArpTest, ForAnotherAddressOnlyNamesItsSender) {
  // RFC 826's merge: a request or reply between two other hosts may
  // refresh what we hold for its sender.
  for (const uint16_t opcode : {1, 2}) {
    const ParsedFrame parsed = parse(arp_frame({.opcode = opcode, .target_ip = {192, 0, 2, 77}}));
    ASSERT_EQ(parsed.kind, FrameKind::kArpOther) << drop_reason_name(parsed.drop);
    EXPECT_EQ(parsed.sender_ip, v4(kPeerIp4, 0));
    EXPECT_EQ(parsed.sender_mac, kPeerMac);
  }
  // Gratuitous (sender = target).
  EXPECT_EQ(parse(arp_frame({.target_ip = kPeerIp4})).kind, FrameKind::kArpOther);
  // Nothing we could have learnt: a probe, a group sender, an off-link one.
  expect_drop(arp_frame({.sender_ip = {0, 0, 0, 0}, .target_ip = {192, 0, 2, 77}}),
              DropReason::kNotForUs);
  expect_drop(arp_frame({.sender_mac = kBroadcast, .target_ip = {192, 0, 2, 77}}),
              DropReason::kNotForUs);
  expect_drop(arp_frame({.sender_ip = {198, 51, 100, 7}, .target_ip = {192, 0, 2, 77}}),
              DropReason::kNotForUs);
}

TEST(ParseArpTest, SendersOutsideOurPrefixAreRefused) {
  // 198.51.100.7 is outside 192.0.2.0/24: neither learnt nor answered.
  expect_drop(arp_frame({.sender_ip = {198, 51, 100, 7}}), DropReason::kOffLinkSender);
  expect_drop(arp_frame({.opcode = 2, .sender_ip = {198, 51, 100, 7}}), DropReason::kOffLinkSender);
  expect_drop(arp_frame({.sender_ip = {192, 0, 3, 2}}), DropReason::kOffLinkSender);
  // Nor one claiming our own address.
  expect_drop(arp_frame({.sender_ip = kOurIp4}), DropReason::kOffLinkSender);
  // Our gateway is heard even outside the prefix (a /32 with a gateway).
  InterfaceAddresses narrow = our_interface();
  narrow.ipv4_prefix = 32;
  narrow.gateway4 = v4({198, 51, 100, 7}, 0);
  EXPECT_EQ(parse_frame(arp_frame({.sender_ip = {198, 51, 100, 7}}), narrow, {}).kind,
            FrameKind::kArpRequest);
  EXPECT_EQ(parse_frame(arp_frame({.sender_ip = kPeerIp4}), narrow, {}).drop,
            DropReason::kOffLinkSender);
}

TEST(ParseIcmp6Test, NeighbourDiscoverySendersOutsideOurPrefix) {
  const Bytes option = link_layer_option(1, kPeerMac);
  // 2001:db8:0:1::2 is outside 2001:db8::/64.
  const Ip6 off_link = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x02};
  Ipv6Fields solicitation = solicitation_fields();
  solicitation.source = off_link;
  expect_drop(icmp6_frame(solicitation, 135, 0, nd_body(0, kOurIp6, option)),
              DropReason::kOffLinkSender);
  solicitation.source = kOurIp6;
  expect_drop(icmp6_frame(solicitation, 135, 0, nd_body(0, kOurIp6, option)),
              DropReason::kOffLinkSender);
  // Link-local sources are on the link whatever our prefix (RFC 4291).
  const Ip6 link_local = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34};
  solicitation.source = link_local;
  const ParsedFrame parsed = parse(icmp6_frame(solicitation, 135, 0, nd_body(0, kOurIp6, option)));
  ASSERT_EQ(parsed.kind, FrameKind::kNeighbourSolicitation) << drop_reason_name(parsed.drop);
  EXPECT_EQ(parsed.sender_ip, v6(link_local, 0));

  Ipv6Fields advertisement;
  advertisement.hop_limit = 255;
  expect_drop(
      icmp6_frame(advertisement, 136, 0, nd_body(0x60, off_link, link_layer_option(2, kPeerMac))),
      DropReason::kOffLinkSender);
  // Our gateway is heard even outside the prefix.
  InterfaceAddresses with_gateway = our_interface();
  with_gateway.gateway6 = v6(off_link, 0);
  EXPECT_EQ(parse_frame(icmp6_frame(advertisement, 136, 0,
                                    nd_body(0x60, off_link, link_layer_option(2, kPeerMac))),
                        with_gateway, {})
                .kind,
            FrameKind::kNeighbourAdvertisement);
}

TEST(ParseIcmp6Test, NeighbourAdvertisementFlagsAndOption) {
  Ipv6Fields fields;
  fields.hop_limit = 255;
  const struct {
    uint8_t flags;
    bool solicited, override_flag;
  } cases[] = {{0x00, false, false},
               {0x20, false, true},
               {0x40, true, false},
               {0x60, true, true},
               {0xe0, true, true}};  // the router flag changes neither
  for (const auto& c : cases) {
    const ParsedFrame parsed = parse(
        icmp6_frame(fields, 136, 0, nd_body(c.flags, kPeerIp6, link_layer_option(2, kOtherMac))));
    ASSERT_EQ(parsed.kind, FrameKind::kNeighbourAdvertisement) << drop_reason_name(parsed.drop);
    EXPECT_EQ(parsed.advert_solicited, c.solicited) << int{c.flags};
    EXPECT_EQ(parsed.advert_override, c.override_flag) << int{c.flags};
    EXPECT_TRUE(parsed.link_layer_option);
    EXPECT_EQ(parsed.sender_mac, kOtherMac);
  }
  const ParsedFrame bare = parse(icmp6_frame(fields, 136, 0, nd_body(0x60, kPeerIp6)));
  ASSERT_EQ(bare.kind, FrameKind::kNeighbourAdvertisement);
  EXPECT_FALSE(bare.link_layer_option);
  EXPECT_EQ(bare.sender_mac, kPeerMac);
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
