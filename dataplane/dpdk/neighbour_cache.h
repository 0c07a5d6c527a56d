#pragma once
// A shard's small neighbour cache: IPv4/IPv6 next hop -> MAC, learnt from
// ARP/ND answers and requests and from the source of received datagrams.
// Fixed capacity, allocated once; a full cache replaces its oldest entry
// (the one learnt or solicited longest ago).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/dpdk/frame.h"
#include "quic/conn/socket_address.h"
#include "quic/time.h"

namespace dpquic::dataplane::dpdk {

// The address to resolve to reach `peer`: the peer itself when it is inside
// our prefix of its family, else that family's gateway; nullopt when there
// is neither (no address of that family, or off-link without a gateway).
std::optional<conn::SocketAddress> next_hop(const conn::SocketAddress& peer,
                                            const InterfaceAddresses& interface);

class NeighbourCache {
 public:
  static constexpr Duration kDefaultLifetime = 300 * kSecond;
  static constexpr Duration kSolicitInterval = kSecond;

  explicit NeighbourCache(size_t capacity = 256, Duration lifetime = kDefaultLifetime);

  // Records (or refreshes) ip -> mac; the port of `ip` is ignored.
  void learn(const conn::SocketAddress& ip, const MacAddress& mac, Instant now);
  // The MAC of `ip` if known and not expired.
  std::optional<MacAddress> lookup(const conn::SocketAddress& ip, Instant now) const;
  // True when a request for `ip` should go out now (none sent for it within
  // kSolicitInterval); records that one is sent.
  bool should_solicit(const conn::SocketAddress& ip, Instant now);

  // Entries held (resolved or being resolved); an expired one stays until
  // it is refreshed or replaced.
  size_t size() const { return used_; }
  size_t capacity() const { return entries_.size(); }

 private:
  struct Entry {
    conn::SocketAddress ip;  // port 0
    MacAddress mac{};
    bool resolved = false;
    Instant learnt = 0;
    Instant solicited = 0;
    bool solicit_sent = false;
    bool used = false;
    uint64_t hash = 0;
  };
  static constexpr uint32_t kEmptySlot = UINT32_MAX;

  Entry* find(const conn::SocketAddress& ip);
  const Entry* find(const conn::SocketAddress& ip) const;
  Entry& claim(const conn::SocketAddress& ip);
  // The slot of `ip` in slots_, or the empty slot where it would go.
  size_t slot_of(const conn::SocketAddress& key, uint64_t hash) const;
  void unlink(size_t slot);
  size_t oldest_entry() const;

  std::vector<Entry> entries_;
  // Open addressing (linear probing, at most half full) over entries_, so a
  // lookup costs one hash and usually one comparison.
  std::vector<uint32_t> slots_;
  size_t slot_mask_ = 0;
  size_t used_ = 0;
  Duration lifetime_;
};

}  // namespace dpquic::dataplane::dpdk
