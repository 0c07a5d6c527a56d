#include "dataplane/dpdk/neighbour_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>

#include "tests/dataplane/dpdk/frame_test_util.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::dataplane::dpdk {
namespace {

using conn::SocketAddress;
using Solicit = NeighbourCache::Solicit;

SocketAddress ip4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port = 0) {
  return SocketAddress::ipv4(a, b, c, d, port);
}
SocketAddress ip6(std::array<uint8_t, 16> bytes, uint16_t port = 0) {
  return SocketAddress::ipv6(bytes, port);
}
MacAddress mac(uint8_t last) { return {0x02, 0, 0, 0, 0x10, last}; }

// --- next_hop ---

InterfaceAddresses interface_21_57() {
  InterfaceAddresses interface;
  interface.ipv4 = ip4(10, 1, 9, 7);
  interface.ipv4_prefix = 21;  // 10.1.8.0 - 10.1.15.255
  interface.gateway4 = ip4(10, 1, 8, 1, 53);
  // 2001:db8:0:80::/57: the first 56 bits and the top bit of byte 7.
  interface.ipv6 = ip6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 1});
  interface.ipv6_prefix = 57;
  interface.gateway6 = ip6({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe});
  return interface;
}

TEST(NextHopTest, Ipv4OddPrefix) {
  const InterfaceAddresses interface = interface_21_57();
  // On-link: the peer itself, port cleared.
  EXPECT_EQ(next_hop(ip4(10, 1, 8, 0, 443), interface), ip4(10, 1, 8, 0));
  EXPECT_EQ(next_hop(ip4(10, 1, 15, 255, 9), interface), ip4(10, 1, 15, 255));
  // Just outside /21 on either side: the gateway, port cleared.
  EXPECT_EQ(next_hop(ip4(10, 1, 16, 0), interface), ip4(10, 1, 8, 1));
  EXPECT_EQ(next_hop(ip4(10, 1, 7, 255), interface), ip4(10, 1, 8, 1));
  EXPECT_EQ(next_hop(ip4(8, 8, 8, 8), interface), ip4(10, 1, 8, 1));

  InterfaceAddresses no_gateway = interface;
  no_gateway.gateway4.reset();
  EXPECT_EQ(next_hop(ip4(10, 1, 12, 3), no_gateway), ip4(10, 1, 12, 3));
  EXPECT_EQ(next_hop(ip4(10, 1, 16, 0), no_gateway), std::nullopt);
  InterfaceAddresses wrong_family_gateway = interface;
  wrong_family_gateway.gateway4 = interface.gateway6;
  EXPECT_EQ(next_hop(ip4(10, 1, 16, 0), wrong_family_gateway), std::nullopt);
  InterfaceAddresses no_ipv4 = interface;
  no_ipv4.ipv4.reset();
  EXPECT_EQ(next_hop(ip4(10, 1, 9, 8), no_ipv4), std::nullopt);
}

TEST(NextHopTest, Ipv4PrefixExtremes) {
  InterfaceAddresses interface = interface_21_57();
  interface.ipv4_prefix = 0;  // everything on-link
  EXPECT_EQ(next_hop(ip4(8, 8, 8, 8), interface), ip4(8, 8, 8, 8));
  interface.ipv4_prefix = 32;  // only ourselves
  EXPECT_EQ(next_hop(ip4(10, 1, 9, 7), interface), ip4(10, 1, 9, 7));
  EXPECT_EQ(next_hop(ip4(10, 1, 9, 6), interface), ip4(10, 1, 8, 1));
  interface.ipv4_prefix = 33;  // nonsense: treated as /32
  EXPECT_EQ(next_hop(ip4(10, 1, 9, 6), interface), ip4(10, 1, 8, 1));
}

