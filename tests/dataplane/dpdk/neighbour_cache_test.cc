#include "dataplane/dpdk/neighbour_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>

#include "tests/util/allocation_counter.h"

namespace dpquic::dataplane::dpdk {
namespace {

using conn::SocketAddress;

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
  EXPECT_FALSE(cache.should_solicit(SocketAddress{}, 200));
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
  EXPECT_TRUE(cache.should_solicit(ip4(10, 0, 0, 3), 12 * kSecond));
  cache.learn(ip4(10, 0, 0, 6), mac(6), 13 * kSecond);  // replaces .4
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 4), 13 * kSecond), std::nullopt);
  EXPECT_EQ(cache.lookup(ip4(10, 0, 0, 3), 13 * kSecond), mac(3));
  EXPECT_EQ(cache.size(), 4u);
}

TEST(NeighbourCacheTest, SolicitationsAreRateLimitedPerAddress) {
  NeighbourCache cache(8);
  const Instant start = 1000 * kSecond;
  EXPECT_TRUE(
      cache.should_solicit(ip6({0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}), start));
  EXPECT_EQ(cache.size(), 1u);  // being resolved
  EXPECT_EQ(cache.lookup(ip6({0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}), start),
            std::nullopt);
  const SocketAddress peer = ip4(192, 0, 2, 7, 1234);
  EXPECT_TRUE(cache.should_solicit(peer, start));
  EXPECT_FALSE(cache.should_solicit(peer, start));
  EXPECT_FALSE(
      cache.should_solicit(ip4(192, 0, 2, 7, 1), start + NeighbourCache::kSolicitInterval - 1));
  EXPECT_TRUE(cache.should_solicit(peer, start + NeighbourCache::kSolicitInterval));
  EXPECT_FALSE(cache.should_solicit(peer, start + NeighbourCache::kSolicitInterval + 1));
  EXPECT_FALSE(cache.should_solicit(peer, start));  // clock stepped back: wait
  // Another address is independent.
  EXPECT_TRUE(cache.should_solicit(ip4(192, 0, 2, 8), start + 1));
  // The answer resolves the pending entry without a new one.
  cache.learn(peer, mac(7), start + 2 * kSecond);
  EXPECT_EQ(cache.lookup(peer, start + 2 * kSecond), mac(7));
  EXPECT_EQ(cache.size(), 3u);
}

TEST(NeighbourCacheTest, RejectsZeroCapacity) {
  EXPECT_THROW(NeighbourCache(0), std::invalid_argument);
}

// Random learn/solicit/lookup against a simple model: exercises probing and
// deletion in the open-addressing table across many replacements, expiry
// and the solicitation interval.
TEST(NeighbourCacheTest, MatchesAReferenceModelUnderChurn) {
  constexpr size_t kCapacity = 13;
  constexpr Duration kLifetime = 600 * kSecond;
  NeighbourCache cache(kCapacity, kLifetime);
  struct ModelEntry {
    std::optional<MacAddress> mac;
    Instant learnt = 0;
    std::optional<Instant> solicited;
    Instant activity() const { return std::max(mac ? learnt : Instant{0}, solicited.value_or(0)); }
  };
  std::map<std::array<uint8_t, 16>, ModelEntry> model;  // IPv4 keys only
  std::mt19937 random(8);
  Instant now = kSecond;
  size_t replacements = 0;
  for (int step = 0; step < 20000; ++step) {
    now += (1 + random() % 3) * 200 * kMillisecond;  // every operation at a distinct time
    const uint8_t host = static_cast<uint8_t>(random() % 40);
    const SocketAddress address = ip4(10, 0, static_cast<uint8_t>(host % 3), host);
    auto found = model.find(address.ip);
    auto claim = [&]() -> ModelEntry& {
      if (model.size() == kCapacity) {
        auto oldest = model.begin();
        for (auto it = model.begin(); it != model.end(); ++it) {
          if (it->second.activity() < oldest->second.activity()) oldest = it;
        }
        model.erase(oldest);
        ++replacements;
      }
      return model[address.ip];
    };
    switch (random() % 3) {
      case 0: {
        const MacAddress learnt = mac(static_cast<uint8_t>(step));
        cache.learn(address, learnt, now);
        ModelEntry& entry = found == model.end() ? claim() : found->second;
        entry.mac = learnt;
        entry.learnt = now;
        break;
      }
      case 1: {
        ModelEntry& entry = found == model.end() ? claim() : found->second;
        const bool due =
            !entry.solicited || now - *entry.solicited >= NeighbourCache::kSolicitInterval;
        ASSERT_EQ(cache.should_solicit(address, now), due) << "step " << step;
        if (due) entry.solicited = now;
        break;
      }
      default: {
        std::optional<MacAddress> expected;
        if (found != model.end() && found->second.mac && now - found->second.learnt < kLifetime) {
          expected = found->second.mac;
        }
        ASSERT_EQ(cache.lookup(address, now), expected) << "step " << step;
        break;
      }
    }
    ASSERT_EQ(cache.size(), model.size()) << "step " << step;
  }
  EXPECT_GT(replacements, 1000u);
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
