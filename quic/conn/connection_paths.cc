// Connection: the peer connection ID each path sends with (RFC 9000 §9.5,
// §5.1.2).
//
// "An endpoint MUST NOT reuse a connection ID when sending to more than one
// destination address": every path holds a CID of its own, claimed from
// PeerConnectionIds when the path is created, and retired
// (RETIRE_CONNECTION_ID) when the path is abandoned: evicted from the path
// table, failed validation while not active, or replaced (a client's path
// once it has moved to a new one that validated). A Retire Prior To from the
// peer that takes a path's CID moves the path to an unused one, or abandons
// it; the active path then follows PeerConnectionIds' choice.
//
// One exception, the §9.5 MAY: a server with no unused CID that receives
// packets from a new address carrying the same Destination Connection ID as
// on the active path (the peer did not change it: typically a NAT
// rebinding) answers there with the active path's CID, from the same local
// address. Otherwise a path without a CID is never sent on, nor moved to
// (§9.5: "An endpoint that exhausts available connection IDs cannot ...
// respond to probes or attempts by its peer to migrate"), until a CID
// arrives: another path not in use is abandoned so that its retirement
// brings a replacement (§5.1.2), which the waiting path takes. If none comes
// in time, its validation fails and the path is dropped.

#include "quic/conn/connection.h"

namespace dpquic::conn {

uint32_t Connection::add_path(Instant now, const PathAddresses& addresses) {
  std::optional<PathState> evicted;
  const uint32_t id = paths_.add_and_validate(
      addresses, now, loss_.pto_duration(wire::PacketNumberSpace::kApplication), &evicted);
  if (evicted) release_peer_cid(*evicted);
  return id;
}

bool Connection::claim_path_cid(uint32_t id) {
  PathState& path = paths_.path(id);
  if (path.has_peer_cid && peer_cids_.cid_for(path.peer_cid_sequence) != nullptr) {
    // Its own, unless it shares the active path's (the §9.5 exception).
    if (id == active_path_ ||
        path.peer_cid_sequence != paths_.path(active_path_).peer_cid_sequence) {
      return true;
    }
  }
  const std::optional<PeerConnectionIds::ClaimedCid> claimed = peer_cids_.claim_unused();
  if (!claimed) return false;
  path.has_peer_cid = true;
  path.peer_cid_sequence = claimed->sequence;
  return true;
}

bool Connection::move_to_own_path(Instant now, const PathAddresses& addresses) {
  // Check for a CID before adding: adding may evict a path.
  const std::optional<uint32_t> known = paths_.find(addresses);
  if (known == active_path_) return false;  // already there
  const bool has_own_cid =
      known && paths_.path(*known).has_peer_cid &&
      paths_.path(*known).peer_cid_sequence != paths_.path(active_path_).peer_cid_sequence;
  if (!has_own_cid && !peer_cids_.has_unused()) return false;
  const uint32_t id = add_path(now, addresses);
  if (!claim_path_cid(id)) return false;  // not reached: checked above
  set_active_path(id);                    // send there at once; validated by the challenge
  return true;
}

void Connection::set_active_path(uint32_t id) {
  if (paths_.exists(active_path_)) paths_.path(active_path_).in_use = false;
  const bool moved = id != active_path_;
  active_path_ = id;
  PathState& path = paths_.path(id);
  if (moved) {
    // A new path's MTU is unknown: back to the base (RFC 8899 §5.2). What
    // the old path's packets still in flight meet says nothing about it.
    path_mtu_.reset(path_mtu_.base(),
                    path.addresses.remote.family == AddressFamily::kIpv6 ? PathMtu::kIpv6Overhead
                                                                         : PathMtu::kIpv4Overhead,
                    space(wire::PacketNumberSpace::kApplication).next_packet_number);
  }
  path.in_use = true;
  if (path.has_peer_cid) (void)peer_cids_.set_active(path.peer_cid_sequence);
}

void Connection::release_peer_cid(const PathState& path) {
  if (!path.has_peer_cid) return;
  for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) {
    if (!paths_.exists(id)) continue;
    const PathState& other = paths_.path(id);
    if (&other != &path && other.has_peer_cid &&
        other.peer_cid_sequence == path.peer_cid_sequence) {
      return;  // still in use
    }
  }
  // False when not held (the peer retired it) or the retirement bound is
  // reached: the CID then stays used, never handed out again.
  (void)peer_cids_.retire(path.peer_cid_sequence);
}

void Connection::abandon_path(uint32_t id) {
  if (id == active_path_ || !paths_.exists(id)) return;
  const PathState path = paths_.path(id);
  paths_.remove(id);
  release_peer_cid(path);
}

void Connection::reassign_path_cids() {
  PathState& active = paths_.path(active_path_);
  const uint64_t active_sequence = peer_cids_.active_sequence();
  const bool active_changed = !active.has_peer_cid || active.peer_cid_sequence != active_sequence;
  active.has_peer_cid = true;
  active.peer_cid_sequence = active_sequence;
  for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) {
    if (id == active_path_ || !paths_.exists(id)) continue;
    PathState& path = paths_.path(id);
    if (!path.has_peer_cid) continue;
    const bool lost = peer_cids_.cid_for(path.peer_cid_sequence) == nullptr;
    const bool shares_active = !lost && path.peer_cid_sequence == active_sequence;
    if (!lost && !shares_active) continue;
    // A CID of its own if there is one; else a path that kept sharing the
    // active path's CID under the §9.5 exception may go on doing so, but
    // one that lost its CID, or whose CID the active path took, is dropped.
    path.has_peer_cid = false;
    if (claim_path_cid(id)) continue;
    if (shares_active && !active_changed) {
      path.has_peer_cid = true;
      continue;
    }
    abandon_path(id);  // nothing to retire: gone, or the active path's
  }
  // A path left without a CID (none was unused when it came) takes one
  // that just arrived, and can then be answered and moved to.
  for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) {
    if (paths_.exists(id) && !paths_.path(id).has_peer_cid) (void)claim_path_cid(id);
  }
}

void Connection::free_peer_cid_for(uint32_t id) {
  // Another path not in use gives up its CID, an unvalidated one first
  // (e.g. the old address still under §9.3.3 re-validation): where the peer
  // is now matters more. Its retirement makes the peer issue a replacement
  // (§5.1.2), which the new path takes in reassign_path_cids.
  uint32_t victim = PathTable::kNoPath;
  for (const bool unvalidated_only : {true, false}) {
    for (uint32_t other = 0; other < PathTable::kMaxPaths && victim == PathTable::kNoPath;
         ++other) {
      if (other == id || other == active_path_ || !paths_.exists(other)) continue;
      const PathState& path = paths_.path(other);
      if (path.has_peer_cid && !(unvalidated_only && path.validated)) victim = other;
    }
  }
  if (victim != PathTable::kNoPath) abandon_path(victim);
}

std::span<const uint8_t> Connection::path_dcid(uint32_t id) const {
  const PathState& path = paths_.path(id);
  if (path.has_peer_cid) {
    if (const wire::ConnectionId* cid = peer_cids_.cid_for(path.peer_cid_sequence)) {
      return cid->span();
    }
  }
  return peer_cids_.active().span();
}

}  // namespace dpquic::conn