TEST(NextHopTest, Ipv6OddPrefix) {
  const InterfaceAddresses interface = interface_21_57();
  const SocketAddress gateway = *interface.gateway6;
  // Byte 7 = 0xff keeps the top bit: on-link.
  const SocketAddress on_link =
      ip6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8}, 443);
  EXPECT_EQ(next_hop(on_link, interface), ip6(on_link.ip));
  // Byte 7 = 0x7f flips bit 57: off-link.
  EXPECT_EQ(
      next_hop(ip6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 1}), interface),
      gateway);
  // Differs in byte 6: off-link.
  EXPECT_EQ(
      next_hop(ip6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 1}), interface),
      gateway);
  // Link-local peers are always on the link.
  const SocketAddress link_local =
      ip6({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34}, 1);
  EXPECT_EQ(next_hop(link_local, interface), ip6(link_local.ip));

  InterfaceAddresses no_gateway = interface;
  no_gateway.gateway6.reset();
  EXPECT_EQ(next_hop(ip6({0x20, 0x01, 0x0d, 0xb9}), no_gateway), std::nullopt);
  InterfaceAddresses no_ipv6 = interface;
  no_ipv6.ipv6.reset();
  EXPECT_EQ(next_hop(on_link, no_ipv6), std::nullopt);
  EXPECT_EQ(next_hop(link_local, no_ipv6), std::nullopt);
  EXPECT_EQ(next_hop(SocketAddress{}, interface), std::nullopt);
}

// --- NeighbourCache ---

TEST(NeighbourCacheTest, LearnAndLookupIgnorePorts) {
  NeighbourCache cache(8);
  EXPECT_EQ(cache.capacity(), 8u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), 0), std::nullopt);
  cache.learn(ip4(10, 0, 0, 1, 443), mac(1), 100);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), 100), mac(1));
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1, 9999), 100), mac(1));
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 2), 100), std::nullopt);
  // An IPv6 address whose first bytes equal the IPv4 one is another key.
  EXPECT_EQ(cache.lookup(ip6({10, 0, 0, 1}), 100), std::nullopt);
  cache.learn(ip6({10, 0, 0, 1}), mac(6), 100);
  EXPECT_EQ(cache.lookup(ip6({10, 0, 0, 1}), 100), mac(6));
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), 100), mac(1));
  // Re-learning updates in place.
  cache.learn(ip4(10, 0, 0, 1), mac(9), 200);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), 200), mac(9));
  EXPECT_EQ(cache.size(), 2u);
  // Invalid addresses are ignored.
  cache.learn(SocketAddress{}, mac(3), 200);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.lookup(SocketAddress{}, 200), std::nullopt);
  EXPECT_EQ(cache.should_solicit(SocketAddress{}, 200), Solicit::kNoRoom);
}

TEST(NeighbourCacheTest, EntriesExpireAndRefresh) {
  const Duration lifetime = 30 * kSecond;
  NeighbourCache cache(4, lifetime);
  const Instant learnt = 5 * kSecond;
  cache.learn(ip4(10, 0, 0, 1), mac(1), learnt);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), learnt + lifetime - 1), mac(1));
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), learnt + lifetime), std::nullopt);
  // A clock that steps back does not expire anything.
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), learnt - 1), mac(1));
  cache.learn(ip4(10, 0, 0, 1), mac(1), learnt + lifetime);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 1), learnt + 2 * lifetime - 1), mac(1));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(NeighbourCache::kDefaultLifetime, 300 * kSecond);
}

