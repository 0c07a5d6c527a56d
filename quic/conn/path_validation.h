#pragma once
// Paths and their validation (RFC 9000 §8.2, §9): PATH_CHALLENGE /
// PATH_RESPONSE, the per-path anti-amplification budget (§8, §9.3), and a
// small fixed table of the paths a connection knows.
//
// Bounds against a hostile peer: at most kMaxPaths paths (a new one evicts
// an old one) and at most kMaxPendingResponses queued PATH_RESPONSE frames
// across all paths; a new PATH_CHALLENGE beyond that replaces the oldest
// queued response (quiche CVE-2023-6193 was this queue growing without
// bound). Nothing here allocates.
//
// Path ids are slot indexes (0..kMaxPaths-1); a removed or evicted path's id
// is reused by the next path added.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "quic/conn/random.h"
#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "quic/wire/varint.h"

namespace dpquic::conn {

struct PathState {
  PathAddresses addresses;
  bool validated = false;
  uint64_t bytes_received = 0;  // anti-amplification on unvalidated paths (3x)
  uint64_t bytes_sent = 0;
  bool challenge_pending = false;      // a PATH_CHALLENGE must be sent (or resent)
  std::array<uint8_t, 8> challenge{};  // data of the latest PATH_CHALLENGE
  Instant validation_deadline = kNever;
  // The connection sends on this path now (set by the connection; path 0 at
  // creation). Paths in use are never evicted.
  bool in_use = false;
  // A PATH_CHALLENGE of the open validation went out in a datagram of at
  // least 1200 bytes (set by the connection). A validation without one
  // proves the address but not the path MTU (RFC 9000 §8.2.1).
  bool challenge_padded = false;
  // The peer CID (its sequence in PeerConnectionIds) packets on this path
  // carry (RFC 9000 §9.5: one CID per destination; set by the connection).
  // A path without one cannot be sent on.
  bool has_peer_cid = false;
  uint64_t peer_cid_sequence = 0;
};

class PathTable {
 public:
  static constexpr size_t kMaxPaths = 4;
  static constexpr size_t kMaxPendingResponses = 4;
  // PATH_CHALLENGE data sent for one validation that a PATH_RESPONSE may
  // still echo: each (re)send uses fresh data (§13.3), and a response to an
  // earlier send that arrives late still validates.
  static constexpr size_t kChallengeHistory = 3;
  static constexpr uint32_t kNoPath = UINT32_MAX;

  explicit PathTable(RandomSource& random);

  // Path 0, at connection creation (in use; validated for a client, or a
  // server whose peer address is validated).
  uint32_t add_initial(const PathAddresses& addresses, bool validated);
  // The path for these addresses; nullopt if unknown.
  std::optional<uint32_t> find(const PathAddresses& addresses) const;
  // A new path (peer migration / NAT rebinding / our own migration /
  // preferred address), or a known one to validate again. When the table is
  // full, evicts the oldest path not in use, unvalidated ones first. Starts
  // validation: fresh random challenge, deadline = now + max(3 * pto,
  // 6 * kInitialRtt) (§8.2.4: three times the larger of the current PTO and
  // a new path's PTO, 2 * kInitialRtt).
  // `evicted`, if given, receives a copy of the path evicted to make room
  // (the connection retires its peer CID); untouched if none was.
  uint32_t add_and_validate(const PathAddresses& addresses, Instant now, Duration pto,
                            std::optional<PathState>* evicted = nullptr);
  // Starts (or restarts) validation of an existing path.
  void start_validation(uint32_t id, Instant now, Duration pto);

  bool exists(uint32_t id) const { return id < kMaxPaths && occupied_[id]; }
  PathState& path(uint32_t id) { return paths_[id]; }
  const PathState& path(uint32_t id) const { return paths_[id]; }

  void on_datagram_received(uint32_t id, uint64_t bytes) { paths_[id].bytes_received += bytes; }
  void on_datagram_sent(uint32_t id, uint64_t bytes) { paths_[id].bytes_sent += bytes; }
  // Bytes that may still be sent on a path: 3 * received - sent (at least 0)
  // when not validated, else UINT64_MAX.
  uint64_t amplification_budget(uint32_t id) const;

  // PATH_CHALLENGE received on path `id`: queue a PATH_RESPONSE to be sent
  // on that path (§8.2.2), replacing the oldest queued one when full.
  void on_path_challenge(uint32_t id, const std::array<uint8_t, 8>& data);
  bool response_due(uint32_t id) const;
  // Writes the oldest PATH_RESPONSE queued for path `id` and drops it from
  // the queue (sent once, §13.3); false (nothing written) if none or it
  // does not fit.
  bool write_path_response(uint32_t id, wire::ByteWriter& writer);
  size_t pending_response_count() const { return response_count_; }

  bool challenge_due(uint32_t id) const;
  // Writes PATH_CHALLENGE with the path's current data; it stays due until
  // on_challenge_sent or a matching response.
  bool write_path_challenge(uint32_t id, wire::ByteWriter& writer);
  void on_challenge_sent(uint32_t id);
  // The packet with the challenge was lost: send again, with fresh data,
  // while the validation is still open and fewer than kChallengeHistory
  // challenges went out for it (then wait for a response or the deadline).
  void on_challenge_lost(uint32_t id);

  // PATH_RESPONSE received (on any path, §8.2.3): the path whose open
  // validation sent this data becomes validated; returns its id. nullopt
  // when nothing matches (the caller may ignore it; §19.18 MAY close).
  std::optional<uint32_t> on_path_response(const std::array<uint8_t, 8>& data);

  // Open validations whose deadline is at or before `now` have failed: their
  // ids go to failed_out (failed_count of them) and they are closed (the
  // path stays, unvalidated; the connection decides what to do with it).
  // Any that do not fit in failed_out stay open and are returned next call.
  void on_timeout(Instant now, std::span<uint32_t> failed_out, size_t& failed_count);
  // Earliest open validation deadline; kNever if none.
  Instant next_deadline() const;

  void remove(uint32_t id);

 private:
  struct PendingResponse {
    uint32_t path = kNoPath;
    std::array<uint8_t, 8> data{};
  };

  void new_challenge(uint32_t id);
  void close_validation(uint32_t id);
  uint32_t pick_slot(std::optional<PathState>* evicted);
  bool validating(uint32_t id) const { return paths_[id].validation_deadline != kNever; }

  RandomSource& random_;
  std::array<PathState, kMaxPaths> paths_{};
  std::array<bool, kMaxPaths> occupied_{};
  std::array<uint64_t, kMaxPaths> created_{};  // creation order, for eviction
  uint64_t creation_counter_ = 0;
  // Earlier challenge data of the open validation, newest first (the
  // current one is PathState::challenge).
  std::array<std::array<std::array<uint8_t, 8>, kChallengeHistory - 1>, kMaxPaths>
      old_challenges_{};
  std::array<uint8_t, kMaxPaths> old_challenge_count_{};
  // PATH_RESPONSE data owed, oldest first.
  void drop_response(size_t index);
  std::array<PendingResponse, kMaxPendingResponses> responses_{};
  size_t response_count_ = 0;
};

}  // namespace dpquic::conn
