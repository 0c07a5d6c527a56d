#pragma once
// Tracing a connection (for qlog and other event logs), sans-IO.
//
// A Connection with a tracer (Connection::set_tracer) reports what happens to
// it through these hooks, each with the `now` of the call that caused it.
// Without one nothing is reported and nothing is computed: every hook call is
// behind a null check. The tracer decides what to keep; it must not call back
// into the connection, and it must outlive it (or be detached first).
//
// Packets:
//   - Received packets are reported once their payload is decrypted and found
//     not to be a duplicate, before their frames are processed (so whatever
//     the frames cause is reported after the packet). `frames` is the
//     plaintext payload.
//   - Sent packets are reported in two steps, because the burst builder
//     encrypts in place: on_packet_built() gives the plaintext frames when
//     the connection has written them (before padding and sealing), and
//     on_packet_sent() the packet's final size once the burst is sealed.
//     Every built packet is reported sent afterwards, in the order built,
//     unless sealing the burst failed (then the connection closes). In the
//     built frames the bytes of STREAM data are not in place yet (they are
//     encrypted straight from the application's buffers): a tracer may parse
//     frame headers and lengths but must not read STREAM data.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/packet_type.h"
#include "quic/wire/role.h"
#include "quic/wire/transport_params.h"

namespace dpquic::conn {

// Why a packet was discarded without being processed.
enum class PacketDropReason : uint8_t {
  kHeaderParseError,     // unparsable header or packet number
  kUnknownConnectionId,  // a coalesced packet with another DCID (RFC 9000 §12.2)
  kUnexpectedPacket,     // a type or token this side must not receive
  kUnexpectedVersion,    // a long header in a version not in use
  kUnexpectedSourceCid,  // not from the server we talk to (RFC 9000 §7.2)
  kUnknownPath,          // from an address that may not move the connection
  kKeyUnavailable,       // no keys (yet, or any more) for its level
  kDecryptionFailure,    // authentication failed
  kDuplicate,            // a packet number already received
};

// Milestones of a connection, as qlog's connection_state_updated names them.
enum class TracedState : uint8_t {
  kHandshakeComplete,   // TLS done (a server's handshake is then also confirmed)
  kHandshakeConfirmed,  // RFC 9001 §4.1.2
  kClosing,             // we sent CONNECTION_CLOSE
  kDraining,            // the peer closed
  kClosed,              // nothing left to do
};

// What ended a connection (mirrors conn::CloseReason).
enum class TracedCloseTrigger : uint8_t {
  kLocalClose,  // the application closed
  kPeerClose,   // the peer sent CONNECTION_CLOSE
  kTransportError,
  kIdleTimeout,
  kHandshakeTimeout,
  kStatelessReset,
  kVersionNegotiation,
};

struct TracedClose {
  TracedCloseTrigger trigger = TracedCloseTrigger::kTransportError;
  bool remote = false;       // the peer ended it (close frame or stateless reset)
  bool application = false;  // error_code is an application error code
  uint64_t error_code = 0;
  std::string_view reason;  // ours; the peer's is in its CONNECTION_CLOSE frame
};

struct RecoveryMetrics {
  uint64_t congestion_window = 0;
  uint64_t bytes_in_flight = 0;
  uint64_t slow_start_threshold = UINT64_MAX;  // UINT64_MAX: none yet
  Duration smoothed_rtt = 0;
  Duration latest_rtt = 0;
  Duration min_rtt = 0;
  Duration rtt_variance = 0;
  uint64_t pacing_rate = 0;           // bytes per second; 0: derived by the pacer
  uint64_t bandwidth_estimate = 0;    // bytes per second (BBR's model); 0: none
  Duration model_min_rtt = 0;         // BBR's min_rtt; 0: none
  const char* congestion_state = "";  // static: CongestionController::state_name()
};

struct TracedStart {
  wire::Role role = wire::Role::kServer;
  uint32_t version = 0;
  PathAddresses path;                // local and remote addresses
  wire::ConnectionId original_dcid;  // the client's first DCID: the trace's name
  wire::ConnectionId local_cid;      // our SCID in long headers
  wire::ConnectionId peer_cid;       // the DCID of our first packets
};

class ConnectionTracer {
 public:
  virtual ~ConnectionTracer() = default;

  virtual void on_connection_started(Instant /*now*/, const TracedStart& /*start*/) {}
  // Our own (local) or the peer's transport parameters, once known.
  virtual void on_parameters_set(Instant /*now*/, bool /*local*/,
                                 const wire::TransportParameters& /*params*/) {}
  virtual void on_packet_built(Instant /*now*/, wire::PacketType /*type*/,
                               uint64_t /*packet_number*/, std::span<const uint8_t> /*frames*/) {}
  // `length`: bytes on the wire (header, payload with padding, AEAD tag).
  virtual void on_packet_sent(Instant /*now*/, wire::PacketType /*type*/,
                              uint64_t /*packet_number*/, size_t /*length*/) {}
  virtual void on_packet_received(Instant /*now*/, wire::PacketType /*type*/,
                                  uint64_t /*packet_number*/, size_t /*length*/,
                                  std::span<const uint8_t> /*frames*/) {}
  // `type` is the packet's space as a type (1-RTT for the application space).
  virtual void on_packet_lost(Instant /*now*/, wire::PacketType /*type*/,
                              uint64_t /*packet_number*/) {}
  // `type` is meaningful only when `type_known` (the header was parsed).
  virtual void on_packet_dropped(Instant /*now*/, bool /*type_known*/, wire::PacketType /*type*/,
                                 size_t /*length*/, PacketDropReason /*reason*/) {}
  // After ACK processing, a loss timer, or a burst: the values now (they
  // may be unchanged; the tracer filters repeats).
  virtual void on_metrics_updated(Instant /*now*/, const RecoveryMetrics& /*metrics*/) {}
  // The congestion controller moved from state `old_state` to `new_state`
  // (static strings; for BBR, its state machine's names).
  virtual void on_congestion_state_updated(Instant /*now*/, const char* /*old_state*/,
                                           const char* /*new_state*/) {}
  // The 1-RTT keys moved to `generation` (RFC 9001 §6), started by us or
  // answering the peer.
  virtual void on_key_updated(Instant /*now*/, uint64_t /*generation*/, bool /*local*/) {}
  virtual void on_state_changed(Instant /*now*/, TracedState /*state*/) {}
  // Once per connection, when its end is decided (closing, draining, or a
  // silent close).
  virtual void on_connection_closed(Instant /*now*/, const TracedClose& /*close*/) {}
};

// Gives tracers to new connections (see endpoint::EndpointConfig). The
// endpoint calls create_tracer() when it creates a connection and
// release_tracer() after it destroyed it, so a tracer never outlives its
// use. Called on the endpoint's thread only.
class ConnectionTracerFactory {
 public:
  virtual ~ConnectionTracerFactory() = default;
  // Null: this connection is not traced.
  virtual ConnectionTracer* create_tracer(wire::Role role) = 0;
  virtual void release_tracer(ConnectionTracer* tracer) = 0;
};

}  // namespace dpquic::conn
