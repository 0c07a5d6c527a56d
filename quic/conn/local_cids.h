#pragma once
// The connection IDs this endpoint issued to its peer (RFC 9000 §5.1.1,
// §19.15, §19.16): sequence 0 from the handshake, sequence 1 for a server's
// preferred_address, more in NEW_CONNECTION_ID frames up to the peer's
// active_connection_id_limit (and our own cap), and their retirement.
//
// Every active CID is registered with the endpoint (CidRegistry) so packets
// carrying it reach this connection. Storage is fixed at construction:
// nothing here allocates afterwards.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "crypto/tokens.h"
#include "quic/conn/cid_generator.h"
#include "quic/conn/transport_error.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/transport_params.h"
#include "quic/wire/varint.h"

namespace dpquic::conn {

// Implemented by the endpoint: routes CIDs to this connection.
class CidRegistry {
 public:
  virtual ~CidRegistry() = default;
  virtual bool register_cid(const wire::ConnectionId& cid) = 0;  // false: table full / collision
  virtual void unregister_cid(const wire::ConnectionId& cid) = 0;
};

class LocalConnectionIds {
 public:
  static constexpr size_t kDefaultMaxIssued = 8;
  // New random CIDs tried when the registry reports a collision.
  static constexpr int kRegisterAttempts = 4;

  // max_issued: our own cap on active issued CIDs (>= 1, else
  // std::invalid_argument). reset_tokens may be null (a client without
  // stateless reset support): tokens are then random. generator may be null
  // (client): CIDs are then random bytes of the initial CID's length.
  LocalConnectionIds(CidGenerator* generator, const crypto::StatelessResetTokens* reset_tokens,
                     CidRegistry& registry, size_t max_issued = kDefaultMaxIssued);
  LocalConnectionIds(const LocalConnectionIds&) = delete;
  LocalConnectionIds& operator=(const LocalConnectionIds&) = delete;

  // Sequence 0: the CID from the handshake (server: our Initial SCID;
  // client: its SCID). Registers it here (unless zero-length: an endpoint
  // using zero-length CIDs never issues more, §5.1.1). Call once.
  void set_initial(const wire::ConnectionId& cid);
  // Whether set_initial's registration succeeded (false: endpoint table
  // full or collision; the connection should not proceed).
  bool initial_registered() const { return initial_registered_; }

  // The peer's active_connection_id_limit is known: issue CIDs (registered
  // at once, NEW_CONNECTION_ID queued) up to min(limit, max_issued) active.
  void on_peer_limit(uint64_t active_connection_id_limit);

  bool new_cid_frame_due() const;
  // Writes the lowest-sequence pending NEW_CONNECTION_ID frame; false (and
  // nothing written) if none is due or it does not fit.
  bool write_new_cid_frame(wire::ByteWriter& writer, uint64_t& sequence);
  // Requeues the frame if that CID is still active (§13.3).
  void on_new_cid_frame_lost(uint64_t sequence);

  // RETIRE_CONNECTION_ID from the peer. PROTOCOL_VIOLATION when we use a
  // zero-length CID (§19.16), when `sequence` was never sent to the peer
  // (issued but still waiting for its NEW_CONNECTION_ID counts as not
  // sent: §19.16 "greater than any previously sent"), or when it
  // names the CID the packet was sent to (`packet_dcid`). A sequence already
  // retired is a retransmission: ignored. Otherwise unregisters the CID and
  // issues a replacement (if the peer's limit is known).
  TransportError on_retire(uint64_t sequence, std::span<const uint8_t> packet_dcid);

  // Connection closed: unregisters every active CID.
  void unregister_all();

  size_t active_count() const { return entries_.size(); }
  // Some active CID (the lowest sequence), for the endpoint's bookkeeping;
  // an empty CID when none is active.
  const wire::ConnectionId& any_active() const;
  bool is_active(const wire::ConnectionId& cid) const;
  // The sequence number the next issued CID gets (= CIDs issued so far).
  uint64_t next_sequence() const { return next_sequence_; }

  // Server, before the handshake: issue sequence 1 for preferred_address
  // (§5.1.1); it is registered but not sent in a NEW_CONNECTION_ID frame.
  // nullopt unless exactly sequence 0 has been issued, or on a registry
  // failure.
  std::optional<std::pair<wire::ConnectionId, wire::StatelessResetToken>>
  issue_for_preferred_address();

 private:
  struct Entry {
    uint64_t sequence = 0;
    wire::ConnectionId cid;
    wire::StatelessResetToken reset_token{};
    bool in_frame = false;       // announced in NEW_CONNECTION_ID (not the handshake)
    bool frame_pending = false;  // NEW_CONNECTION_ID to (re)send
  };

  // Issues, registers and records the next sequence; nullptr on failure.
  Entry* issue_one(bool send_frame);
  void issue_up_to_target();
  wire::ConnectionId new_cid();
  wire::StatelessResetToken token_for(const wire::ConnectionId& cid);
  void fill_random(std::span<uint8_t> out);

  CidGenerator* generator_;
  const crypto::StatelessResetTokens* reset_tokens_;
  CidRegistry& registry_;
  size_t max_issued_;
  size_t capacity_;             // entries_ never grows past its reserved capacity
  std::vector<Entry> entries_;  // active CIDs, in sequence order
  uint64_t next_sequence_ = 0;
  // One past the largest sequence the peer has been told of (handshake,
  // preferred_address or a NEW_CONNECTION_ID frame written).
  uint64_t announced_end_ = 0;
  uint64_t peer_limit_ = 0;  // 0: not known yet
  size_t initial_length_ = 0;
  bool initial_set_ = false;
  bool initial_registered_ = false;
  bool closed_ = false;  // unregister_all was called: issue nothing more
};

}  // namespace dpquic::conn
