#pragma once
// Our transport parameters, and the checks of the peer's that the codec
// cannot make alone (RFC 9000 §7.3, §7.4, §18.2; RFC 9221 §3).
//
// The codec (quic/wire/transport_params.h) already rejects malformed values
// and server-only parameters from a client. What needs the connection's
// context lives here: whether the connection IDs in the parameters match the
// ones seen on the wire, and whether a server that accepted 0-RTT kept the
// limits the client's 0-RTT data relied on.

#include <cstdint>
#include <optional>

#include "quic/conn/transport_error.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/role.h"
#include "quic/wire/transport_params.h"

namespace dpquic::conn {

// What this endpoint offers. The defaults are meant for production.
struct TransportConfig {
  uint64_t max_idle_timeout_ms = 30'000;
  // Connection receive window at the start; auto-tuning grows it up to
  // max_connection_window.
  uint64_t initial_max_data = 1 << 20;
  // Per-stream receive window at the start, for bidi_local, bidi_remote and
  // uni alike; grows up to max_stream_window.
  uint64_t initial_max_stream_data = 256 * 1024;
  uint64_t max_connection_window = 64 << 20;
  uint64_t max_stream_window = 16 << 20;
  uint64_t initial_max_streams_bidi = 100;
  // HTTP/3 needs at least 3 (control and the two QPACK streams).
  uint64_t initial_max_streams_uni = 3;
  uint64_t ack_delay_exponent = 3;
  uint64_t max_ack_delay_ms = 25;
  uint64_t active_connection_id_limit = 4;
  uint64_t max_udp_payload_size = 1472;
  bool disable_active_migration = false;
  // 0: DATAGRAM frames (RFC 9221) are not offered.
  uint64_t max_datagram_frame_size = 0;
};

// Why `config` cannot be used, or nullptr if it can: out-of-range values
// (RFC 9000 §18.2) and windows smaller than their initial values. Meant for
// start-up, where the caller may turn it into an exception.
const char* transport_config_error(const TransportConfig& config);

// Builds our transport parameters from a valid `config`.
// - Both roles: initial_source_connection_id = initial_scid (the SCID of our
//   first Initial).
// - Server: original_destination_connection_id = *original_dcid (the DCID of
//   the client's first Initial, before any Retry); retry_source_connection_id
//   when we sent a Retry; stateless_reset_token and preferred_address when
//   given. A client ignores these four arguments (they are server-only).
wire::TransportParameters make_local_transport_parameters(
    const TransportConfig& config, wire::Role local_role, const wire::ConnectionId& initial_scid,
    const wire::ConnectionId* original_dcid, const wire::ConnectionId* retry_scid,
    const wire::StatelessResetToken* reset_token, const wire::PreferredAddress* preferred_address);

// The connection IDs the peer's parameters must echo (RFC 9000 §7.3).
struct HandshakeCids {
  // The Source Connection ID of the first Initial we received from the peer.
  wire::ConnectionId peer_initial_scid;
  // Client only: the Destination Connection ID of our first Initial.
  wire::ConnectionId original_dcid;
  // Client only: the Source Connection ID of the Retry we processed, if any.
  std::optional<wire::ConnectionId> retry_scid;
};

// Checks the peer's parameters against the connection IDs (RFC 9000 §7.3)
// and again against the codec's value and role rules.
// - A missing initial_source_connection_id (either peer) or a missing
//   original_destination_connection_id (from a server) is
//   TRANSPORT_PARAMETER_ERROR, as §7.3 requires.
// - For the cases §7.3 allows either TRANSPORT_PARAMETER_ERROR or
//   PROTOCOL_VIOLATION (a CID value that does not match the Initial/Retry
//   packets, retry_source_connection_id missing after a Retry or present
//   without one) we use PROTOCOL_VIOLATION: the values are well-formed, the
//   handshake around them is not.
// - A server-only parameter from a client, or an invalid value, is
//   TRANSPORT_PARAMETER_ERROR (§18.2).
TransportError check_peer_transport_parameters(const wire::TransportParameters& peer,
                                               wire::Role local_role, const HandshakeCids& cids);

// Client, 0-RTT accepted (RFC 9000 §7.4.1, RFC 9221 §3): the server's new
// parameters must not lower any remembered limit the 0-RTT data relied on:
// active_connection_id_limit, initial_max_data, the three
// initial_max_stream_data limits, initial_max_streams_bidi/uni and
// max_datagram_frame_size (absent counts as 0). PROTOCOL_VIOLATION
// otherwise, with a reason naming the parameter.
TransportError check_zero_rtt_parameters(const wire::TransportParameters& remembered,
                                         const wire::TransportParameters& current);

}  // namespace dpquic::conn
