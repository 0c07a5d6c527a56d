#pragma once
// One QUIC connection, client or server (RFC 9000, 9001, 9002), sans-IO.
//
// The endpoint owns connections and calls them in this order (the drain
// order, documented here once):
//   1. handle_datagram(now, path, ecn, bytes) for every datagram routed to
//      the connection, and handle_timeout(now) once next_timeout() <= now;
//   2. application calls (open_stream, send, read, ...) at any time;
//   3. poll_transmit(now, ...) until it builds no datagram, sending each
//      burst before the next call;
//   4. poll_event() until it returns false;
//   5. next_timeout() to know when to come back (kNever: only input wakes it).
// A connection whose is_finished() is true holds no state the peer can still
// need and is freed by the endpoint.
//
// Nothing is allocated per packet: sent packets live in the core's ring pool,
// received stream data in the core's block pool, frames to retransmit in a
// per-connection record ring, ACK processing uses the core's XOR buffer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/connection_keys.h"
#include "crypto/tls_session.h"
#include "quic/conn/connection_config.h"
#include "quic/conn/connection_trace.h"
#include "quic/conn/ecn_validator.h"
#include "quic/conn/flow_control.h"
#include "quic/conn/handshake_state.h"
#include "quic/conn/id_index.h"
#include "quic/conn/local_cids.h"
#include "quic/conn/path_mtu.h"
#include "quic/conn/path_validation.h"
#include "quic/conn/peer_cids.h"
#include "quic/conn/range_set.h"
#include "quic/conn/receive_buffer.h"
#include "quic/conn/receive_burst.h"
#include "quic/conn/receive_stream.h"
#include "quic/conn/send_stream.h"
#include "quic/conn/sent_frames.h"
#include "quic/conn/socket_address.h"
#include "quic/conn/stream_id.h"
#include "quic/conn/stream_limits.h"
#include "quic/conn/stream_scheduler.h"
#include "quic/conn/transport_error.h"
#include "quic/fixed_ring.h"
#include "quic/recovery/ack_tracker.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/loss_detection.h"
#include "quic/recovery/pacer.h"
#include "quic/transmit/burst_builder.h"
#include "quic/transmit/transmit_source.h"
#include "quic/wire/frames.h"
#include "quic/wire/header.h"
#include "quic/wire/role.h"
#include "quic/wire/transport_params.h"

namespace dpquic::conn {

enum class ConnectionState : uint8_t {
  kHandshake,    // keys being agreed
  kEstablished,  // handshake complete (a client confirms on HANDSHAKE_DONE)
  kClosing,      // we sent CONNECTION_CLOSE; answer packets with it (§10.2.1)
  kDraining,     // the peer closed; send nothing (§10.2.2)
  kClosed,       // nothing left to do: free it
};

enum class ConnectionEventType : uint8_t {
  kEstablished,
  kStreamOpened,    // the peer opened a stream (it may not be readable yet)
  kStreamReadable,  // data, FIN or a reset to read
  kStreamWritable,  // flow-control or buffer room after a refused send
  kStreamReset,     // the peer reset the stream (error_code); read() then ends it
  kStreamStopped,   // the peer sent STOP_SENDING (we reset the stream)
  // Both directions of the stream are finished (all we sent acknowledged,
  // all we received read) and its state freed: nothing more comes for it.
  kStreamClosed,
  kDatagram,  // read_datagram() has a datagram
  // Client: the server refused 0-RTT; every stream opened so far is gone
  // (RFC 9001 §4.6.2) and requests must be sent again.
  kZeroRttRejected,
  // We sent a larger MAX_STREAMS: the peer may open more streams
  // (Endpoint::peer_stream_limit says how many in all).
  kPeerStreamLimit,
  kClosed,  // the connection is gone; error_code/reason say why
};

enum class CloseReason : uint8_t {
  kNone,
  kLocalClose,      // the application closed
  kPeerClose,       // the peer sent CONNECTION_CLOSE
  kTransportError,  // we closed on a protocol error
  kIdleTimeout,
  kHandshakeTimeout,
  kStatelessReset,
  kVersionNegotiation,  // no common version
};

struct ConnectionEvent {
  ConnectionEventType type = ConnectionEventType::kEstablished;
  uint64_t stream_id = 0;
  uint64_t error_code = 0;
  CloseReason close_reason = CloseReason::kNone;
  bool application_error = false;
};

// A server connection's start: what the endpoint learnt from the first
// Initial (and a Retry token, if any).
struct ServerStart {
  uint32_t version = 0;
  wire::ConnectionId client_dcid;    // DCID of the Initial being processed
  wire::ConnectionId original_dcid;  // the client's very first DCID
  wire::ConnectionId client_scid;
  wire::ConnectionId local_cid;                  // ours, issued by the endpoint (sequence 0)
  std::optional<wire::ConnectionId> retry_scid;  // when a Retry preceded
  bool address_validated = false;                // a valid token came with the Initial
  // The Initial keys of client_dcid and `version` the endpoint derived to
  // check the Initial, taken by start_server (their client keys move out);
  // null: derived there.
  crypto::InitialKeys* initial_keys = nullptr;
};

struct ConnectionStats {
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t packets_dropped = 0;  // undecryptable, duplicate, malformed
  uint64_t packets_lost = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t stream_bytes_sent = 0;
  uint64_t stream_bytes_received = 0;
  // 1-RTT write key generations moved on: updates we started plus those
  // we answered (RFC 9001 §6.2).
  uint64_t key_updates = 0;
  uint64_t key_updates_initiated = 0;
  uint64_t datagrams_dropped = 0;   // received DATAGRAM frames the queue had no room for
  uint64_t ack_frames_ignored = 0;  // ACK frames after a packet's first
  // The `now` of start_client/start_server (a server's: its first Initial
  // accepted) and of handshake completion (0 until it completes).
  Instant started_at = 0;
  Instant handshake_completed_at = 0;
};

enum class SendResult : uint8_t {
  kOk,
  kBlocked,        // over the stream's send buffer: wait for kStreamWritable
  kInvalidStream,  // unknown, receive-only, finished or reset stream
  kClosed,         // the connection is closing
};

class Connection final : private recovery::LossEvents, private crypto::ClientHelloHook {
 public:
  Connection(CoreContext& core, const ConnectionConfig& config, wire::Role role,
             CidRegistry& registry);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // --- Set-up ------------------------------------------------------------------
  // Client: picks CIDs, writes the ClientHello (0-RTT if a ticket allows).
  // False if TLS could not start (the connection is then closed).
  bool start_client(Instant now, const PathAddresses& path, std::string_view server_name,
                    uint32_t version);
  // Server: the first Initial is then passed to handle_datagram as usual.
  bool start_server(Instant now, const PathAddresses& path, const ServerStart& start);