TEST(NeighbourCacheTest, FullCacheReplacesTheOldest) {
  NeighbourCache cache(4);
  for (uint8_t i = 1; i <= 4; ++i) cache.learn(ip4(10, 0, 0, i), mac(i), i * kSecond);
  EXPECT_EQ(cache.size(), 4u);
  // Refresh .1: .2 becomes the oldest.
  cache.learn(ip4(10, 0, 0, 1), mac(1), 10 * kSecond);
  cache.learn(ip4(10, 0, 0, 5), mac(5), 11 * kSecond);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 2), 11 * kSecond), std::nullopt);
  for (uint8_t i : {1, 3, 4, 5}) EXPECT_EQ(cache.lookup(ip4(10, 0, 0, i), 11 * kSecond), mac(i));
  // A pending solicitation counts as activity too.
  EXPECT_EQ(cache.should_solicit(ip4(10, 0, 0, 3), 12 * kSecond), Solicit::kSend);
  cache.learn(ip4(10, 0, 0, 6), mac(6), 13 * kSecond);  // replaces .4
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 4), 13 * kSecond), std::nullopt);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 3), 13 * kSecond), mac(3));
  EXPECT_EQ(cache.size(), 4u);
}

TEST(NeighbourCacheTest, SolicitationsAreRateLimitedPerAddress) {
  NeighbourCache cache(8);
  const Instant start = 1000 * kSecond;
  EXPECT_EQ(cache.should_solicit(ip6({0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}), start),
            Solicit::kSend);
  EXPECT_EQ(cache.size(), 1u);  // being resolved
  EXPECT_EQ(cache.lookup(ip6({0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}), start),
            std::nullopt);
  const SocketAddress peer = ip4(192, 0, 2, 7, 1234);
  EXPECT_EQ(cache.should_solicit(peer, start), Solicit::kSend);
  EXPECT_EQ(cache.should_solicit(peer, start), Solicit::kWait);
  EXPECT_EQ(
      cache.should_solicit(ip4(192, 0, 2, 7, 1), start + NeighbourCache::kSolicitInterval - 1),
      Solicit::kWait);
  EXPECT_EQ(cache.should_solicit(peer, start + NeighbourCache::kSolicitInterval), Solicit::kSend);
  EXPECT_EQ(cache.should_solicit(peer, start + NeighbourCache::kSolicitInterval + 1),
            Solicit::kWait);
  EXPECT_EQ(cache.should_solicit(peer, start), Solicit::kWait);  // clock stepped back: wait
  // Another address is independent.
  EXPECT_EQ(cache.should_solicit(ip4(192, 0, 2, 8), start + 1), Solicit::kSend);
  // The answer resolves the pending entry without a new one.
  EXPECT_TRUE(cache.update(peer, mac(7), start + 2 * kSecond));
  EXPECT_EQ(cache.lookup(peer, start + 2 * kSecond), mac(7));
  EXPECT_EQ(cache.size(), 3u);
}

TEST(NeighbourCacheTest, RejectsZeroCapacity) {
  EXPECT_THROW(NeighbourCache(0), std::invalid_argument);
}

