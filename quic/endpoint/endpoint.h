#pragma once
// The per-core endpoint: one per shard, owning every connection of the
// shard and all stateless behaviour (RFC 9000 §5.2, §6, §8.1, §10.3).
//
// Sans-IO. The drain order (also that of each Connection, see
// quic/conn/connection.h):
//   1. handle_datagram(now, path, ecn, bytes) for each received datagram;
//      handle_timeout(now) once poll_timeout() <= now;
//   2. application calls (connect, open_stream, send, read, ...);
//   3. poll_transmit(now, buffers, out, path) until it returns false,
//      sending each burst to `path.remote` from `path.local` before the next
//      call (stateless packets first, then connections round-robin);
//   4. poll_event(event) until it returns false;
//   5. poll_timeout() for the next wake-up.
//
// Demultiplexing: the DCID of the first packet of a datagram names the
// connection (CID table). Unknown DCIDs: a server accepts Initials (or
// answers them with Retry, or refuses them when the pool is full); short
// headers get a rate-limited stateless reset; long headers of unknown
// versions get Version Negotiation.
//
// Nothing is allocated per datagram: connections come from a pool of
// `max_connections` slots (a Connection object is allocated when a slot is
// taken, once per connection), CIDs live in a fixed-size table, timers in a
// heap whose capacity is fixed at start, stateless replies in a fixed ring.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/retry_integrity.h"
#include "crypto/tls_context.h"
#include "crypto/tokens.h"
#include "quic/conn/block_pool.h"
#include "quic/conn/cid_generator.h"
#include "quic/conn/connection.h"
#include "quic/conn/connection_config.h"
#include "quic/conn/random.h"
#include "quic/endpoint/cid_table.h"
#include "quic/endpoint/half_open_list.h"
#include "quic/endpoint/rate_limiter.h"
#include "quic/endpoint/retry_policy.h"
#include "quic/fixed_ring.h"
#include "quic/recovery/ack_processing.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/packet_sealer.h"

namespace dpquic::endpoint {

using ConnectionHandle = uint32_t;

struct EndpointConfig {
  wire::Role role = wire::Role::kServer;
  conn::ConnectionConfig connection;
  RetryPolicyConfig retry;
  // The connection pool: connections beyond it are refused with
  // CONNECTION_REFUSED.
  size_t max_connections = 4096;
  conn::CidLayout cid_layout;
  uint8_t core_id = 0;
  // Stateless resets and Version Negotiation answers per second (burst 2x).
  uint64_t stateless_replies_per_second = 1000;
  // Keys: stateless reset (32 bytes) and address tokens (16 bytes). Servers
  // of one deployment share them (crypto/host_keys.h derives both from one
  // secret); empty means random at start.
  std::vector<uint8_t> stateless_reset_key;
  std::vector<uint8_t> address_token_key;
  // Address-token keys rotated out (16 bytes each, at most
  // crypto::kMaxPreviousTokenKeys, newest first): tokens issued under them
  // are still accepted until they expire.
  std::vector<std::vector<uint8_t>> previous_address_token_keys;
  // Added to `now` for the issue time written into address tokens and for
  // the age checked when validating them; the dataplane sets it to
  // CLOCK_REALTIME - CLOCK_MONOTONIC (in the unit of Instant) so that hosts
  // with different monotonic clocks read each other's tokens.
  int64_t token_clock_offset = 0;
  // Server: half-open connections whose address is not validated, per
  // source prefix (/32 IPv4, /64 IPv6; HalfOpenList). An Initial beyond it
  // without a valid token gets Retry (CONNECTION_REFUSED with
  // RetryMode::kNever). 0: no bound.
  size_t max_half_open_per_prefix = 32;
  // Server, Retry auto or always: while half-open connections hold the
  // share of the pool that turns Retry on, unvalidated ones older than this
  // are dropped, instead of waiting for the handshake timeout. An honest
  // client proves its address with the Retry's token.
  Duration crowded_handshake_timeout = 2 * kSecond;
  // Receive-buffer blocks of the core (4 KiB each).
  size_t receive_blocks_initial = 1024;
  size_t receive_blocks_max = 1 << 20;
  // Tracers for new connections (qlog), or null: none. Not owned; it must
  // outlive the endpoint.
  conn::ConnectionTracerFactory* tracer_factory = nullptr;
};

struct EndpointEvent {
  ConnectionHandle connection = 0;
  conn::ConnectionEvent event;
};

struct EndpointStats {
  uint64_t datagrams_received = 0;
  uint64_t datagrams_dropped = 0;  // unroutable, malformed, too small
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // pool or CID table full
  uint64_t retries_sent = 0;
  uint64_t version_negotiations_sent = 0;
  uint64_t stateless_resets_sent = 0;
  uint64_t stateless_replies_dropped = 0;  // rate-limited or queue full
  uint64_t invalid_tokens = 0;
  uint64_t connection_timeouts = 0;  // connection timers handled
  // Unvalidated half-open connections dropped: evicted for a client with a
  // valid token when the pool was full, or expired early while crowded.
  uint64_t half_open_evicted = 0;
  uint64_t half_open_expired = 0;
  // Initials without a valid token from a prefix at its bound.
  uint64_t half_open_prefix_limited = 0;
};

// The per-core resources the endpoint shares with its connections. Created
// at start (it allocates; it may throw on bad configuration).
class Endpoint {
 public:
  Endpoint(const EndpointConfig& config, const crypto::MbManager& mb, crypto::TlsContext& tls);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // --- Input ---------------------------------------------------------------------
  void handle_datagram(Instant now, const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> bytes);
  // The same as handle_datagram on each datagram in order (a GRO batch, an
  // RX burst). Consecutive short-header datagrams with one DCID go to their
  // connection as one run (Connection::handle_datagrams), opened in one AEAD
  // burst, with the endpoint's bookkeeping once per run.
  void handle_datagrams(Instant now, std::span<const conn::InboundDatagram> datagrams);
  void handle_timeout(Instant now);