  // --- Input ---------------------------------------------------------------------
  void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> datagram);
  // The same as handle_datagram on each datagram in order, but consecutive
  // 1-RTT packets in the current key phase are opened in one AEAD burst
  // (receive_burst.h), with the core's ReceiveBurst.
  void handle_datagrams(Instant now, std::span<const InboundDatagram> datagrams);
  void handle_timeout(Instant now);

  // --- Output --------------------------------------------------------------------
  // Builds one burst for one path into `buffers`; `path` says where to send
  // it. out.datagram_count == 0: nothing to send now.
  transmit::BurstStatus poll_transmit(Instant now, transmit::BurstBuilder& builder,
                                      const transmit::BurstBuffers& buffers,
                                      transmit::BurstDescriptor& out, PathAddresses& path);
  Instant next_timeout() const;
  bool poll_event(ConnectionEvent& event);

  // --- Application -----------------------------------------------------------------
  std::optional<uint64_t> open_stream(StreamDirection direction);
  SendResult send(uint64_t stream_id, transmit::Chunk chunk, bool fin);
  // Bytes copied; `fin` once the whole stream was read. 0 with fin false:
  // nothing readable now (or no such stream).
  size_t read(uint64_t stream_id, std::span<uint8_t> out, bool& fin);
  // Zero-copy reading (ReceiveStream::peek and consume): the stream's next
  // contiguous bytes in place, valid until consume() or the next datagram;
  // `fin` when reading all of them reads the stream. consume() marks up to n
  // of them read and returns how many, `fin` and resets as read() does.
  std::span<const uint8_t> peek(uint64_t stream_id, bool& fin);
  size_t consume(uint64_t stream_id, size_t n, bool& fin);
  bool reset_stream(uint64_t stream_id, uint64_t error_code);
  bool stop_sending(uint64_t stream_id, uint64_t error_code);
  uint64_t stream_writable_bytes(uint64_t stream_id) const;
  // Where the stream's data goes in the send order (stream_scheduler.h);
  // false if there is no such stream with a sending part.
  bool set_stream_priority(uint64_t stream_id, const StreamPriority& priority);
  // The stream's priority, or nullopt without such a stream (a sending part).
  std::optional<StreamPriority> stream_priority(uint64_t stream_id) const;
  // Server, during the handshake: ends the connection silently, as its
  // handshake timeout would (the endpoint drops unvalidated half-open
  // connections under pressure). Nothing if it is already closed.
  void expire_handshake(Instant now);
  // Immediate close (RFC 9000 §10.2): CONNECTION_CLOSE, then closing state.
  void close(Instant now, uint64_t error_code, bool application, const char* reason);
  // RFC 9221: false if not negotiated, too large for a packet, or queue full.
  bool send_datagram(std::span<const uint8_t> payload);
  size_t read_datagram(std::span<uint8_t> out);
  // Client: migrate to a new local address (RFC 9000 §9.2): probes it and
  // moves there once validated.
  bool migrate(Instant now, const SocketAddress& new_local);
  // Client: start a key update now (tests; normally automatic).
  bool initiate_key_update();
  // Reports events to `tracer` from now on (null: none, the default). Set
  // it before start_client/start_server to see the whole connection.
  void set_tracer(ConnectionTracer* tracer) { tracer_ = tracer; }
  ConnectionTracer* tracer() const { return tracer_; }