TEST(NeighbourCacheTest, UpdateAndConfirmChangeOnlyEntriesThatExist) {
  NeighbourCache cache(4);
  const SocketAddress peer = ip4(10, 0, 0, 1);
  EXPECT_FALSE(cache.update(peer, mac(1), kSecond));
  EXPECT_FALSE(cache.confirm(peer, mac(1), kSecond));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.contains(peer));

  // Being resolved: either completes it.
  ASSERT_EQ(cache.should_solicit(peer, kSecond), Solicit::kSend);
  EXPECT_TRUE(cache.contains(peer));
  EXPECT_FALSE(cache.fresh(peer, kSecond));
  EXPECT_TRUE(cache.confirm(peer, mac(1), 2 * kSecond));
  EXPECT_EQ(cache.lookup(peer, 2 * kSecond), mac(1));
  EXPECT_TRUE(cache.fresh(peer, 2 * kSecond));
  // Resolved: confirm refreshes the same MAC only; update replaces it.
  EXPECT_FALSE(cache.confirm(peer, mac(2), 3 * kSecond));
  EXPECT_EQ(cache.lookup(peer, 3 * kSecond), mac(1));
  EXPECT_TRUE(cache.confirm(peer, mac(1), 3 * kSecond));
  EXPECT_TRUE(cache.update(peer, mac(2), 4 * kSecond));
  EXPECT_EQ(cache.lookup(peer, 4 * kSecond), mac(2));
  // Expired entries are still there to update.
  const Instant late = 4 * kSecond + NeighbourCache::kDefaultLifetime;
  EXPECT_EQ(cache.lookup(peer, late), std::nullopt);
  EXPECT_TRUE(cache.update(peer, mac(3), late));
  EXPECT_EQ(cache.lookup(peer, late), mac(3));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(NeighbourCacheTest, PinnedEntriesAreNeverReplacedAndServeStale) {
  NeighbourCache cache(4, 30 * kSecond);
  const SocketAddress gateway = ip4(10, 0, 0, 254, 53);
  cache.pin(gateway);
  cache.pin(gateway);  // once is enough
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.lookup(gateway, 0), std::nullopt);  // not resolved yet
  EXPECT_TRUE(cache.update(gateway, mac(0xfe), kSecond));
  // Two hundred neighbours later (each a request for our address).
  for (uint8_t i = 0; i < 200; ++i) cache.learn(ip4(10, 0, 1, i), mac(i), (2 + i) * kSecond);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.lookup(gateway, 202 * kSecond), mac(0xfe));
  // Stale (past its lifetime) but still used, and due for a solicitation.
  EXPECT_FALSE(cache.fresh(gateway, 202 * kSecond));
  EXPECT_EQ(cache.should_solicit(gateway, 202 * kSecond), Solicit::kSend);
  EXPECT_TRUE(cache.update(gateway, mac(0xfd), 203 * kSecond));
  EXPECT_TRUE(cache.fresh(gateway, 203 * kSecond));
  EXPECT_EQ(cache.lookup(gateway, 203 * kSecond), mac(0xfd));

  NeighbourCache small(2);
  small.pin(ip4(10, 0, 0, 254));
  EXPECT_THROW(small.pin(ip6({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})),
               std::invalid_argument);
  EXPECT_THROW(small.pin(SocketAddress{}), std::invalid_argument);
}

TEST(NeighbourCacheTest, SolicitationsNeverReplaceLiveEntries) {
  // Datagrams to spoofed on-link sources make us solicit them: that must
  // not flush the neighbours we resolved.
  NeighbourCache cache(4, 30 * kSecond);
  for (uint8_t i = 1; i <= 4; ++i) cache.learn(ip4(10, 0, 0, i), mac(i), kSecond);
  for (uint8_t i = 0; i < 100; ++i) {
    EXPECT_EQ(cache.should_solicit(ip4(10, 0, 2, i), 2 * kSecond + i), Solicit::kNoRoom);
  }
  for (uint8_t i = 1; i <= 4; ++i) EXPECT_EQ(cache.lookup(ip4(10, 0, 0, i), 3 * kSecond), mac(i));
  // Expired entries are dead: replaced, the oldest first.
  cache.learn(ip4(10, 0, 0, 1), mac(1), 20 * kSecond);
  ASSERT_EQ(cache.should_solicit(ip4(10, 0, 2, 1), 31 * kSecond), Solicit::kSend);
  EXPECT_FALSE(cache.contains(ip4(10, 0, 0, 2)));
  EXPECT_TRUE(cache.contains(ip4(10, 0, 0, 1)));
  // A solicitation in flight is live until kResolveTimeout, then dead.
  ASSERT_EQ(cache.should_solicit(ip4(10, 0, 2, 2), 31 * kSecond + 1), Solicit::kSend);
  ASSERT_EQ(cache.should_solicit(ip4(10, 0, 2, 3), 31 * kSecond + 2), Solicit::kSend);
  EXPECT_EQ(cache.should_solicit(ip4(10, 0, 2, 4), 32 * kSecond), Solicit::kNoRoom);
  EXPECT_EQ(cache.should_solicit(ip4(10, 0, 2, 4), 31 * kSecond + NeighbourCache::kResolveTimeout),
            Solicit::kSend);
  EXPECT_FALSE(cache.contains(ip4(10, 0, 2, 1)));
  // A request for our address may still replace a live entry (the least
  // recently active) when none is dead.
  const Instant later = 31 * kSecond + NeighbourCache::kResolveTimeout;
  cache.learn(ip4(10, 0, 3, 1), mac(9), later);
  EXPECT_FALSE(cache.contains(ip4(10, 0, 0, 1)));
  EXPECT_EQ(cache.lookup(ip4(10, 0, 3, 1), later), mac(9));
  EXPECT_EQ(cache.size(), 4u);
}

