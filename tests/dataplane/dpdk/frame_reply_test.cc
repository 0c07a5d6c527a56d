// In-place ARP/ND/echo replies and ARP/NS requests: exact byte layouts.
#include <gtest/gtest.h>

#include "dataplane/dpdk/frame.h"
#include "tests/dataplane/dpdk/frame_test_util.h"

namespace dpquic::dataplane::dpdk {
namespace {

using namespace testing;  // NOLINT: the frame builders

ParsedFrame parse(const Bytes& frame, const InterfaceAddresses& interface = our_interface()) {
  return parse_frame(frame, interface, {});
}

// The interface of kPeerIp4/kPeerIp6 at kPeerMac, on our prefixes.
InterfaceAddresses peer_interface() {
  InterfaceAddresses interface;
  interface.mac = kPeerMac;
  interface.ipv4 = v4(kPeerIp4, 0);
  interface.ipv4_prefix = 24;
  interface.ipv6 = v6(kPeerIp6, 0);
  interface.ipv6_prefix = 64;
  return interface;
}

TEST(ArpReplyTest, ExactBytes) {
  Bytes frame = arp_frame({});
  frame.resize(60, 0);  // padded as received from the wire
  const ParsedFrame request = parse(frame);
  ASSERT_EQ(request.kind, FrameKind::kArpRequest);
  ASSERT_EQ(write_arp_reply(frame, request, our_interface()), 42u);

  Bytes expected = arp_frame({.opcode = 2,
                              .sender_mac = kOurMac,
                              .sender_ip = kOurIp4,
                              .target_mac = kPeerMac,
                              .target_ip = kPeerIp4,
                              .destination_mac = kPeerMac});
  std::copy(kOurMac.begin(), kOurMac.end(), expected.begin() + 6);
  EXPECT_EQ(Bytes(frame.begin(), frame.begin() + 42), expected);

  // The requester sees our answer.
  const ParsedFrame answer = parse(Bytes(frame.begin(), frame.begin() + 42), peer_interface());
  ASSERT_EQ(answer.kind, FrameKind::kArpReply) << drop_reason_name(answer.drop);
  EXPECT_EQ(answer.sender_ip, v4(kOurIp4, 0));
  EXPECT_EQ(answer.sender_mac, kOurMac);
}

TEST(ArpReplyTest, RefusesWhatItCannotAnswer) {
  Bytes frame = arp_frame({});
  const ParsedFrame request = parse(frame);
  EXPECT_EQ(write_arp_reply(std::span(frame).first(41), request, our_interface()), 0u);
  ParsedFrame not_a_request = request;
  not_a_request.kind = FrameKind::kArpReply;
  EXPECT_EQ(write_arp_reply(frame, not_a_request, our_interface()), 0u);
  InterfaceAddresses no_ipv4 = our_interface();
  no_ipv4.ipv4.reset();
  EXPECT_EQ(write_arp_reply(frame, request, no_ipv4), 0u);
  EXPECT_EQ(frame, arp_frame({}));  // untouched
}

TEST(ArpRequestTest, ExactBytes) {
  Bytes out(64, 0xcc);
  ASSERT_EQ(write_arp_request(out, v4(kPeerIp4, 1234), our_interface()), 42u);
  Bytes expected = arp_frame({.sender_mac = kOurMac,
                              .sender_ip = kOurIp4,
                              .target_mac = {},
                              .target_ip = kPeerIp4,
                              .destination_mac = kBroadcast});
  std::copy(kOurMac.begin(), kOurMac.end(), expected.begin() + 6);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + 42), expected);
  EXPECT_EQ(out[42], 0xcc);  // nothing written past the request

  // The peer recognises a request for its address.
  const ParsedFrame request = parse(Bytes(out.begin(), out.begin() + 42), peer_interface());
  ASSERT_EQ(request.kind, FrameKind::kArpRequest);
  EXPECT_EQ(request.sender_ip, v4(kOurIp4, 0));
  EXPECT_EQ(request.sender_mac, kOurMac);

  EXPECT_EQ(write_arp_request(std::span(out).first(41), v4(kPeerIp4, 0), our_interface()), 0u);
  EXPECT_EQ(write_arp_request(out, v6(kPeerIp6, 0), our_interface()), 0u);
  InterfaceAddresses no_ipv4 = our_interface();
  no_ipv4.ipv4.reset();
  EXPECT_EQ(write_arp_request(out, v4(kPeerIp4, 0), no_ipv4), 0u);
}