  // --- State -------------------------------------------------------------------------
  ConnectionState state() const { return state_; }
  wire::Role role() const { return role_; }
  bool is_established() const { return state_ == ConnectionState::kEstablished; }
  bool is_finished() const { return state_ == ConnectionState::kClosed; }
  // Handshake or established: not closing, draining or closed.
  bool is_open() const {
    return state_ == ConnectionState::kHandshake || state_ == ConnectionState::kEstablished;
  }
  // Whether the peer looks gone: ack-eliciting packets of ours are in flight
  // and nothing has come from it for max(3 probe timeouts before backoff,
  // kUnresponsiveFloor). A live peer answers within one.
  bool peer_unresponsive(Instant now) const;
  static constexpr Duration kUnresponsiveFloor = kSecond;
  bool handshake_confirmed() const { return handshake_confirmed_; }
  bool address_validated() const;
  uint32_t version() const { return version_; }
  const ConnectionStats& stats() const { return stats_; }
  const PathAddresses& active_path() const { return paths_.path(active_path_).addresses; }
  const crypto::TlsSession* tls() const { return tls_.get(); }
  const crypto::ConnectionKeys& keys() const { return keys_; }
  const recovery::LossDetection& recovery() const { return loss_; }
  const recovery::CongestionController& congestion() const { return *cc_; }
  const EcnValidator& ecn() const { return ecn_; }
  // PMTU discovery on the active path (RFC 8899; see path_mtu.h).
  const PathMtu& path_mtu() const { return path_mtu_; }
  const wire::TransportParameters& peer_parameters() const { return peer_params_; }
  CloseReason close_reason() const { return close_reason_; }
  uint64_t close_error_code() const { return close_error_code_; }
  // The NEW_TOKEN the server issued in this connection (client side).
  bool received_new_token() const { return received_new_token_; }
  bool used_zero_rtt() const { return zero_rtt_accepted_; }
  // Server: whether `stream_id` is at or below a stream that carried data
  // in a 0-RTT packet. A client opens streams in order and sends 0-RTT
  // before 1-RTT, so such a stream was opened in early data: its request
  // may be a replay (RFC 8470).
  bool stream_opened_in_zero_rtt(uint64_t stream_id) const {
    return stream_id < zero_rtt_stream_limit_;
  }
  // Incompatible version negotiation (RFC 9368 §2.1, §4), client side. After
  // a Version Negotiation packet closed this connection: the version a new
  // attempt should use (our most preferred one the server listed), or 0.
  uint32_t version_after_negotiation() const { return version_after_negotiation_; }
  // Before start_client: this attempt reacts to a Version Negotiation packet
  // answering an attempt in `first_version`. Further Version Negotiation
  // packets are then ignored, and the server's version information must
  // confirm we would have chosen the same version (downgrade prevention).
  void follow_version_negotiation(uint32_t first_version) {
    version_negotiated_from_ = first_version;
  }
  uint32_t version_negotiated_from() const { return version_negotiated_from_; }
  // The CID a client uses as the first DCID (for tests and logging).
  const wire::ConnectionId& original_dcid() const { return original_dcid_; }
  // Whether the handshake-only state is still held (freed at confirmation).
  bool holds_handshake_state() const { return handshake_ != nullptr; }
  size_t open_stream_count() const { return stream_count_; }
  // Flow-control and stream-count state, read-only (tests, monitoring).
  const ReceiveWindow& receive_window() const { return receive_window_; }
  const SendCredit& send_credit() const { return send_credit_; }
  const StreamLimits& stream_limits() const { return stream_limits_; }
  // The receive window of an open stream with a receiving part, or null.
  const ReceiveWindow* stream_receive_window(uint64_t stream_id) const;

  // For the endpoint: a Retry for this client connection (checked here).
  void handle_retry(Instant now, const wire::ParsedHeader& header, std::span<const uint8_t> packet);
  // For the endpoint: a datagram no connection owns arrived on our path; if
  // it ends in one of the peer's stateless reset tokens the connection
  // drains (RFC 9000 §10.3.1). Returns whether it did.
  bool check_stateless_reset(Instant now, std::span<const uint8_t> datagram);
  // For the endpoint: a Version Negotiation packet for this client.
  void handle_version_negotiation(Instant now, std::span<const uint8_t> packet);