// --- learn_from_frame: RFC 826 and RFC 4861 on parsed frames ---

class LearnFromFrameTest : public ::testing::Test {
 protected:
  // Parses `bytes` as our_interface() and applies it at `now`.
  bool apply(const testing::Bytes& bytes, Instant now = kSecond) {
    const ParsedFrame frame = parse_frame(bytes, testing::our_interface(), {});
    EXPECT_NE(frame.kind, FrameKind::kDrop) << drop_reason_name(frame.drop);
    return learn_from_frame(frame, cache_, now);
  }
  std::optional<MacAddress> known(const SocketAddress& ip) { return cache_.lookup(ip, kSecond); }

  NeighbourCache cache_{8};
  const SocketAddress peer4_ = testing::v4(testing::kPeerIp4, 0);
  const SocketAddress peer6_ = testing::v6(testing::kPeerIp6, 0);
};

TEST_F(LearnFromFrameTest, ArpRequestForUsCreates) {
  using namespace testing;  // NOLINT: the frame builders
  EXPECT_TRUE(apply(arp_frame({})));
  EXPECT_EQ(known(peer4_), kPeerMac);
  // A probe (sender 0.0.0.0) is answered, never learnt.
  EXPECT_FALSE(apply(arp_frame({.sender_ip = {0, 0, 0, 0}})));
  EXPECT_EQ(cache_.size(), 1u);
}

TEST_F(LearnFromFrameTest, ArpAnswersOnlyCompleteWhatWeAsked) {
  using namespace testing;  // NOLINT: the frame builders
  const Bytes reply = arp_frame({.opcode = 2, .target_mac = kOurMac, .destination_mac = kOurMac});
  EXPECT_FALSE(apply(reply));  // nobody asked
  EXPECT_EQ(cache_.size(), 0u);
  ASSERT_EQ(cache_.should_solicit(peer4_, 0), Solicit::kSend);
  EXPECT_TRUE(apply(reply));
  EXPECT_EQ(known(peer4_), kPeerMac);
  // RFC 826's merge: traffic for another host refreshes what we hold.
  EXPECT_TRUE(apply(arp_frame({.sender_mac = kOtherMac, .target_ip = {192, 0, 2, 77}})));
  EXPECT_EQ(known(peer4_), kOtherMac);
  EXPECT_FALSE(apply(arp_frame(
      {.sender_mac = kOtherMac, .sender_ip = {192, 0, 2, 9}, .target_ip = {192, 0, 2, 77}})));
  EXPECT_EQ(cache_.size(), 1u);
}

TEST_F(LearnFromFrameTest, SolicitationWithItsOptionCreates) {
  using namespace testing;  // NOLINT: the frame builders
  EXPECT_FALSE(apply(icmp6_frame(solicitation_fields(), 135, 0, nd_body(0, kOurIp6))));
  Ipv6Fields dad = solicitation_fields();
  dad.source = kUnspecified;
  EXPECT_FALSE(apply(icmp6_frame(dad, 135, 0, nd_body(0, kOurIp6))));
  EXPECT_EQ(cache_.size(), 0u);
  EXPECT_TRUE(apply(icmp6_frame(solicitation_fields(), 135, 0,
                                nd_body(0, kOurIp6, link_layer_option(1, kOtherMac)))));
  EXPECT_EQ(known(peer6_), kOtherMac);
}

