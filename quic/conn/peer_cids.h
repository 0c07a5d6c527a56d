#pragma once
// The connection IDs the peer issued to us (RFC 9000 §5.1.2, §19.15,
// §19.16): which one we send to, the unused ones kept for migration, the
// RETIRE_CONNECTION_ID frames we owe, and the stateless reset tokens of the
// CIDs we have used (§10.3.1).
//
// Bounds against a hostile peer, all fixed at construction (nothing here
// allocates afterwards):
// - at most `active_limit` CIDs held (our active_connection_id_limit);
//   more is CONNECTION_ID_LIMIT_ERROR (§5.1.1);
// - at most `retire_bound()` retired CIDs whose RETIRE_CONNECTION_ID frame is
//   not yet acknowledged (queued or in flight). RFC 9000 §5.1.2 says we
//   SHOULD track at least 2 * active_limit of them and MAY treat needing more
//   as CONNECTION_ID_LIMIT_ERROR: we do. So a peer that keeps raising Retire
//   Prior To while never acknowledging our retirements (quiche
//   CVE-2024-1410) gets the connection closed instead of growing our state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quic/conn/transport_error.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/frames.h"
#include "quic/wire/transport_params.h"
#include "quic/wire/varint.h"

namespace dpquic::conn {

class PeerConnectionIds {
 public:
  // active_limit: the active_connection_id_limit we advertised (>= 2, the
  // RFC minimum, is enforced). max_pending_retire: bound on retirements not
  // yet acknowledged; raised to 2 * active_limit if below (§5.1.2 SHOULD).
  explicit PeerConnectionIds(size_t active_limit = 4, size_t max_pending_retire = 16);

  // Sequence 0, from the peer's Initial SCID. A second call (client: the
  // server's first Initial after a Retry) replaces it.
  void set_initial(const wire::ConnectionId& cid);
  // The server's stateless_reset_token transport parameter (for sequence 0).
  void set_initial_reset_token(const wire::StatelessResetToken& token);
  // The server's preferred_address CID: sequence 1.
  void add_preferred_address_cid(const wire::ConnectionId& cid,
                                 const wire::StatelessResetToken& token);

  // A NEW_CONNECTION_ID frame. Errors:
  // - PROTOCOL_VIOLATION: we send to a zero-length CID (§19.15); a sequence
  //   repeated with another CID or token, or a CID repeated under another
  //   sequence (§19.15 MAY, taken); Retire Prior To would retire every CID;
  // - FRAME_ENCODING_ERROR: retire_prior_to > sequence, CID length not 1..20;
  // - CONNECTION_ID_LIMIT_ERROR: more than active_limit CIDs would be held,
  //   or more than retire_bound() retirements would be unacknowledged.
  // An increased Retire Prior To retires the lower sequences (switching the
  // active CID, see activate_lowest, if it is among them; the connection
  // then moves other paths whose CID went, see cid_for) before the new CID
  // is added; a sequence
  // below the largest Retire Prior To seen is retired at once. Repeated
  // frames are ignored.
  TransportError on_new_connection_id(const wire::NewConnectionIdFrame& frame);

  // The DCID we put in packets now (empty before set_initial).
  const wire::ConnectionId& active() const;
  uint64_t active_sequence() const;

  // Moves the active CID to an unused one, retiring the current one (for a
  // connection with a single path; with several, use claim_unused and
  // retire). false if none is unused (or the retirement bound is reached).
  bool switch_to_unused();
  bool has_unused() const;