  // --- Output --------------------------------------------------------------------
  bool poll_transmit(Instant now, const transmit::BurstBuffers& buffers,
                     transmit::BurstDescriptor& out, conn::PathAddresses& path);
  Instant poll_timeout();
  bool poll_event(EndpointEvent& event);

  // --- Application -----------------------------------------------------------------
  // Client: opens a connection; nullopt when the pool is full. A nonzero
  // `negotiated_from`: this attempt reacts to a Version Negotiation packet
  // that answered an attempt in that version (see
  // Connection::version_after_negotiation, RFC 9368 §4).
  std::optional<ConnectionHandle> connect(Instant now, const conn::PathAddresses& path,
                                          std::string_view server_name,
                                          uint32_t version = 0x00000001,
                                          uint32_t negotiated_from = 0);
  // The connection behind a handle (null once freed), for tests and
  // diagnostic tools that inspect it. After changing it directly, call
  // wake(handle) so the endpoint polls it again. Applications use the verbs
  // and queries below, which need neither.
  conn::Connection* connection(ConnectionHandle handle);
  void wake(ConnectionHandle handle);
  std::optional<uint64_t> open_stream(ConnectionHandle handle, conn::StreamDirection direction);
  conn::SendResult send(ConnectionHandle handle, uint64_t stream_id, transmit::Chunk chunk,
                        bool fin);
  size_t read(ConnectionHandle handle, uint64_t stream_id, std::span<uint8_t> out, bool& fin);
  // Zero-copy reading (conn::Connection::peek and consume): the stream's
  // next contiguous bytes in place, valid until consume() or the next
  // datagram handed to this endpoint; then consume() what was used.
  std::span<const uint8_t> peek(ConnectionHandle handle, uint64_t stream_id, bool& fin);
  size_t consume(ConnectionHandle handle, uint64_t stream_id, size_t n, bool& fin);
  // Where the stream's data goes in its connection's send order
  // (quic/conn/stream_scheduler.h). False without such a stream.
  bool set_stream_priority(ConnectionHandle handle, uint64_t stream_id,
                           const conn::StreamPriority& priority);
  void close(Instant now, ConnectionHandle handle, uint64_t error_code, const char* reason);
  // How many streams of `direction` the peer may open in all: our initial
  // limit, then each larger MAX_STREAMS sent (kPeerStreamLimit reports
  // those); 0 without such a connection.
  uint64_t peer_stream_limit(ConnectionHandle handle, conn::StreamDirection direction);
  // Streams of `direction` the peer opened that are not finished yet (on our
  // side, data still unacknowledged or unread); 0 without such a
  // connection. A drained connection has none.
  uint64_t peer_open_streams(ConnectionHandle handle, conn::StreamDirection direction);
  // RESET_STREAM and STOP_SENDING (RFC 9000 §19.4, §19.5); false without
  // such a stream.
  bool reset_stream(ConnectionHandle handle, uint64_t stream_id, uint64_t error_code);
  bool stop_sending(ConnectionHandle handle, uint64_t stream_id, uint64_t error_code);