TEST_F(LearnFromFrameTest, AdvertisementsFollowRfc4861) {
  using namespace testing;  // NOLINT: the frame builders
  Ipv6Fields fields;
  fields.hop_limit = 255;
  auto advert = [&](uint8_t flags, const MacAddress& target_mac) {
    return icmp6_frame(fields, 136, 0, nd_body(flags, kPeerIp6, link_layer_option(2, target_mac)));
  };
  // No entry: every kind is ignored, Override or not.
  for (const uint8_t flags : {0x00, 0x20, 0x40, 0x60}) EXPECT_FALSE(apply(advert(flags, kPeerMac)));
  EXPECT_EQ(cache_.size(), 0u);
  // Being resolved: an unsolicited one without Override does not complete it,
  // the solicited answer does.
  ASSERT_EQ(cache_.should_solicit(peer6_, 0), Solicit::kSend);
  EXPECT_FALSE(apply(advert(0x00, kPeerMac)));
  EXPECT_EQ(known(peer6_), std::nullopt);
  EXPECT_TRUE(apply(advert(0x40, kPeerMac)));
  EXPECT_EQ(known(peer6_), kPeerMac);
  // Resolved: without Override another MAC changes nothing; with it, it wins.
  EXPECT_FALSE(apply(advert(0x00, kOtherMac)));
  EXPECT_FALSE(apply(advert(0x40, kOtherMac)));
  EXPECT_EQ(known(peer6_), kPeerMac);
  EXPECT_TRUE(apply(advert(0x20, kOtherMac)));
  EXPECT_EQ(known(peer6_), kOtherMac);
  EXPECT_EQ(cache_.size(), 1u);
}

// A simple model of the cache's rules: a map, scanned.
class CacheModel {
 public:
  CacheModel(size_t capacity, Duration lifetime) : capacity_(capacity), lifetime_(lifetime) {}

  struct Entry {
    std::optional<MacAddress> mac;
    Instant learnt = 0;
    std::optional<Instant> solicited;
    bool pinned = false;
    Instant activity() const { return std::max(mac ? learnt : Instant{0}, solicited.value_or(0)); }
  };

  bool dead(const Entry& entry, Instant now) const {
    if (entry.pinned) return false;
    if (entry.mac && now - entry.learnt < lifetime_) return false;
    return !(entry.solicited && now - *entry.solicited < NeighbourCache::kResolveTimeout);
  }
  // The entry for `ip`, claimed if need be (dead ones replaced first, then
  // live ones if `replace_live`); nullptr when there is no room.
  Entry* claim(const std::array<uint8_t, 16>& ip, Instant now, bool replace_live) {
    if (auto found = entries_.find(ip); found != entries_.end()) return &found->second;
    if (entries_.size() == capacity_) {
      auto oldest = entries_.end();
      for (const bool dead_only : {true, false}) {
        if (!dead_only && !replace_live) break;
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
          if (it->second.pinned || (dead_only && !dead(it->second, now))) continue;
          if (oldest == entries_.end() || it->second.activity() < oldest->second.activity()) {
            oldest = it;
          }
        }
        if (oldest != entries_.end()) break;
      }
      if (oldest == entries_.end()) return nullptr;
      entries_.erase(oldest);
      ++replacements;
    }
    return &entries_[ip];
  }
  Entry* find(const std::array<uint8_t, 16>& ip) {
    auto found = entries_.find(ip);
    return found == entries_.end() ? nullptr : &found->second;
  }
  std::optional<MacAddress> lookup(const std::array<uint8_t, 16>& ip, Instant now) {
    const Entry* entry = find(ip);
    if (entry == nullptr || !entry->mac) return std::nullopt;
    if (!entry->pinned && now - entry->learnt >= lifetime_) return std::nullopt;
    return entry->mac;
  }
  size_t size() const { return entries_.size(); }
  size_t replacements = 0;

 private:
  size_t capacity_;
  Duration lifetime_;
  std::map<std::array<uint8_t, 16>, Entry> entries_;  // IPv4 keys only
};

