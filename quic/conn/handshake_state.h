#pragma once
// What a connection needs only until its handshake is confirmed: the
// connection IDs and token of its long-header packets, Retry, and the
// handshake timer.
//
// The connection makes it at its start and frees it when the handshake is
// confirmed (RFC 9001 §4.1.2). By then the Initial, Handshake and 0-RTT keys
// are discarded, so no long-header packet is built or read afterwards; what
// arrives later in a long header is dropped for want of keys.

#include <cstdint>
#include <optional>
#include <vector>

#include "quic/time.h"
#include "quic/wire/connection_id.h"

namespace dpquic::conn {

struct HandshakeState {
  // The handshake timeout; kNever once the handshake is complete.
  Instant deadline = kNever;
  // Our Source Connection ID in long headers.
  wire::ConnectionId local_initial_cid;
  // The DCID the current Initial keys derive from: the client's first DCID
  // or its Retry's SCID on the client, the client's DCID on the server.
  wire::ConnectionId initial_dcid;
  // The SCID of the peer's first Initial (client: empty until the server's
  // first Initial was processed).
  wire::ConnectionId peer_initial_scid;
  // Server: the SCID of the Retry that validated the client; client: that
  // of the Retry it took.
  std::optional<wire::ConnectionId> retry_scid;
  bool retry_received = false;         // client: a Retry was taken
  std::vector<uint8_t> initial_token;  // client: the token its Initials carry
};

}  // namespace dpquic::conn