  // --- Per-path CIDs (RFC 9000 §9.5) ----------------------------------------
  // Each network path sends with a CID of its own: "An endpoint MUST NOT
  // reuse a connection ID when sending to more than one destination
  // address". The connection keeps the sequence each path uses; these give
  // it out, resolve it, and take it back.
  struct ClaimedCid {
    uint64_t sequence = 0;
    wire::ConnectionId cid;
  };
  // Takes the lowest-sequence CID not yet used, for a new path (its reset
  // token counts from now, §10.3.1). nullopt if none is unused.
  std::optional<ClaimedCid> claim_unused();
  // The CID held under `sequence`; nullptr if not held (never received or
  // retired).
  const wire::ConnectionId* cid_for(uint64_t sequence) const;
  // Makes a held CID the active one: the CID of the path the connection
  // sends on (kept in step by the connection; it is the one a Retire Prior
  // To replaces first). false (nothing changes) if not held.
  bool set_active(uint64_t sequence);
  // No path uses `sequence` any more: drop it and queue its
  // RETIRE_CONNECTION_ID. false (nothing changes) if it is not held, is the
  // active CID, or the retirement bound is reached; the CID then stays held
  // and used (never handed out again) until the peer retires it.
  bool retire(uint64_t sequence);

  bool retire_frame_due() const;
  // Writes the next queued RETIRE_CONNECTION_ID frame; false (nothing
  // written) if none is queued or it does not fit. The retirement then
  // counts as in flight until acked or lost.
  bool write_retire_frame(wire::ByteWriter& writer, uint64_t& sequence);
  void on_retire_frame_lost(uint64_t sequence);
  // The packet carrying that RETIRE_CONNECTION_ID was acknowledged: the
  // retirement is complete and stops counting against retire_bound(). The
  // connection must call this, or retirements accumulate to the bound.
  void on_retire_frame_acked(uint64_t sequence);

  // Whether the last 16 bytes of a datagram are the stateless reset token of
  // a CID we have used and not retired (§10.3.1), compared in constant time.
  bool is_stateless_reset(std::span<const uint8_t> last16) const;

  size_t active_limit() const { return slots_.size(); }
  size_t retire_bound() const { return retire_bound_; }
  // CIDs held (the one in use plus unused ones).
  size_t held_count() const;
  // Retirements not yet acknowledged (queued + in flight).
  size_t pending_retire_count() const { return retirements_.size(); }

 private:
  struct Slot {
    bool live = false;
    bool used = false;  // we have sent to it: its reset token counts
    bool has_token = false;
    uint64_t sequence = 0;
    wire::ConnectionId cid;
    wire::StatelessResetToken reset_token{};
  };
  struct Retirement {
    uint64_t sequence = 0;
    bool in_flight = false;
  };

  Slot* find_live(uint64_t sequence);
  Slot* free_slot();
  // NEW_CONNECTION_ID's steps: a frame for a sequence we hold must repeat
  // it exactly (`repeat` set), and no other sequence may carry its CID; an
  // increased Retire Prior To retires what is below it; a new sequence is
  // held, or retired at once when already below Retire Prior To.
  TransportError check_repeat(const wire::NewConnectionIdFrame& frame, bool& repeat) const;
  TransportError retire_prior_to(uint64_t value);
  TransportError add_new(const wire::NewConnectionIdFrame& frame);
  // Queues a RETIRE_CONNECTION_ID for `sequence` (once); false when the bound
  // would be exceeded.
  bool queue_retirement(uint64_t sequence);
  // Drops the slot, queueing its retirement; false when the bound is hit.
  bool retire_slot(Slot& slot);
  // Makes the lowest-sequence unused CID the active one, else the lowest
  // held; false if none is held.
  bool activate_lowest();
  // Sequences we have already received (held, or retired): a 64-wide window
  // above seen_base_; everything below the window counts as seen.
  bool seen(uint64_t sequence) const;
  void mark_seen(uint64_t sequence);

  std::vector<Slot> slots_;  // active_limit slots
  size_t active_slot_ = 0;
  bool has_active_ = false;
  size_t retire_bound_;
  std::vector<Retirement> retirements_;  // capacity retire_bound_, reserved
  uint64_t largest_retire_prior_to_ = 0;
  uint64_t seen_base_ = 0;
  uint64_t seen_bits_ = 0;
};

}  // namespace dpquic::conn