// Random learn/update/confirm/solicit/lookup against the model: exercises
// probing and deletion in the open-addressing table across many
// replacements, expiry, dead entries, a pinned one and the solicitation
// interval.
TEST(NeighbourCacheTest, MatchesAReferenceModelUnderChurn) {
  constexpr size_t kCapacity = 13;
  constexpr Duration kLifetime = 30 * kSecond;
  NeighbourCache cache(kCapacity, kLifetime);
  CacheModel model(kCapacity, kLifetime);
  const SocketAddress pinned = ip4(10, 0, 0, 0);
  cache.pin(pinned);
  model.claim(pinned.ip, 0, true)->pinned = true;
  std::mt19937 random(8);
  Instant now = kSecond;
  size_t refused = 0, stale_hits = 0;
  for (int step = 0; step < 40000; ++step) {
    now += (1 + random() % 3) * 200 * kMillisecond;  // every operation at a distinct time
    const uint8_t host = static_cast<uint8_t>(random() % 40);
    const SocketAddress address = ip4(10, 0, static_cast<uint8_t>(host % 3), host);
    const MacAddress heard = mac(static_cast<uint8_t>(random() % 4));
    CacheModel::Entry* found = model.find(address.ip);
    switch (random() % 5) {
      case 0: {
        cache.learn(address, heard, now);
        CacheModel::Entry* entry = model.claim(address.ip, now, true);
        entry->mac = heard;
        entry->learnt = now;
        break;
      }
      case 1:
        ASSERT_EQ(cache.update(address, heard, now), found != nullptr) << "step " << step;
        if (found != nullptr) {
          found->mac = heard;
          found->learnt = now;
        }
        break;
      case 2: {
        const bool confirms = found != nullptr && (!found->mac || *found->mac == heard);
        ASSERT_EQ(cache.confirm(address, heard, now), confirms) << "step " << step;
        if (confirms) {
          found->mac = heard;
          found->learnt = now;
        }
        break;
      }
      case 3: {
        CacheModel::Entry* entry = model.claim(address.ip, now, false);
        Solicit expected = Solicit::kNoRoom;
        if (entry != nullptr) {
          const bool due =
              !entry->solicited || now - *entry->solicited >= NeighbourCache::kSolicitInterval;
          expected = due ? Solicit::kSend : Solicit::kWait;
          if (due) entry->solicited = now;
        }
        refused += expected == Solicit::kNoRoom;
        ASSERT_EQ(cache.should_solicit(address, now), expected) << "step " << step;
        break;
      }
      default: {
        const std::optional<MacAddress> expected = model.lookup(address.ip, now);
        ASSERT_EQ(cache.lookup(address, now), expected) << "step " << step;
        stale_hits += expected && address == pinned && now - found->learnt >= kLifetime;
        break;
      }
    }
    ASSERT_EQ(cache.size(), model.size()) << "step " << step;
  }
  EXPECT_GT(model.replacements, 1000u);
  EXPECT_GT(refused, 1000u);
  EXPECT_GT(stale_hits, 50u);
}

TEST(NeighbourCacheTest, NoAllocationAfterConstruction) {
  NeighbourCache cache(4);
  dpquic::testing::AllocationWindow window;
  for (uint8_t i = 0; i < 50; ++i) {
    cache.learn(ip4(10, 0, 0, i), mac(i), i);
    (void)cache.should_solicit(ip4(10, 0, 1, i), i);
    (void)cache.lookup(ip4(10, 0, 0, i), i);
    (void)next_hop(ip4(10, 0, 0, i), interface_21_57());
  }
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic::dataplane::dpdk