 private:
  struct Stream;
  struct Space {
    explicit Space(const recovery::AckTrackerConfig& config) : acks(config) {}
    recovery::AckTracker acks;
    uint64_t next_packet_number = 0;
    std::unique_ptr<ReceiveBuffer> crypto_receive;
    RangeSet crypto_lost;
    RangeSet crypto_in_flight;
    bool discarded = false;
    // Packets sent since the last ack-eliciting one (see write_frames).
    uint32_t ack_only_run = 0;
    // Packets until a packet number is skipped (1-RTT; 0: draw an interval).
    uint32_t packets_until_skip = 0;
  };
  // What shapes the one burst being built: poll_transmit makes it on its
  // stack, every step that writes the burst takes it, and it is gone when
  // poll_transmit returns, so nothing of one burst leaks into the next.
  struct Burst {
    Instant now = 0;
    uint32_t path = 0;  // the path the burst goes on
    // Only path validation frames: the congestion window is full, but
    // validation must not wait for it (RFC 9000 §9.4).
    bool path_frames_only = false;
    size_t mtu_probe_size = 0;  // non-zero: a PMTU probe of this size
    bool ecn_marked = false;    // its datagrams carry ECT
    // Per packet number space: an ACK was written, probes written so far.
    std::array<bool, 3> ack_written{};
    std::array<size_t, 3> probes_written{};
    // Packets written (core's pending_ array) and handed back as sent.
    size_t pending_count = 0;
    size_t pending_sent = 0;
    static constexpr uint32_t kNoSlot = UINT32_MAX;
    // The stream whose data came last in the packet just written, if any.
    uint32_t data_slot = kNoSlot;
    // The stream whose data fills the 1-RTT packets of a bulk run
    // (connection_transmit.cc), kNoSlot outside one.
    uint32_t bulk_slot = kNoSlot;
  };
  // The TransmitSource a BurstBuilder fills one burst from: this connection
  // seen through that burst's Burst (connection_transmit.cc).
  class BurstSource;

  // connection.cc: set-up, TLS, transport parameters, events.
  void init_common(Instant now, const PathAddresses& path);
  bool set_local_parameters(const wire::TransportParameters& params);
  void advance_tls(Instant now);
  void on_handshake_complete(Instant now);
  void on_zero_rtt_rejected(Instant now);
  void on_handshake_confirmed(Instant now);
  bool apply_peer_parameters(Instant now);
  // The peer's parameters against the handshake's CIDs, the version in use
  // and, after 0-RTT, the remembered ones.
  TransportError validate_peer_parameters(const wire::TransportParameters& params);
  void adopt_peer_parameters(Instant now, const wire::TransportParameters& params);
  void discard_space(Instant now, wire::PacketNumberSpace space);
  // Server, from TLS at the ClientHello: compatible version negotiation
  // (RFC 9368 §4) picks the version before our parameters are written.
  bool on_client_transport_parameters(std::span<const uint8_t> encoded) override;
  // Client: the server's first Initial is in another version we offered
  // (RFC 9368 §4): move our Initial keys to it. Returns whether it did.
  bool follow_server_version(const wire::ParsedHeader& header);
  void push_event(const ConnectionEvent& event);
  void push_stream_event(Stream& stream, ConnectionEventType type);

  // connection_receive.cc
  // A packet whose header does not parse ends the datagram: `bytes` from it
  // on are dropped.
  void drop_unparsed(Instant now, size_t bytes);
  void on_datagram_while_closing();
  // connection_recovery.cc: the loss detection timer fired (probes carry
  // CRYPTO data and HANDSHAKE_DONE again); paths whose validation failed.
  void on_loss_timer(Instant now);
  void handle_path_timeouts(Instant now);
  // The active path failed validation: back to a validated one, if any.
  bool fall_back_to_validated_path(Instant now);