TEST(NeighbourSolicitationTest, ExactBytes) {
  Bytes out(100, 0xcc);
  ASSERT_EQ(write_neighbour_solicitation(out, v6(kPeerIp6, 443), our_interface()), 86u);
  // To ff02::1:ff00:0002 at 33:33:ff:00:00:02, from our address, hop limit
  // 255, with our source link-layer option.
  const Ip6 group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0x02};
  Ipv6Fields fields;
  fields.source = kOurIp6;
  fields.destination = group;
  fields.flow_label = 0;
  fields.hop_limit = 255;
  fields.destination_mac = {0x33, 0x33, 0xff, 0x00, 0x00, 0x02};
  fields.source_mac = kOurMac;
  const Bytes expected =
      icmp6_frame(fields, 135, 0, nd_body(0, kPeerIp6, link_layer_option(1, kOurMac)));
  ASSERT_EQ(expected.size(), 86u);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + 86), expected);
  EXPECT_EQ(out[86], 0xcc);

  EXPECT_EQ(
      write_neighbour_solicitation(std::span(out).first(85), v6(kPeerIp6, 0), our_interface()), 0u);
  EXPECT_EQ(write_neighbour_solicitation(out, v4(kPeerIp4, 0), our_interface()), 0u);
  InterfaceAddresses no_ipv6 = our_interface();
  no_ipv6.ipv6.reset();
  EXPECT_EQ(write_neighbour_solicitation(out, v6(kPeerIp6, 0), no_ipv6), 0u);
}

TEST(NeighbourAdvertisementTest, ResolutionRoundTrip) {
  // We solicit the peer; the peer answers in place; we learn it.
  Bytes frame(128, 0);
  const size_t length = write_neighbour_solicitation(frame, v6(kPeerIp6, 0), our_interface());
  ASSERT_EQ(length, 86u);
  const ParsedFrame solicitation =
      parse(Bytes(frame.begin(), frame.begin() + length), peer_interface());
  ASSERT_EQ(solicitation.kind, FrameKind::kNeighbourSolicitation)
      << drop_reason_name(solicitation.drop);
  EXPECT_EQ(solicitation.sender_ip, v6(kOurIp6, 0));
  EXPECT_EQ(solicitation.sender_mac, kOurMac);

  ASSERT_EQ(write_neighbour_advertisement(frame, solicitation, peer_interface()), 86u);
  const ParsedFrame advertisement = parse(Bytes(frame.begin(), frame.begin() + 86));
  ASSERT_EQ(advertisement.kind, FrameKind::kNeighbourAdvertisement)
      << drop_reason_name(advertisement.drop);
  EXPECT_EQ(advertisement.sender_ip, v6(kPeerIp6, 0));
  EXPECT_EQ(advertisement.sender_mac, kPeerMac);
}

TEST(NeighbourAdvertisementTest, ExactBytesSolicited) {
  const MacAddress option_mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  // 78 bytes of solicitation in a larger buffer (as in an mbuf).
  Bytes frame = icmp6_frame(solicitation_fields(), 135, 0,
                            nd_body(0, kOurIp6, link_layer_option(1, option_mac)));
  const ParsedFrame solicitation = parse(frame);
  ASSERT_EQ(solicitation.kind, FrameKind::kNeighbourSolicitation);
  frame.resize(200, 0xcc);
  ASSERT_EQ(write_neighbour_advertisement(frame, solicitation, our_interface()), 86u);

  // To the soliciting address at its option's MAC; solicited + override.
  Ipv6Fields fields;
  fields.source = kOurIp6;
  fields.destination = kPeerIp6;
  fields.flow_label = 0;
  fields.hop_limit = 255;
  fields.destination_mac = option_mac;
  fields.source_mac = kOurMac;
  const Bytes expected =
      icmp6_frame(fields, 136, 0, nd_body(0x60, kOurIp6, link_layer_option(2, kOurMac)));
  EXPECT_EQ(Bytes(frame.begin(), frame.begin() + 86), expected);
}

TEST(NeighbourAdvertisementTest, ExactBytesForDuplicateAddressDetection) {
  Ipv6Fields dad = solicitation_fields();
  dad.source = kUnspecified;
  Bytes frame = icmp6_frame(dad, 135, 0, nd_body(0, kOurIp6));
  const ParsedFrame solicitation = parse(frame);
  ASSERT_EQ(solicitation.kind, FrameKind::kNeighbourSolicitation);
  frame.resize(86);
  ASSERT_EQ(write_neighbour_advertisement(frame, solicitation, our_interface()), 86u);

  // To all nodes, override but not solicited (RFC 4861 §7.2.4).
  Ipv6Fields fields;
  fields.source = kOurIp6;
  fields.destination = kAllNodes;
  fields.flow_label = 0;
  fields.hop_limit = 255;
  fields.destination_mac = {0x33, 0x33, 0, 0, 0, 1};
  fields.source_mac = kOurMac;
  EXPECT_EQ(frame,
            icmp6_frame(fields, 136, 0, nd_body(0x20, kOurIp6, link_layer_option(2, kOurMac))));
  // The group sees a valid unsolicited advertisement.
  InterfaceAddresses listener = peer_interface();
  const ParsedFrame heard = parse(frame, listener);
  ASSERT_EQ(heard.kind, FrameKind::kNeighbourAdvertisement) << drop_reason_name(heard.drop);
  EXPECT_EQ(heard.sender_ip, v6(kOurIp6, 0));
}

