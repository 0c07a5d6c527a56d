#pragma once
// A client's first Initial built by hand around a real ClientHello, for
// attacks that happen before any connection exists (crafted transport
// parameters, spoofed source addresses): a TLS client session writes the
// ClientHello with the given quic_transport_parameters, and it is sealed
// with the Initial keys of `dcid` (RFC 9001 §5.2) into a 1200-byte datagram.
// The keys stay with the result, so the server's Initials can be opened.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "crypto/connection_keys.h"
#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "crypto/tls_session.h"
#include "quic/wire/connection_id.h"

namespace dpquic::attacks {

struct ForgedInitial {
  std::unique_ptr<crypto::ConnectionKeys> keys;  // client role, Initial keys
  std::unique_ptr<crypto::TlsSession> tls;
  std::vector<uint8_t> datagram;  // 1200 bytes
};

// Valid client transport parameters naming `scid` as initial_source_connection_id
// (omitted when `with_scid` is false), encoded.
std::vector<uint8_t> client_transport_parameters(const wire::ConnectionId& scid,
                                                 bool with_scid = true);

// Fails the calling test (and returns an empty datagram) if any step fails.
ForgedInitial forge_client_initial(const crypto::MbManager& mb, crypto::TlsContext& client_tls,
                                   const wire::ConnectionId& dcid, const wire::ConnectionId& scid,
                                   std::span<const uint8_t> transport_parameters);

// What the server's Initials (opened with the client keys) carried.
struct InitialContents {
  size_t packets = 0;
  std::optional<uint64_t> close_error;  // the first CONNECTION_CLOSE (0x1c)
  bool crypto = false;                  // CRYPTO data (the ServerHello)
};

// Opens every Initial packet of a server datagram sent to `scid`'s owner
// and adds what it carried to `contents`; other packets are skipped.
void open_server_initials(const crypto::MbManager& mb, crypto::ConnectionKeys& keys,
                          size_t scid_length, std::span<uint8_t> datagram,
                          InitialContents& contents);

}  // namespace dpquic::attacks
