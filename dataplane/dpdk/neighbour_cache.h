#pragma once
// A shard's small neighbour cache: IPv4/IPv6 next hop -> MAC, learnt from
// ARP and neighbour discovery only (learn_from_frame), never from the
// source of a datagram (anyone can send one). Fixed capacity, allocated
// once.
//
// Invariants:
// - An entry is created only by a request for our address (learn) or by
//   our own solicitation (should_solicit); answers and announcements only
//   change entries that exist (update, confirm). So nobody makes us hold an
//   entry for an address we neither asked about nor were asked from.
// - Pinned entries (the gateways) are never replaced. Resolved, they stay
//   usable past their lifetime (stale) until an answer refreshes them, so a
//   flood that starves the refresh does not cut off every off-link peer.
// - A full cache replaces dead entries first (expired, or a solicitation
//   unanswered for kResolveTimeout), oldest first. A request for our address
//   may then replace the least recently active live entry; a solicitation
//   may not (kNoRoom), so datagrams to spoofed on-link sources cannot flush
//   resolved neighbours.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/dpdk/frame.h"
#include "quic/conn/socket_address.h"
#include "quic/time.h"

namespace dpquic::dataplane::dpdk {

// The address to resolve to reach `peer`: the peer itself when it is on
// the link (frame.h's on_link), else that family's gateway; nullopt when
// there is neither (no address of that family, or off-link without a
// gateway).
std::optional<conn::SocketAddress> next_hop(const conn::SocketAddress& peer,
                                            const InterfaceAddresses& interface);

class NeighbourCache {
 public:
  static constexpr Duration kDefaultLifetime = 300 * kSecond;
  static constexpr Duration kSolicitInterval = kSecond;
  // A solicitation unanswered this long has failed (three tries at
  // kSolicitInterval): its entry is dead, and the shard drops what it held.
  static constexpr Duration kResolveTimeout = 3 * kSecond;

  enum class Solicit : uint8_t {
    kSend,    // send a request now (recorded as sent)
    kWait,    // one went out within kSolicitInterval
    kNoRoom,  // no entry for it and none may be replaced: not resolvable now
  };

  // Throws std::invalid_argument unless 1 <= capacity < 2^31.
  explicit NeighbourCache(size_t capacity = 256, Duration lifetime = kDefaultLifetime);

  // Holds an entry for `ip` for good (a gateway), unresolved until an
  // answer names it. Start-up only; throws std::invalid_argument when it
  // would pin the last free entry or `ip` is invalid.
  void pin(const conn::SocketAddress& ip);

  // Creates or refreshes ip -> mac: a request for our address (RFC 826's
  // "am I the target", RFC 4861 §7.2.3). The port of `ip` is ignored.
  void learn(const conn::SocketAddress& ip, const MacAddress& mac, Instant now);
  // Sets ip -> mac only if an entry for `ip` exists (being resolved or
  // resolved, expired too): an ARP answer or announcement (RFC 826's
  // merge), an advertisement with the Override flag. False when none.
  bool update(const conn::SocketAddress& ip, const MacAddress& mac, Instant now);
  // A solicited advertisement without Override (RFC 4861 §7.2.5):
  // completes an entry never resolved, refreshes a resolved one with the
  // same MAC; false (nothing changes) otherwise.
  bool confirm(const conn::SocketAddress& ip, const MacAddress& mac, Instant now);

  // The MAC of `ip` if resolved and within its lifetime (pinned: at all).
  std::optional<MacAddress> lookup(const conn::SocketAddress& ip, Instant now) const;
  // Resolved and within its lifetime.
  bool fresh(const conn::SocketAddress& ip, Instant now) const;
  bool contains(const conn::SocketAddress& ip) const { return find(ip) != nullptr; }
  // Whether a request for `ip` should go out now; kSend records it sent
  // (claiming an entry if there was none).
  Solicit should_solicit(const conn::SocketAddress& ip, Instant now);

  // Entries held (resolved, being resolved or dead until replaced).
  size_t size() const { return used_; }
  size_t capacity() const { return entries_.size(); }

 private:
  struct Entry {
    conn::SocketAddress ip;  // port 0
    MacAddress mac{};
    bool resolved = false;
    bool pinned = false;
    Instant learnt = 0;
    Instant solicited = 0;
    bool solicit_sent = false;
    uint64_t hash = 0;
  };
  static constexpr uint32_t kEmptySlot = UINT32_MAX;

  Entry* find(const conn::SocketAddress& ip);
  const Entry* find(const conn::SocketAddress& ip) const;
  bool expired(const Entry& entry, Instant now) const;
  bool dead(const Entry& entry, Instant now) const;
  // A free or replaceable entry for `ip`, linked in; nullptr when none may
  // be replaced (`replace_live` off and nothing dead).
  Entry* claim(const conn::SocketAddress& ip, Instant now, bool replace_live);
  std::optional<size_t> victim(Instant now, bool replace_live) const;
  // The slot of `ip` in slots_, or the empty slot where it would go.
  size_t slot_of(const conn::SocketAddress& key, uint64_t hash) const;
  void unlink(size_t slot);
  void set(Entry& entry, const MacAddress& mac, Instant now);

  std::vector<Entry> entries_;
  // Open addressing (linear probing, at most half full) over entries_, so a
  // lookup costs one hash and usually one comparison.
  std::vector<uint32_t> slots_;
  size_t slot_mask_ = 0;
  size_t used_ = 0;
  size_t pinned_ = 0;
  Duration lifetime_;
};

// Applies what one ARP/ND frame parse_frame accepted may teach (its sender
// is on-link, its MACs individual):
//   ARP request for our address; NS from a source with its link-layer
//     option -> learn (RFC 826, RFC 4861 §7.2.3: a "STALE" entry);
//   ARP reply to us; ARP for another address -> update (RFC 826's merge:
//     the reply to our own request completes the entry we are resolving;
//     one nobody asked for finds no entry);
//   NA with Override -> update; solicited NA without it -> confirm;
//     unsolicited NA without it -> nothing (RFC 4861 §7.2.5);
//   probes and DAD (no sender address), NS without the option -> nothing.
// True when an entry was created or changed.
bool learn_from_frame(const ParsedFrame& frame, NeighbourCache& cache, Instant now);

}  // namespace dpquic::dataplane::dpdk