TEST(NeighbourAdvertisementTest, RefusesWhatItCannotAnswer) {
  Bytes frame = icmp6_frame(solicitation_fields(), 135, 0, nd_body(0, kOurIp6));
  const ParsedFrame solicitation = parse(frame);
  ASSERT_EQ(solicitation.kind, FrameKind::kNeighbourSolicitation);
  ASSERT_EQ(frame.size(), 78u);
  const Bytes original = frame;
  EXPECT_EQ(write_neighbour_advertisement(frame, solicitation, our_interface()), 0u);
  ParsedFrame wrong_kind = solicitation;
  wrong_kind.kind = FrameKind::kNeighbourAdvertisement;
  frame.resize(86);
  EXPECT_EQ(write_neighbour_advertisement(frame, wrong_kind, our_interface()), 0u);
  InterfaceAddresses no_ipv6 = our_interface();
  no_ipv6.ipv6.reset();
  EXPECT_EQ(write_neighbour_advertisement(frame, solicitation, no_ipv6), 0u);
  EXPECT_EQ(Bytes(frame.begin(), frame.begin() + 78), original);
}

TEST(IcmpEchoReplyTest, Ipv4ExactBytes) {
  const Bytes data = {'a', 'b', 'c', 'd', 'e'};  // odd length
  Ipv4Fields request_fields;
  request_fields.protocol = 1;
  request_fields.ttl = 3;
  request_fields.tos = 0x02;
  Bytes frame = ipv4_frame(request_fields, icmp_echo(8, 0x4242, 7, data));
  const size_t request_length = frame.size();
  frame.resize(60, 0xee);  // Ethernet padding is not echoed
  const ParsedFrame request = parse(frame);
  ASSERT_EQ(request.kind, FrameKind::kIcmpEchoRequest);
  ASSERT_EQ(write_icmp_echo_reply(frame, request), request_length);

  Ipv4Fields reply_fields = request_fields;
  reply_fields.source = kOurIp4;
  reply_fields.destination = kPeerIp4;
  reply_fields.ttl = 64;
  reply_fields.destination_mac = kPeerMac;
  Bytes expected = ipv4_frame(reply_fields, icmp_echo(0, 0x4242, 7, data));
  std::copy(kOurMac.begin(), kOurMac.end(), expected.begin() + 6);
  EXPECT_EQ(Bytes(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(request_length)), expected);
  // Valid checksums by the reference sum.
  EXPECT_EQ(complement(sum_words(std::span(frame).subspan(14, 20))), 0);
  EXPECT_EQ(complement(sum_words(std::span(frame).subspan(34, request_length - 34))), 0);
}

TEST(IcmpEchoReplyTest, Ipv6ExactBytes) {
  const Bytes body = {0x12, 0x34, 0x00, 0x01, 'p', 'i', 'n', 'g', '!'};
  Ipv6Fields request_fields;
  request_fields.hop_limit = 9;
  Bytes frame = icmp6_frame(request_fields, 128, 0, body);
  const ParsedFrame request = parse(frame);
  ASSERT_EQ(request.kind, FrameKind::kIcmp6EchoRequest);
  ASSERT_EQ(write_icmp_echo_reply(frame, request), frame.size());

  Ipv6Fields reply_fields = request_fields;
  reply_fields.source = kOurIp6;
  reply_fields.destination = kPeerIp6;
  reply_fields.hop_limit = 64;
  reply_fields.destination_mac = kPeerMac;
  reply_fields.source_mac = kOurMac;
  EXPECT_EQ(frame, icmp6_frame(reply_fields, 129, 0, body));
}

TEST(IcmpEchoReplyTest, RefusesWhatItCannotAnswer) {
  Bytes frame = ipv4_frame({.protocol = 1}, icmp_echo(8, 1, 1, {}));
  const ParsedFrame request = parse(frame);
  ASSERT_EQ(request.kind, FrameKind::kIcmpEchoRequest);
  EXPECT_EQ(write_icmp_echo_reply(std::span(frame).first(frame.size() - 1), request), 0u);
  EXPECT_EQ(write_icmp_echo_reply(std::span(frame).first(20), request), 0u);
  ParsedFrame udp = request;
  udp.kind = FrameKind::kUdp;
  EXPECT_EQ(write_icmp_echo_reply(frame, udp), 0u);
  EXPECT_EQ(frame, ipv4_frame({.protocol = 1}, icmp_echo(8, 1, 1, {})));

  Bytes frame6 = icmp6_frame({}, 128, 0, Bytes(4, 0));
  const ParsedFrame request6 = parse(frame6);
  ASSERT_EQ(request6.kind, FrameKind::kIcmp6EchoRequest);
  EXPECT_EQ(write_icmp_echo_reply(std::span(frame6).first(frame6.size() - 1), request6), 0u);
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
