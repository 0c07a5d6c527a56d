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

}  // namespace

std::optional<conn::SocketAddress> next_hop(const conn::SocketAddress& peer,
                                            const InterfaceAddresses& interface) {
  if (on_link(peer, interface)) return key_of(peer);
  const bool ipv4 = peer.family == AddressFamily::kIpv4;
  const std::optional<SocketAddress>& ours = ipv4 ? interface.ipv4 : interface.ipv6;
  const std::optional<SocketAddress>& gateway = ipv4 ? interface.gateway4 : interface.gateway6;
  if (!peer.valid() || !ours || ours->family != peer.family) return std::nullopt;
  if (gateway && gateway->family == peer.family) return key_of(*gateway);
  return std::nullopt;
}

NeighbourCache::NeighbourCache(size_t capacity, Duration lifetime)
    : entries_(capacity), lifetime_(lifetime) {
  if (capacity == 0 || capacity >= kEmptySlot / 2) {
    throw std::invalid_argument("neighbour cache capacity must be between 1 and 2^31");
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

// A clock that steps back counts as fresh rather than expired.
bool NeighbourCache::expired(const Entry& entry, Instant now) const {
  return now >= entry.learnt && now - entry.learnt >= lifetime_;
}

bool NeighbourCache::dead(const Entry& entry, Instant now) const {
  if (entry.pinned) return false;
  if (entry.resolved && !expired(entry, now)) return false;
  const bool resolving =
      entry.solicit_sent && (now < entry.solicited || now - entry.solicited < kResolveTimeout);
  return !resolving;
}

std::optional<size_t> NeighbourCache::victim(Instant now, bool replace_live) const {
  auto last_activity = [](const Entry& entry) {
    return std::max(entry.resolved ? entry.learnt : Instant{0},
                    entry.solicit_sent ? entry.solicited : Instant{0});
  };
  // The scan only runs when a new neighbour arrives at a full cache.
  std::optional<size_t> oldest_dead, oldest_live;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (entry.pinned) continue;
    std::optional<size_t>& oldest = dead(entry, now) ? oldest_dead : oldest_live;
    if (!oldest || last_activity(entry) < last_activity(entries_[*oldest])) oldest = i;
  }
  if (oldest_dead) return oldest_dead;
  return replace_live ? oldest_live : std::nullopt;
}

NeighbourCache::Entry* NeighbourCache::claim(const conn::SocketAddress& ip, Instant now,
                                             bool replace_live) {
  size_t index;
  if (used_ < entries_.size()) {
    index = used_++;
  } else {
    const std::optional<size_t> replaced = victim(now, replace_live);
    if (!replaced) return nullptr;
    index = *replaced;
    const Entry& old = entries_[index];
    unlink(slot_of(old.ip, old.hash));
  }
  Entry& entry = entries_[index];
  entry = Entry{};
  entry.ip = key_of(ip);
  entry.hash = entry.ip.hash();
  slots_[slot_of(entry.ip, entry.hash)] = static_cast<uint32_t>(index);
  return &entry;
}

void NeighbourCache::pin(const conn::SocketAddress& ip) {
  if (!ip.valid()) throw std::invalid_argument("neighbour cache: cannot pin an invalid address");
  Entry* entry = find(ip);
  if (entry == nullptr) {
    if (pinned_ + 1 >= entries_.size()) {
      throw std::invalid_argument("neighbour cache: pinning would leave no entry to learn into");
    }
    // Pinned entries are never victims, so this one displaces an unpinned.
    entry = claim(ip, 0, /*replace_live=*/true);
  }
  if (!entry->pinned) ++pinned_;
  entry->pinned = true;
}

void NeighbourCache::set(Entry& entry, const MacAddress& mac, Instant now) {
  entry.mac = mac;
  entry.resolved = true;
  entry.learnt = now;
}

void NeighbourCache::learn(const conn::SocketAddress& ip, const MacAddress& mac, Instant now) {
  if (!ip.valid()) return;
  Entry* entry = find(ip);
  if (entry == nullptr) entry = claim(ip, now, /*replace_live=*/true);
  if (entry != nullptr) set(*entry, mac, now);
}

bool NeighbourCache::update(const conn::SocketAddress& ip, const MacAddress& mac, Instant now) {
  Entry* entry = find(ip);
  if (entry == nullptr) return false;
  set(*entry, mac, now);
  return true;
}

bool NeighbourCache::confirm(const conn::SocketAddress& ip, const MacAddress& mac, Instant now) {
  Entry* entry = find(ip);
  if (entry == nullptr || (entry->resolved && entry->mac != mac)) return false;
  set(*entry, mac, now);
  return true;
}

std::optional<MacAddress> NeighbourCache::lookup(const conn::SocketAddress& ip, Instant now) const {
  const Entry* entry = find(ip);
  if (entry == nullptr || !entry->resolved) return std::nullopt;
  if (!entry->pinned && expired(*entry, now)) return std::nullopt;
  return entry->mac;
}

bool NeighbourCache::fresh(const conn::SocketAddress& ip, Instant now) const {
  const Entry* entry = find(ip);
  return entry != nullptr && entry->resolved && !expired(*entry, now);
}

NeighbourCache::Solicit NeighbourCache::should_solicit(const conn::SocketAddress& ip, Instant now) {
  if (!ip.valid()) return Solicit::kNoRoom;
  Entry* entry = find(ip);
  if (entry == nullptr) entry = claim(ip, now, /*replace_live=*/false);
  if (entry == nullptr) return Solicit::kNoRoom;
  if (entry->solicit_sent &&
      (now < entry->solicited || now - entry->solicited < kSolicitInterval)) {
    return Solicit::kWait;
  }
  entry->solicit_sent = true;
  entry->solicited = now;
  return Solicit::kSend;
}

bool learn_from_frame(const ParsedFrame& frame, NeighbourCache& cache, Instant now) {
  if (!frame.sender_ip.valid()) return false;  // a probe or DAD: answered, not learnt
  switch (frame.kind) {
    case FrameKind::kArpRequest: cache.learn(frame.sender_ip, frame.sender_mac, now); return true;
    case FrameKind::kNeighbourSolicitation:
      if (!frame.link_layer_option) return false;
      cache.learn(frame.sender_ip, frame.sender_mac, now);
      return true;
    case FrameKind::kArpReply:
    case FrameKind::kArpOther: return cache.update(frame.sender_ip, frame.sender_mac, now);
    case FrameKind::kNeighbourAdvertisement:
      if (frame.advert_override) return cache.update(frame.sender_ip, frame.sender_mac, now);
      if (frame.advert_solicited) return cache.confirm(frame.sender_ip, frame.sender_mac, now);
      return false;
    default: return false;
  }
}

}  // namespace dpquic::dataplane::dpdk