  // The path a datagram from `path` came on (kUnknownPath: a new peer
  // address), with its bytes counted for the anti-amplification limit.
  // `hint`: the path it is likely on, checked first.
  uint32_t count_received_on_path(Instant now, const PathAddresses& path, size_t size,
                                  uint32_t hint = kUnknownPath);
  // One received packet as the receive chain sees it: handle_datagram
  // makes one per packet of a datagram on its stack and passes it down to
  // the packet's frames.
  struct Arrival {
    Instant now = 0;
    const PathAddresses& addresses;  // the datagram's
    size_t datagram_size = 0;
    transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
    // The path the datagram came on; kUnknownPath (a new peer address)
    // until add_peer_path gives it one.
    uint32_t path_id = 0;
    std::span<const uint8_t> dcid;  // this packet's
  };
  static constexpr uint32_t kUnknownPath = UINT32_MAX;
  // The receive chain of one packet: precheck_packet -> open_packet
  // (protection removed, keys and key phase) -> learn_from_packet ->
  // process_frames -> acknowledgment and paths (follow_peer_path).
  void process_packet(Arrival& arrival, std::span<uint8_t> packet, const wire::ParsedHeader& header,
                      std::span<uint8_t> datagram);
  struct OpenedPacket {
    wire::PacketNumberFields fields;
    std::span<const uint8_t> payload;
  };
  // An opened packet: duplicates, learn_from_packet, frames, acknowledgment.
  void process_opened(Arrival& arrival, std::span<uint8_t> packet, const wire::ParsedHeader& header,
                      bool original_version, const OpenedPacket& opened);
  // A run of 1-RTT packets staged, opened in one burst, then processed in
  // order (receive_burst.h).
  size_t stage_run(Instant now, std::span<const InboundDatagram> datagrams, size_t next,
                   ReceiveBurst& burst);
  bool classify_packet(const InboundDatagram& datagram, ReceiveBurst& burst);
  void choose_read_key(Instant now, std::optional<uint64_t> largest, ReceiveBurst& burst,
                       ReceiveBurst::Packet& staged, bool& other_phase);
  void process_run(Instant now, std::span<const InboundDatagram> datagrams,
                   const ReceiveBurst& burst);
  void process_staged(Instant now, const InboundDatagram& datagram, uint32_t path_id,
                      const ReceiveBurst& burst, const ReceiveBurst::Packet& staged);
  void drop_packet(Instant now, const wire::ParsedHeader& header, size_t size,
                   PacketDropReason reason);
  // Why the packet is dropped before its protection is removed; nullopt
  // when it is not.
  std::optional<PacketDropReason> precheck_packet(uint32_t path_id,
                                                  const wire::ParsedHeader& header,
                                                  bool original_version) const;
  // Removes header and packet protection, then the key phase's
  // bookkeeping. False when the packet is gone: dropped and counted, or it
  // closed the connection.
  bool open_packet(Instant now, std::span<uint8_t> packet, const wire::ParsedHeader& header,
                   bool original_version, std::span<uint8_t> datagram, OpenedPacket& opened);
  // open_packet's steps. unmask_packet removes header protection and decodes
  // the packet number (pn_error: what the decode said; kProtocolViolation
  // for reserved bits closes only once the packet opens) and says why the
  // packet is dropped, if it is; it counts nothing. open_unmasked picks the
  // read key and opens; accept_opened follows a successful open.
  std::optional<PacketDropReason> unmask_packet(std::span<uint8_t> packet,
                                                const wire::ParsedHeader& header,
                                                bool original_version,
                                                wire::PacketNumberFields& fields,
                                                wire::WireError& pn_error) const;
  bool open_unmasked(Instant now, std::span<uint8_t> packet, const wire::ParsedHeader& header,
                     bool original_version, std::span<uint8_t> datagram, wire::WireError pn_error,
                     OpenedPacket& opened);
  bool accept_opened(Instant now, crypto::EncryptionLevel level, crypto::KeyGeneration generation,
                     uint64_t packet_number, wire::WireError pn_error);
  // A packet that did not authenticate: a stateless reset, or counted
  // towards the AEAD limit (RFC 9001 §6.6).
  void on_open_failure(Instant now, const wire::ParsedHeader& header, size_t size,
                       std::span<uint8_t> datagram);
  bool after_packet_opened(Instant now, crypto::EncryptionLevel level,
                           crypto::KeyGeneration generation, uint64_t packet_number);
  // What the first packets teach: the version followed, the server's CID,
  // the client's address validated.
  void learn_from_packet(Instant now, uint32_t path_id, const wire::ParsedHeader& header,
                         bool original_version);
  // A 1-RTT packet's frames were processed: migration onto a new path, or
  // back onto a known one (RFC 9000 §9.3).
  void follow_peer_path(Instant now, uint32_t path_id, bool new_path, bool probing_only,
                        uint64_t packet_number);
  // connection_frames.cc
  TransportError process_frames(const Arrival& arrival, wire::PacketType type,
                                std::span<const uint8_t> payload, bool& ack_eliciting,
                                bool& probing_only);
  TransportError on_frame(const Arrival& arrival, wire::PacketType type, const wire::Frame& frame);
  TransportError on_crypto_frame(Instant now, crypto::EncryptionLevel level,
                                 const wire::CryptoFrame& frame);
  TransportError on_stream_frame(Instant now, const wire::StreamFrame& frame);
  TransportError count_connection_bytes(uint64_t newly, uint64_t frame_type);
  TransportError on_reset_stream(const wire::ResetStreamFrame& frame);
  TransportError on_stop_sending(const wire::StopSendingFrame& frame);
  TransportError on_max_stream_data(const wire::StreamDataLimitFrame& frame);
  TransportError on_ack_frame(Instant now, wire::PacketNumberSpace space, const wire::Frame& frame);
  void on_max_data(uint64_t maximum_data);
  TransportError on_new_connection_id(const wire::NewConnectionIdFrame& frame);
  void on_path_response(Instant now, const std::array<uint8_t, 8>& data);
  TransportError on_new_token(const wire::NewTokenFrame& frame);
  TransportError on_datagram_frame(const wire::DatagramFrame& frame);
  // Finds or (for the peer's ids) implicitly opens a stream.
  TransportError stream_for_frame(uint64_t id, bool needs_send, bool needs_receive,
                                  Stream*& stream);
  // Server: a path for the address of a datagram no path has, under validation.
  uint32_t add_peer_path(const Arrival& arrival);
  void on_new_path(Instant now, uint32_t path_id, bool non_probing, uint64_t packet_number);

