#pragma once
// A server's half-open connections whose client address is not validated:
// no token came with the Initial and no Handshake packet has arrived yet
// (RFC 9000 §8.1). These are the connections Initials from spoofed sources
// create, and the ones the endpoint may drop under pressure:
// - kept in creation order (an intrusive list over connection handles), so
//   the oldest is found at once: it is evicted when the pool is full and a
//   client that proved its address needs a slot, and it expires early
//   while Retry is on;
// - counted per source prefix (/32 for IPv4, /64 for IPv6, the smallest
//   block one subscriber is usually given), so one prefix cannot hold more
//   than a bound of them. Carrier-grade NAT puts many honest clients behind
//   one address, so the bound turns on Retry rather than refusing.
//
// Sized once for the pool; nothing allocates afterwards.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/endpoint/cid_table.h"
#include "quic/time.h"
#include "quic/wire/connection_id.h"

namespace dpquic::endpoint {

class HalfOpenList {
 public:
  // Handles are below `max_connections` (0 for a client endpoint, which
  // lists nothing); `seed` keys the prefix table's hash (source addresses
  // are chosen by the peer).
  HalfOpenList(size_t max_connections, uint64_t seed);

  // The prefix `address` is counted under: family and the first 4 (IPv4) or
  // 8 (IPv6) bytes.
  static wire::ConnectionId prefix_of(const conn::SocketAddress& address);

  // Listed connections from `address`'s prefix.
  size_t count_for(const conn::SocketAddress& address) const;
  // Lists `handle` (not listed) as the newest, started at `started`.
  void add(uint32_t handle, Instant started, const conn::SocketAddress& remote);
  // Unlists `handle`; nothing if it is not listed.
  void remove(uint32_t handle);
  bool contains(uint32_t handle) const {
    return handle < entries_.size() && entries_[handle].listed;
  }
  // The longest listed, or empty.
  std::optional<uint32_t> oldest() const;
  Instant started(uint32_t handle) const { return entries_[handle].started; }
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Entry {
    uint32_t previous = kNone;
    uint32_t next = kNone;
    Instant started = 0;
    wire::ConnectionId prefix;
    bool listed = false;
  };
  void set_count(const wire::ConnectionId& prefix, size_t count);

  std::vector<Entry> entries_;
  uint32_t head_ = kNone;  // oldest
  uint32_t tail_ = kNone;  // newest
  size_t size_ = 0;
  // Prefix -> listed connections from it (stored as the table's value).
  ConnectionIdTable prefix_counts_;
};

}  // namespace dpquic::endpoint
