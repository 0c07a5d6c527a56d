#include "dataplane/dpdk/neighbour_cache.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

namespace dpquic::dataplane::dpdk {
namespace {

using conn::AddressFamily;
using conn::SocketAddress;

// The cache key: family and IP, port cleared.
SocketAddress key_of(const SocketAddress& ip) {
  SocketAddress key = ip;
  key.port = 0;
  return key;
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

std::optional<SocketAddress> on_link_or_gateway(const SocketAddress& peer,
                                                const std::optional<SocketAddress>& ours,
                                                uint8_t prefix, size_t address_bits,
                                                const std::optional<SocketAddress>& gateway) {
  if (!ours || ours->family != peer.family) return std::nullopt;
  if (same_prefix(peer.ip, ours->ip, std::min<size_t>(prefix, address_bits))) {
    return key_of(peer);
  }
  if (gateway && gateway->family == peer.family) return key_of(*gateway);
  return std::nullopt;
}

bool is_ipv6_link_local(const SocketAddress& address) {
  return address.ip[0] == 0xfe && (address.ip[1] & 0xc0) == 0x80;  // fe80::/10
}

}  // namespace

std::optional<conn::SocketAddress> next_hop(const conn::SocketAddress& peer,
                                            const InterfaceAddresses& interface) {
  switch (peer.family) {
    case AddressFamily::kIpv4:
      return on_link_or_gateway(peer, interface.ipv4, interface.ipv4_prefix, 32,
                                interface.gateway4);
    case AddressFamily::kIpv6:
      // Link-local peers are on the link whatever our prefix (RFC 4291).
      if (is_ipv6_link_local(peer) && interface.ipv6 &&
          interface.ipv6->family == AddressFamily::kIpv6) {
        return key_of(peer);
      }
      return on_link_or_gateway(peer, interface.ipv6, interface.ipv6_prefix, 128,
                                interface.gateway6);
    case AddressFamily::kNone: break;
  }
  return std::nullopt;
}

NeighbourCache::NeighbourCache(size_t capacity, Duration lifetime)
    : entries_(capacity), lifetime_(lifetime) {
  if (capacity == 0 || capacity >= kEmptySlot / 2) {
    throw std::invalid_argument("neighbour cache capacity must be between 1 and 2^30");
  }
  slots_.assign(std::bit_ceil(capacity * 2), kEmptySlot);
  slot_mask_ = slots_.size() - 1;
}

size_t NeighbourCache::slot_of(const conn::SocketAddress& key, uint64_t hash) const {
  size_t slot = hash & slot_mask_;
  while (slots_[slot] != kEmptySlot && !entries_[slots_[slot]].ip.same_ip(key)) {
    slot = (slot + 1) & slot_mask_;
  }
  return slot;
}

const NeighbourCache::Entry* NeighbourCache::find(const conn::SocketAddress& ip) const {
  if (!ip.valid()) return nullptr;
  const SocketAddress key = key_of(ip);
  const uint32_t index = slots_[slot_of(key, key.hash())];
  return index == kEmptySlot ? nullptr : &entries_[index];
}

NeighbourCache::Entry* NeighbourCache::find(const conn::SocketAddress& ip) {
  return const_cast<Entry*>(std::as_const(*this).find(ip));
}

// Backward-shift deletion keeps every probe chain unbroken without
// tombstones: later members of the cluster move into the hole unless their
// home slot lies cyclically within (hole, current].
void NeighbourCache::unlink(size_t slot) {
  size_t hole = slot;
  for (size_t next = (slot + 1) & slot_mask_; slots_[next] != kEmptySlot;
       next = (next + 1) & slot_mask_) {
    const size_t home = entries_[slots_[next]].hash & slot_mask_;
    const bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
    if (!stays) {
      slots_[hole] = slots_[next];
      hole = next;
    }
  }
  slots_[hole] = kEmptySlot;
}

size_t NeighbourCache::oldest_entry() const {
  auto last_activity = [](const Entry& entry) {
    return std::max(entry.resolved ? entry.learnt : Instant{0},
                    entry.solicit_sent ? entry.solicited : Instant{0});
  };
  size_t oldest = 0;
  for (size_t i = 1; i < entries_.size(); ++i) {
    if (last_activity(entries_[i]) < last_activity(entries_[oldest])) oldest = i;
  }
  return oldest;
}

NeighbourCache::Entry& NeighbourCache::claim(const conn::SocketAddress& ip) {
  size_t index;
  if (used_ < entries_.size()) {
    index = used_++;
  } else {
    // Full: the scan only runs when a new neighbour arrives.
    index = oldest_entry();
    const Entry& victim = entries_[index];
    unlink(slot_of(victim.ip, victim.hash));
  }
  Entry& entry = entries_[index];
  entry = Entry{};
  entry.ip = key_of(ip);
  entry.hash = entry.ip.hash();
  entry.used = true;
  slots_[slot_of(entry.ip, entry.hash)] = static_cast<uint32_t>(index);
  return entry;
}

void NeighbourCache::learn(const conn::SocketAddress& ip, const MacAddress& mac, Instant now) {
  if (!ip.valid()) return;
  Entry* entry = find(ip);
  if (entry == nullptr) entry = &claim(ip);
  entry->mac = mac;
  entry->resolved = true;
  entry->learnt = now;
}

std::optional<MacAddress> NeighbourCache::lookup(const conn::SocketAddress& ip, Instant now) const {
  const Entry* entry = find(ip);
  if (entry == nullptr || !entry->resolved) return std::nullopt;
  // A clock that steps back counts as fresh rather than expired.
  if (now >= entry->learnt && now - entry->learnt >= lifetime_) return std::nullopt;
  return entry->mac;
}

bool NeighbourCache::should_solicit(const conn::SocketAddress& ip, Instant now) {
  if (!ip.valid()) return false;
  Entry* entry = find(ip);
  if (entry == nullptr) entry = &claim(ip);
  if (entry->solicit_sent &&
      (now < entry->solicited || now - entry->solicited < kSolicitInterval)) {
    return false;
  }
  entry->solicit_sent = true;
  entry->solicited = now;
  return true;
}

}  // namespace dpquic::dataplane::dpdk