  // connection_paths.cc: each path's peer CID (RFC 9000 §9.5: never one CID
  // to two destination addresses). PathState::peer_cid_sequence names it.
  // A path for `addresses` (known, or added under validation); the CID of a
  // path evicted to make room is retired.
  uint32_t add_path(Instant now, const PathAddresses& addresses);
  // Gives path `id` an unused peer CID unless it holds one; false if none.
  bool claim_path_cid(uint32_t id);
  // Client: probe and move to `addresses` at once (migration, preferred
  // address); false (nothing changes) without a CID for that path.
  bool move_to_own_path(Instant now, const PathAddresses& addresses);
  void set_active_path(uint32_t id);
  // PMTU discovery: the probe size to send now (0: none), and the burst
  // carrying it (PING and PADDING alone in one datagram, RFC 9000 §14.4).
  size_t mtu_probe_due(const Burst& burst, uint64_t cwnd, uint64_t in_flight) const;
  transmit::BurstStatus send_mtu_probe(Burst& burst, transmit::BurstBuilder& builder,
                                       const transmit::BurstBuffers& lent, size_t size,
                                       transmit::BurstDescriptor& out);
  // Runs `builder` once with the per-burst state reset around it, then
  // accounts the bytes sent on params.path_id (a sealing failure closes).
  // The path this burst goes on: one owing PATH_CHALLENGE or PATH_RESPONSE
  // that can carry them, else the active one.
  uint32_t choose_burst_path() const;
  // Datagram sizes for the burst: the peer's limit, PMTU discovery's
  // ceiling and the path's confirmed size.
  void size_segments(const Burst& burst, transmit::BurstBuffers& lent, uint64_t cwnd);
  // The burst's budgets and datagram count; false when pacing holds it
  // back (pacing_deadline_ says until when).
  bool plan_burst(Burst& burst, const transmit::BurstBuffers& lent, uint64_t cwnd,
                  uint64_t in_flight, transmit::BurstParams& params);
  transmit::BurstStatus build_burst(Burst& burst, transmit::BurstBuilder& builder,
                                    const transmit::BurstBuffers& buffers,
                                    const transmit::BurstParams& params,
                                    transmit::BurstDescriptor& out);
  // RFC 9368 §4 downgrade check after acting on Version Negotiation.
  bool confirms_negotiated_version(const wire::TransportParameters& params) const;
  // Drops path `id` (never the active one), retiring its CID unless another
  // path uses it.
  void abandon_path(uint32_t id);
  void release_peer_cid(const PathState& path);
  // No CID for path `id`: abandon another path so that its retirement
  // brings a replacement.
  void free_peer_cid_for(uint32_t id);
  // After NEW_CONNECTION_ID: a Retire Prior To may have taken paths' CIDs;
  // paths without one take new ones.
  void reassign_path_cids();
  // The DCID of packets on path `id`.
  std::span<const uint8_t> path_dcid(uint32_t id) const;
  bool detect_stateless_reset(std::span<const uint8_t> datagram);

  // connection_transmit.cc: what BurstSource asks of the connection.
  bool next_packet(const Burst& burst, crypto::EncryptionLevel level,
                   const transmit::SendAllowance& allowance, transmit::PacketHeader& header);
  transmit::PacketContents write_frames(Burst& burst, crypto::EncryptionLevel level,
                                        transmit::PacketPayloadWriter& writer,
                                        const transmit::SendAllowance& allowance);
  bool write_ping(wire::ByteWriter& frames, transmit::PacketContents& contents);
  // An ACK of the level's space is owed and not yet written in this burst.
  bool ack_due(const Burst& burst, crypto::EncryptionLevel level, const Space& sp) const;
  void write_ack(Burst& burst, crypto::EncryptionLevel level, Space& sp, wire::ByteWriter& frames,
                 PendingPacket& pending);
  // What makes a packet ack-eliciting: path frames, CRYPTO, control and
  // stream frames, or a PING when a probe carries nothing else.
  void write_eliciting_frames(Burst& burst, crypto::EncryptionLevel level, Space& sp,
                              transmit::PacketPayloadWriter& writer, bool probe,
                              transmit::PacketContents& contents, PendingPacket& pending);
  void write_path_frames(const Burst& burst, wire::ByteWriter& frames,
                         transmit::PacketContents& contents, PendingPacket& pending);
  // Padding, the packet's record for on_packet_sent, its number (and now
  // and then a skipped one).
  void finish_packet(Burst& burst, crypto::EncryptionLevel level, Space& sp,
                     const wire::ByteWriter& frames, transmit::PacketContents& contents,
                     PendingPacket& pending);
  void on_packet_sent(Burst& burst, const transmit::SentPacketInfo& packet);
  bool level_wants_to_send(const Burst& burst, crypto::EncryptionLevel level,
                           bool ack_eliciting_allowed) const;
  bool application_wants_to_send(const Burst& burst, bool ack_eliciting_allowed) const;
  // A connection-level frame or a stream's control frame is owed: what the
  // active path has to send besides stream data, ACKs and path frames.
  bool connection_frames_due() const;
  // Bulk runs (connection_transmit.cc): whether this packet is one, whether
  // the packet just built starts one, a run's packet, and its end.
  bool in_bulk_run(const Burst& burst, crypto::EncryptionLevel level,
                   const transmit::SendAllowance& allowance) const;
  void maybe_start_bulk_run(Burst& burst, const Space& sp);
  transmit::PacketContents write_bulk_packet(Burst& burst, Space& sp,
                                             transmit::PacketPayloadWriter& writer);
  void end_bulk_run(Burst& burst, Stream& stream);
  void write_crypto_frames(crypto::EncryptionLevel level, transmit::PacketPayloadWriter& writer,
                           transmit::PacketContents& contents);
  void write_control_frames(transmit::PacketPayloadWriter& writer,
                            transmit::PacketContents& contents);
  // Hands the sent packet to loss detection; false when it is not tracked
  // (its space discarded, or the ring full, which closes the connection).
  bool track_sent_packet(const Burst& burst, const transmit::SentPacketInfo& info,
                         const PendingPacket& pending);
  void write_new_token(wire::ByteWriter& frames);
  // MAX_STREAMS and STREAMS_BLOCKED of one direction, when due.
  void write_stream_limit_frames(wire::ByteWriter& frames, StreamDirection direction);
  // Stream control frames, then data in the scheduler's order, while the
  // packet has room. Returns the slot of the stream whose data came last
  // (Burst::kNoSlot: no data).
  uint32_t write_stream_frames(transmit::PacketPayloadWriter& writer,
                               transmit::PacketContents& contents);
  bool write_close_frame(crypto::EncryptionLevel level, wire::ByteWriter& writer);
  // Queues the stream for what it owes: its data in the priority order
  // (send_queue_), its control frames ahead of all data (control_queue_).
  void schedule_stream(Stream& stream);
  bool stream_control_due(const Stream& stream) const;
  void write_stream_control_frames(Stream& stream, wire::ByteWriter& frames);
  void write_stream_data(Stream& stream, transmit::PacketPayloadWriter& writer);
  void account_consumed(Stream& stream);
  // read() and consume()'s end: flow control, MAX_STREAM_DATA, freeing.
  void after_read(Stream& stream, size_t n, bool fin);

