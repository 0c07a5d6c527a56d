#pragma once
// Stream counts (RFC 9000 §4.6, §19.11, §19.14): how many streams of each
// type each side may open over the connection's lifetime.
//
// Two independent halves, each per direction (bidirectional/unidirectional):
// - Local streams: we open them in id order up to the peer's limit (transport
//   parameter, raised by MAX_STREAMS). At the limit we owe one
//   STREAMS_BLOCKED for that limit value.
// - Peer streams: the peer opens them, implicitly in id order (§3.2), up to
//   the largest limit we advertised. As peer streams are freed we replenish
//   credit: the next limit is closed + window, where window is the initial
//   limit, so at most `window` peer streams are ever alive at once. A new
//   MAX_STREAMS is due once half a window of credit has been freed since the
//   last one (or when the frame carrying the current value was lost).
//
// Everything here is fixed-size: no allocation after construction.

#include <array>
#include <cstdint>
#include <optional>

#include "quic/conn/stream_id.h"
#include "quic/conn/transport_error.h"
#include "quic/wire/role.h"

namespace dpquic::conn {

// Limits above this would allow ids beyond 2^62 - 1 (RFC 9000 §4.6).
inline constexpr uint64_t kMaxStreamsValue = uint64_t{1} << 60;

class StreamLimits {
 public:
  // local_max_*: what we allow the peer (the initial_max_streams_bidi/uni we
  // advertise; also the replenishment window). Values above 2^60 are cut
  // to 2^60.
  StreamLimits(wire::Role local_role, uint64_t local_max_bidi, uint64_t local_max_uni);

  // The peer's initial_max_streams_bidi/uni (cut to 2^60; the transport
  // parameter decoder already rejects larger values).
  void set_peer_limits(uint64_t peer_max_bidi, uint64_t peer_max_uni);

  // Opens our next stream of `direction`: its id, or nullopt when the peer's
  // limit is reached (then streams_blocked_due(direction) turns true, once
  // per limit value).
  std::optional<uint64_t> open_local(StreamDirection direction);

  // A frame referenced stream `id` (any initiator). For a peer stream within
  // our advertised limit: ok, and `newly_opened_begin` is the first id of the
  // range this opens implicitly (ids [*newly_opened_begin, id] of that type,
  // RFC 9000 §3.2), or nullopt if `id` was already open. Errors:
  // STREAM_LIMIT_ERROR for a peer stream beyond our advertised limit;
  // STREAM_STATE_ERROR for a local stream we never opened (whether that
  // closes the connection depends on the frame; the caller decides).
  TransportError on_peer_stream(uint64_t id, std::optional<uint64_t>& newly_opened_begin);

  bool peer_stream_opened(uint64_t id) const;
  bool local_stream_opened(uint64_t id) const;

  // A peer-initiated stream of `direction` was fully closed and freed:
  // replenishes one stream of credit. Ignored if it would count more closed
  // streams than were opened (a caller bug must not inflate credit).
  void on_peer_stream_closed(StreamDirection direction);

  // Whether a MAX_STREAMS for `d` should be sent, and its value.
  bool max_streams_due(StreamDirection d) const;
  uint64_t next_max_streams(StreamDirection d) const;
  void on_max_streams_sent(StreamDirection d, uint64_t value);
  // A packet carrying MAX_STREAMS(value) was lost: due again unless a larger
  // value was sent since.
  void on_max_streams_lost(StreamDirection d, uint64_t value);

  // MAX_STREAMS received from the peer. Only raises the limit; a value above
  // 2^60 is FRAME_ENCODING_ERROR (RFC 9000 §19.11).
  TransportError on_max_streams(StreamDirection d, uint64_t maximum);

  // STREAMS_BLOCKED owed for `d`, carrying the peer's current limit.
  bool streams_blocked_due(StreamDirection d) const;
  uint64_t streams_blocked_value(StreamDirection d) const;
  void on_streams_blocked_sent(StreamDirection d);
  // A packet carrying STREAMS_BLOCKED(value) was lost: due again if we are
  // still blocked at that limit.
  void on_streams_blocked_lost(StreamDirection d, uint64_t value);

  // --- Inspection ---
  wire::Role local_role() const { return local_role_; }
  // The peer's current limit on our streams of `d`.
  uint64_t peer_max_streams(StreamDirection d) const { return at(d).peer_max; }
  // The largest limit we advertised to the peer for `d`.
  uint64_t advertised_max_streams(StreamDirection d) const { return at(d).advertised; }
  // How many streams of `d` we opened / the peer opened (including closed).
  uint64_t local_opened_count(StreamDirection d) const { return at(d).local_opened; }
  uint64_t peer_opened_count(StreamDirection d) const { return at(d).peer_opened; }
  uint64_t peer_closed_count(StreamDirection d) const { return at(d).peer_closed; }
  // Peer streams of `d` opened and not yet freed: never above the window.
  uint64_t peer_live_count(StreamDirection d) const {
    return at(d).peer_opened - at(d).peer_closed;
  }

 private:
  struct PerDirection {
    // Our streams.
    uint64_t local_opened = 0;
    uint64_t peer_max = 0;
    bool blocked_due = false;
    // The peer limit a STREAMS_BLOCKED was last sent for, if any.
    std::optional<uint64_t> blocked_sent_at;

    // The peer's streams.
    uint64_t window = 0;
    uint64_t advertised = 0;
    uint64_t peer_opened = 0;
    uint64_t peer_closed = 0;
    bool max_streams_retransmit = false;
  };

  static constexpr size_t index_of(StreamDirection d) { return static_cast<size_t>(d); }
  PerDirection& at(StreamDirection d) { return directions_[index_of(d)]; }
  const PerDirection& at(StreamDirection d) const { return directions_[index_of(d)]; }
  wire::Role peer_role() const {
    return local_role_ == wire::Role::kClient ? wire::Role::kServer : wire::Role::kClient;
  }

  wire::Role local_role_;
  std::array<PerDirection, 2> directions_{};
};

}  // namespace dpquic::conn