  // Queries: false, 0 or empty without such a connection.
  // A connection is behind the handle (until its kClosed has been polled).
  bool exists(ConnectionHandle handle);
  // Connection::peer_unresponsive, is_open (handshake or established) and
  // is_established.
  bool peer_unresponsive(ConnectionHandle handle, Instant now);
  bool is_open(ConnectionHandle handle);
  bool is_established(ConnectionHandle handle);
  // The ALPN protocol the handshake chose; empty before that.
  std::string_view alpn(ConnectionHandle handle);
  // What the stream may queue now (Connection::stream_writable_bytes).
  uint64_t stream_writable_bytes(ConnectionHandle handle, uint64_t stream_id);
  Duration smoothed_rtt(ConnectionHandle handle);
  const conn::ConnectionStats* connection_stats(ConnectionHandle handle);
  // Server: whether new connections are taken. While not (a graceful stop),
  // every new client Initial is answered with CONNECTION_REFUSED, so the
  // client tries elsewhere; existing connections go on.
  void set_accepting(bool accepting) { accepting_ = accepting; }
  bool accepting() const { return accepting_; }
  // Replaces the stateless reset and address-token keys (a host secret
  // rotated and re-read). False, with every key unchanged, if one breaks the
  // sizes EndpointConfig gives. Tokens under the previous keys still
  // validate; stateless resets for CIDs issued before carry tokens under the
  // new key, which those connections' peers do not recognise.
  bool replace_keys(std::span<const uint8_t> stateless_reset_key,
                    std::span<const uint8_t> address_token_key,
                    std::span<const std::vector<uint8_t>> previous_address_token_keys = {});
  // Drops every connection at once, sending nothing and delivering no more
  // events: for shutdown after the graceful close had its time, and for an
  // application about to destroy the ChunkPool its queued data lives in.
  void reset_connections();

  // --- State -----------------------------------------------------------------------
  size_t connection_count() const { return connection_count_; }
  size_t half_open_count() const { return half_open_count_; }
  // Half-open connections whose client address is not validated yet.
  size_t unvalidated_count() const { return unvalidated_.size(); }
  const EndpointStats& stats() const { return stats_; }
  conn::CoreContext& core() { return core_; }
  size_t cid_table_size() const { return cid_table_.size(); }
  // Entries in the timer heap: at most one per live connection.
  size_t timer_entries() const { return timers_.size(); }

 private:
  struct Slot;
  struct StatelessReply {
    conn::PathAddresses path;
    uint16_t length = 0;
    std::array<uint8_t, 1500> bytes;
  };