  // connection_recovery.cc: acknowledgments, losses, timers, closing.
  void on_packet_acked(wire::PacketNumberSpace space, uint64_t packet_number,
                       const recovery::SentPacket& packet) override;
  void on_packet_lost(wire::PacketNumberSpace space, uint64_t packet_number,
                      const recovery::SentPacket& packet) override;
  void on_frame_acked(wire::PacketNumberSpace space, const SentFrame& frame);
  void on_frame_lost(wire::PacketNumberSpace space, const SentFrame& frame);
  void enter_closing(Instant now, const TransportError& error, bool application,
                     uint64_t application_code);
  void enter_draining(Instant now, CloseReason reason, uint64_t code, bool application);
  void finish(CloseReason reason);
  void push_close_event(bool application);
  // Owes a CONNECTION_CLOSE at every level the peer may need (§10.2.3).
  void queue_close_frames();
  void reset_idle_timer(Instant now);
  void maybe_update_keys();
  Duration closing_period() const;
  // A PTO fired and its probes have not been sent yet (they go out at the
  // next poll_transmit): the PTO must not fire and back off again before.
  bool probes_unsent() const;
  void free_stream_if_done(Stream& stream);

  Stream* find_stream(uint64_t id) const;
  Stream& create_stream(uint64_t id);
  Space& space(wire::PacketNumberSpace s) { return spaces_[static_cast<size_t>(s)]; }
  const Space& space(wire::PacketNumberSpace s) const { return spaces_[static_cast<size_t>(s)]; }
  // connection.cc: the recovery state for the tracer (call only with one).
  void trace_metrics(Instant now);

  CoreContext& core_;
  const ConnectionConfig& config_;
  const wire::Role role_;
  CidRegistry& registry_;
  ConnectionState state_ = ConnectionState::kHandshake;
  uint32_t version_ = 0;
  uint32_t original_version_ = 0;

  // Keys and TLS.
  crypto::ConnectionKeys keys_;
  std::unique_ptr<crypto::TlsSession> tls_;
  bool handshake_complete_ = false;
  bool handshake_confirmed_ = false;
  bool peer_params_applied_ = false;
  bool zero_rtt_accepted_ = false;
  uint64_t zero_rtt_stream_limit_ = 0;  // one past the highest stream seen in 0-RTT
  bool zero_rtt_rejected_ = false;
  bool abandoning_packets_ = false;  // lost reports that requeue nothing
  bool handshake_done_pending_ = false;
  bool handshake_done_acked_ = false;  // server: the client has it
  bool new_token_pending_ = false;
  bool received_new_token_ = false;
  bool initial_discarded_ = false;
  std::string server_name_;
  wire::TransportParameters local_params_;
  wire::TransportParameters peer_params_;

  // Connection IDs.
  wire::ConnectionId original_dcid_;  // client: first DCID; server: the client's
  // Until the handshake is confirmed (handshake_state.h); null after.
  std::unique_ptr<HandshakeState> handshake_;
  uint32_t version_after_negotiation_ = 0;
  uint32_t version_negotiated_from_ = 0;
  LocalConnectionIds local_cids_;
  PeerConnectionIds peer_cids_;

  // Paths.
  PathTable paths_;
  uint32_t active_path_ = 0;
  // PMTU discovery of the active path; restarts at the base on a new one.
  PathMtu path_mtu_;
  bool peer_address_validated_ = false;  // server: the client's address
  uint64_t largest_non_probing_pn_ = 0;

  // Recovery.
  std::unique_ptr<recovery::CongestionController> cc_;
  recovery::LossDetection loss_;
  recovery::Pacer pacer_;
  EcnValidator ecn_;
  // Packet numbers sent ECT-marked, per space, as a few ranges: marking
  // changes only with the validator's state, so ranges stay few. The oldest
  // range is forgotten when full (its packets then count as unmarked, which
  // only makes validation more lenient).
  struct MarkedRanges {
    static constexpr size_t kMax = 8;
    std::array<std::pair<uint64_t, uint64_t>, kMax> ranges{};  // [first, last]
    size_t count = 0;
    void add(uint64_t packet_number);
    bool contains(uint64_t packet_number) const;
  };
  std::array<MarkedRanges, 3> ecn_marked_;
  std::array<Space, 3> spaces_;
  SentFrameLog sent_frames_;
  PendingPackets& pending_;  // the core's (connection_config.h)
  Instant now_ = 0;          // during poll_transmit

  // Flow control and streams.
  ReceiveWindow receive_window_;
  uint64_t received_total_ = 0;  // sum of the streams' highest offsets
  uint64_t consumed_total_ = 0;
  SendCredit send_credit_;
  StreamLimits stream_limits_;
  IdIndex stream_index_;
  // Slots live as long as the connection: a freed stream's slot keeps its
  // send/receive objects for the next stream (connection_stream.h), so the
  // number of slots (bounded by the stream limits) bounds stream memory.
  std::vector<std::unique_ptr<Stream>> stream_slots_;
  std::vector<uint32_t> free_stream_slots_;
  size_t stream_count_ = 0;
  // Streams with data to send, in priority order, and streams owing
  // control frames (MAX_STREAM_DATA, STOP_SENDING, RESET_STREAM,
  // STREAM_DATA_BLOCKED), which go first whatever their priority.
  StreamScheduler send_queue_;
  FixedRing<uint32_t> control_queue_{16};
  bool max_data_pending_ = false;

  // DATAGRAM frames (RFC 9221): copied in at send and at receive.
  struct QueuedDatagram {
    std::array<uint8_t, 1200> bytes;
    uint16_t length;
  };
  FixedRing<QueuedDatagram> datagrams_out_;
  FixedRing<QueuedDatagram> datagrams_in_;

  // Events for the application (stream events are deduplicated). Grows
  // with the number of streams with pending events, which stream limits
  // bound; never per packet once large enough.
  FixedRing<ConnectionEvent> events_;

  // Timers and closing.
  Instant idle_deadline_ = kNever;
  Instant last_received_ = 0;        // when a packet of the peer was last processed
  Instant close_deadline_ = kNever;  // end of the closing or draining period
  Instant last_ack_eliciting_sent_ = 0;
  // Keep-alive: when the next PING is due (kNever: off or not yet
  // confirmed), and whether one is waiting to be sent.
  Instant keep_alive_deadline_ = kNever;
  bool keep_alive_pending_ = false;
  bool ack_eliciting_since_receive_ = false;
  TransportError close_error_;
  bool close_application_ = false;
  uint64_t close_application_code_ = 0;
  bool close_frame_pending_ = false;
  // Levels (bit per crypto::EncryptionLevel) still owed a CONNECTION_CLOSE.
  uint8_t close_levels_pending_ = 0;
  uint32_t closing_packets_received_ = 0;
  CloseReason close_reason_ = CloseReason::kNone;
  uint64_t close_error_code_ = 0;
  Duration idle_timeout_ = 0;

  // Key update.
  uint64_t packets_under_key_ = 0;
  bool key_update_requested_ = false;
  std::optional<uint64_t> first_packet_in_phase_;  // our first packet of the current write phase
  bool current_phase_acked_ = false;

  // The DCID of the latest 1-RTT packet on the active path: a packet from a
  // new address with the same one lets a server out of CIDs answer there
  // with the active path's CID (RFC 9000 §9.5 MAY).
  wire::ConnectionId active_path_received_dcid_;
  uint64_t acked_in_frame_ = 0;
  uint64_t ecn_marked_in_frame_ = 0;
  bool close_event_pushed_ = false;
  Instant pacing_deadline_ = kNever;

  ConnectionStats stats_;
  ConnectionTracer* tracer_ = nullptr;
  // The congestion state last traced (a static string; "" before any).
  const char* traced_congestion_state_ = "";
};

}  // namespace dpquic::conn