  void accept_initial(Instant now, const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                      std::span<uint8_t> bytes, const wire::ParsedHeader& header);
  // For an Initial without a valid token: answers it with Retry, or refuses
  // it (a prefix at its bound without Retry); true if it was answered so.
  bool answer_unvalidated(Instant now, const conn::PathAddresses& path,
                          const wire::ParsedHeader& header);
  void send_retry(Instant now, const conn::PathAddresses& path, const wire::ParsedHeader& header);
  // Creates the server connection for an accepted Initial in a free slot.
  void open_server_connection(Instant now, const conn::PathAddresses& path,
                              transmit::EcnCodepoint ecn, std::span<uint8_t> bytes,
                              const wire::ParsedHeader& header, const crypto::ValidatedToken* token,
                              crypto::InitialKeys* initial_keys);
  // While crowded, drops unvalidated half-open connections older than
  // crowded_handshake_timeout.
  void expire_unvalidated(Instant now);
  // Drops the oldest unvalidated half-open connection at once, its slot
  // free for reuse; its kClosed event is delivered before any other.
  bool evict_unvalidated(Instant now);
  void refuse_initial(const conn::PathAddresses& path, const wire::ParsedHeader& header,
                      wire::TransportErrorCode code);
  // Whether the datagram's first packet (a client Initial) authenticates
  // under the Initial keys of its DCID: opened on a copy, so that nothing is
  // allocated or kept for one that does not (RFC 9001 §5.3). The keys stay
  // in checked_initial_ for the connection.
  bool initial_packet_opens(const wire::ParsedHeader& header, std::span<const uint8_t> bytes);
  void reply_stateless_reset(Instant now, const conn::PathAddresses& path,
                             std::span<const uint8_t> bytes, std::span<const uint8_t> dcid);
  bool detect_stateless_reset(Instant now, const conn::PathAddresses& path,
                              std::span<const uint8_t> bytes);
  // Queues one stateless reply to `path`: `write` fills the buffer it is
  // given and returns the length (0: nothing to send). False when dropped:
  // queue full or, if `rate_limited`, over the stateless-reply rate.
  template <typename Write>
  bool queue_reply(Instant now, bool rate_limited, const conn::PathAddresses& path, Write&& write);
  bool send_version_negotiation(Instant now, const conn::PathAddresses& path,
                                const wire::ParsedHeader& header);
  // A CONNECTION_CLOSE with `code` in an Initial packet answering `header`.
  size_t write_refusal(const wire::ParsedHeader& header, wire::TransportErrorCode code,
                       std::span<uint8_t> out);
  std::optional<ConnectionHandle> take_slot();
  // A connection was just created in `slot`: give it a tracer, if any.
  void attach_tracer(Slot& slot);
  // Destroys the slot's connection, then releases its tracer.
  void destroy_connection(Slot& slot);
  // After any call into a connection: timers, transmit and event queues,
  // freeing.
  void after_call(ConnectionHandle handle);
  void free_slot(ConnectionHandle handle);
  // Sets (kNever: removes) the slot's entry in the timer heap.
  void push_timer(ConnectionHandle handle, Instant deadline);
  void index_address(Slot& slot);
  void unindex_address(Slot& slot);
  // The connection a short-header datagram's DCID names, if it has one.
  std::optional<ConnectionHandle> short_header_owner(std::span<const uint8_t> bytes) const;
  // How many datagrams from `first` share its short header's DCID.
  size_t run_length(std::span<const conn::InboundDatagram> datagrams, size_t first) const;

  EndpointConfig config_;
  const crypto::MbManager& mb_;
  // Per-core resources (CoreContext points at these).
  conn::RandomSource random_;
  recovery::SentPacketPool sent_packet_pool_;
  recovery::AckXorBuffer ack_buffer_;
  conn::BlockPool blocks_;
  conn::CidGenerator cid_generator_;
  crypto::StatelessResetTokens reset_tokens_;
  crypto::AddressTokens address_tokens_;
  crypto::RetryIntegrity retry_integrity_;
  conn::ClientTokenStore client_tokens_;
  conn::PendingPackets pending_packets_{};
  conn::ReceiveBurst receive_burst_;
  conn::CoreContext core_;
  transmit::CryptoPacketSealer sealer_;
  std::unique_ptr<transmit::BurstBuilder> builder_;

  ConnectionIdTable cid_table_;
  // Remote address (encoded, at most 19 bytes) -> connection, so a datagram
  // no CID routes can be checked against the one connection on that address
  // for a stateless reset (RFC 9000 §10.3.1) in O(1), without a scan.
  ConnectionIdTable address_table_;
  uint64_t address_erasures_ = 0;  // entries erased so far (see Slot::owns_address)
  RetryPolicy retry_policy_;
  TokenBucket stateless_limiter_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<ConnectionHandle> free_slots_;
  size_t connection_count_ = 0;
  size_t half_open_count_ = 0;
  HalfOpenList unvalidated_;
  // kClosed events of evicted connections, whose slots were reused before
  // the application polled: delivered first. At most one per slot.
  std::vector<EndpointEvent> evicted_closes_;
  size_t evicted_closes_read_ = 0;
  bool accepting_ = true;

  FixedRing<ConnectionHandle> transmit_queue_;
  FixedRing<ConnectionHandle> event_queue_;
  struct TimerEntry {
    Instant deadline;
    ConnectionHandle handle;
  };
  // A min-heap by deadline, indexed by Slot::timer_position; its capacity
  // (one entry per connection) is reserved at start.
  std::vector<TimerEntry> timers_;
  std::vector<ConnectionHandle> due_timers_;  // handle_timeout's scratch
  void place_timer(size_t position, const TimerEntry& entry);
  size_t sift_timer_up(size_t position);
  void sift_timer_down(size_t position);
  FixedRing<StatelessReply> replies_;
  std::vector<uint8_t> initial_scratch_;  // initial_packet_opens()' copy
  crypto::InitialKeys checked_initial_;   // and the keys it opened with
  EndpointStats stats_;
};

}  // namespace dpquic::endpoint
