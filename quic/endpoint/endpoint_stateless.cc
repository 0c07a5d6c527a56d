// The endpoint's answers to datagrams no connection owns: accepting or
// retrying Initials, refusing them statelessly, stateless resets.

#include <algorithm>
#include <array>

#include "crypto/aead_burst.h"
#include "crypto/connection_keys.h"
#include "crypto/header_protection.h"
#include "quic/conn/packet_unprotect.h"
#include "quic/endpoint/endpoint.h"
#include "quic/endpoint/endpoint_slot.h"
#include "quic/endpoint/stateless_packets.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::endpoint {

using conn::Connection;

template <typename Write>
bool Endpoint::queue_reply(Instant now, bool rate_limited, const conn::PathAddresses& path,
                           Write&& write) {
  if (replies_.full() || (rate_limited && !stateless_limiter_.allow(now))) {
    ++stats_.stateless_replies_dropped;
    return false;
  }
  StatelessReply& reply = replies_.next_slot();
  const size_t length = write(std::span<uint8_t>(reply.bytes));
  if (length == 0) return false;
  reply.path = path;
  reply.length = static_cast<uint16_t>(length);
  replies_.commit();
  return true;
}

bool Endpoint::send_version_negotiation(Instant now, const conn::PathAddresses& path,
                                        const wire::ParsedHeader& header) {
  const bool sent = queue_reply(now, true, path, [&](std::span<uint8_t> out) {
    return write_version_negotiation(header.dcid, header.scid, config_.connection.versions,
                                     random_.next_u64(), out);
  });
  if (sent) ++stats_.version_negotiations_sent;
  return sent;
}

void Endpoint::accept_initial(Instant now, const conn::PathAddresses& path,
                              transmit::EcnCodepoint ecn, std::span<uint8_t> bytes,
                              const wire::ParsedHeader& header) {
  if (wire::check_client_initial_datagram_size(bytes.size()) != wire::WireError::kOk ||
      wire::check_client_initial_dcid(header) != wire::WireError::kOk) {
    ++stats_.datagrams_dropped;
    return;
  }
  if (std::find(config_.connection.versions.begin(), config_.connection.versions.end(),
                header.version) == config_.connection.versions.end()) {
    // A version the parser knows but this server does not offer: Version
    // Negotiation, as for any unknown version (RFC 9000 §6.1).
    if (!send_version_negotiation(now, path, header)) ++stats_.datagrams_dropped;
    return;
  }
  if (!accepting_) {
    ++stats_.connections_refused;
    refuse_initial(path, header, wire::TransportErrorCode::kConnectionRefused);
    return;
  }
  crypto::ValidatedToken token;
  const InitialTokenAction action = check_initial_token(address_tokens_, header.token, path.remote,
                                                        core_.token_time_us(now), token);
  if (action == InitialTokenAction::kCloseInvalidToken) {
    ++stats_.invalid_tokens;
    refuse_initial(path, header, wire::TransportErrorCode::kInvalidToken);
    return;
  }
  const bool validated = action == InitialTokenAction::kValidated;
  if (action == InitialTokenAction::kUnvalidated) ++stats_.invalid_tokens;
  expire_unvalidated(now);
  if (!validated && answer_unvalidated(now, path, header)) return;
  // Nothing is created for a datagram whose Initial does not authenticate
  // (corrupted, forged): no Connection, no CID, no count in the handshake
  // rate that turns Retry on. With the pool full only a client that proved
  // its address gets that far: it takes the slot of the oldest one that
  // has not.
  crypto::InitialKeys* checked_keys = nullptr;
  if (!free_slots_.empty() || validated) {
    if (!initial_packet_opens(header, bytes)) {
      ++stats_.datagrams_dropped;
      return;
    }
    checked_keys = &checked_initial_;
    if (free_slots_.empty()) (void)evict_unvalidated(now);
  }
  open_server_connection(now, path, ecn, bytes, header, validated ? &token : nullptr, checked_keys);
}

bool Endpoint::answer_unvalidated(Instant now, const conn::PathAddresses& path,
                                  const wire::ParsedHeader& header) {
  RetryPressure pressure;
  pressure.half_open = half_open_count_;
  pressure.pool_full = free_slots_.empty();
  pressure.prefix_full = config_.max_half_open_per_prefix != 0 &&
                         unvalidated_.count_for(path.remote) >= config_.max_half_open_per_prefix;
  if (pressure.prefix_full) ++stats_.half_open_prefix_limited;
  if (retry_policy_.should_retry(now, pressure)) {
    send_retry(now, path, header);
    return true;
  }
  if (!pressure.prefix_full) return false;
  ++stats_.connections_refused;
  refuse_initial(path, header, wire::TransportErrorCode::kConnectionRefused);
  return true;
}

void Endpoint::send_retry(Instant now, const conn::PathAddresses& path,
                          const wire::ParsedHeader& header) {
  const bool sent = queue_reply(now, false, path, [&](std::span<uint8_t> out) {
    return write_retry(retry_integrity_, address_tokens_, header.version, path.remote, header.dcid,
                       header.scid, cid_generator_.generate(), core_.token_time_us(now), out);
  });
  if (sent) ++stats_.retries_sent;
}

void Endpoint::open_server_connection(Instant now, const conn::PathAddresses& path,
                                      transmit::EcnCodepoint ecn, std::span<uint8_t> bytes,
                                      const wire::ParsedHeader& header,
                                      const crypto::ValidatedToken* token,
                                      crypto::InitialKeys* initial_keys) {
  const auto handle = take_slot();
  if (!handle) {
    ++stats_.connections_refused;
    refuse_initial(path, header, wire::TransportErrorCode::kConnectionRefused);
    return;
  }
  Slot& slot = *slots_[*handle];
  const wire::ConnectionId client_dcid = header.destination_connection_id();
  if (!cid_table_.insert(client_dcid, *handle)) {
    free_slots_.push_back(*handle);
    ++stats_.connections_refused;
    refuse_initial(path, header, wire::TransportErrorCode::kConnectionRefused);
    return;
  }
  slot.client_dcids[0] = client_dcid;
  slot.client_dcid_count = 1;

  conn::ServerStart start;
  start.version = header.version;
  start.client_dcid = client_dcid;
  start.client_scid = header.source_connection_id();
  start.local_cid = cid_generator_.generate();
  start.address_validated = token != nullptr;
  start.initial_keys = initial_keys;
  if (token != nullptr && token->type == crypto::AddressTokenType::kRetry) {
    start.original_dcid = token->original_dcid;
    start.retry_scid = client_dcid;
  } else {
    start.original_dcid = client_dcid;
  }
  slot.connection =
      std::make_unique<Connection>(core_, config_.connection, wire::Role::kServer, slot);
  attach_tracer(slot);
  ++connection_count_;
  ++half_open_count_;
  if (token == nullptr) unvalidated_.add(*handle, now, path.remote);
  if (slot.connection->start_server(now, path, start)) {
    slot.connection->handle_datagram(now, path, ecn, bytes);
    // No packet of the datagram authenticated (corrupted in transit, or
    // forged): keep no state for it, as if it had been dropped before
    // demultiplexing (RFC 9000 §5.2.2, RFC 9001 §5.3).
    if (slot.connection->stats().packets_received == 0 && !slot.connection->is_finished()) {
      free_slot(*handle);
      ++stats_.datagrams_dropped;
      return;
    }
  }
  ++stats_.connections_accepted;
  retry_policy_.on_connection_accepted(now);
  after_call(*handle);
}

void Endpoint::expire_unvalidated(Instant now) {
  // Without Retry an honest client stays unvalidated until its first
  // Handshake packet arrives, which on a lossy path may take longer.
  if (config_.retry.mode == RetryMode::kNever || !retry_policy_.crowded(half_open_count_)) return;
  while (const auto oldest = unvalidated_.oldest()) {
    if (now < unvalidated_.started(*oldest) + config_.crowded_handshake_timeout) return;
    Slot& slot = *slots_[*oldest];
    unvalidated_.remove(*oldest);
    // Closed silently, as at the handshake timeout: the application hears of
    // it, and the slot is freed, when its events are polled.
    slot.connection->expire_handshake(now);
    ++stats_.half_open_expired;
    after_call(*oldest);
  }
}

bool Endpoint::evict_unvalidated(Instant now) {
  const auto oldest = unvalidated_.oldest();
  if (!oldest || evicted_closes_.size() == evicted_closes_.capacity()) return false;
  Slot& slot = *slots_[*oldest];
  slot.connection->expire_handshake(now);
  EndpointEvent event;
  event.connection = *oldest;
  while (slot.connection->poll_event(event.event)) {
    if (event.event.type == conn::ConnectionEventType::kClosed) evicted_closes_.push_back(event);
  }
  free_slot(*oldest);
  ++stats_.half_open_evicted;
  return true;
}

bool Endpoint::initial_packet_opens(const wire::ParsedHeader& header,
                                    std::span<const uint8_t> bytes) {
  if (header.packet_size > bytes.size() || header.packet_size > initial_scratch_.size()) {
    return false;
  }
  crypto::InitialKeys& keys = checked_initial_;
  if (!keys.derive(mb_, header.version, header.dcid)) return false;
  std::span<uint8_t> packet(initial_scratch_.data(), header.packet_size);
  std::copy_n(bytes.data(), packet.size(), packet.data());
  wire::PacketNumberFields fields;
  if (conn::remove_packet_header_protection(mb_, keys.client.header_protection(), packet, header,
                                            std::nullopt, fields) == wire::WireError::kDrop) {
    return false;
  }
  std::span<const uint8_t> plaintext;
  return conn::open_packet_payload(mb_, keys.client.aead(), packet, fields, plaintext) ==
         crypto::PacketStatus::kOk;
}

void Endpoint::refuse_initial(const conn::PathAddresses& path, const wire::ParsedHeader& header,
                              wire::TransportErrorCode code) {
  // RFC 9000 §5.2.2: a server that cannot take the connection answers with
  // CONNECTION_CLOSE in an Initial packet, keeping no state: the keys come
  // from the client's DCID like any server's Initial keys.
  (void)queue_reply(0, false, path,
                    [&](std::span<uint8_t> out) { return write_refusal(header, code, out); });
}

size_t Endpoint::write_refusal(const wire::ParsedHeader& header, wire::TransportErrorCode code,
                               std::span<uint8_t> out) {
  crypto::ConnectionKeys keys(mb_, wire::Role::kServer, header.version);
  if (!keys.install_initial_keys(header.dcid)) return 0;
  const crypto::PacketKeys* write = keys.write_keys(crypto::EncryptionLevel::kInitial);
  if (write == nullptr) return 0;

  wire::ByteWriter writer(out);
  wire::LongHeaderFields fields;
  fields.version = header.version;
  fields.type = wire::PacketType::kInitial;
  fields.dcid = header.scid;
  fields.scid = header.dcid;
  fields.packet_number = 0;
  fields.packet_number_length = 1;
  wire::EncodedHeader encoded;
  if (!wire::encode_long_header(writer, fields, encoded)) return 0;
  wire::Frame frame;
  frame.type = wire::FrameType::kConnectionCloseTransport;
  frame.connection_close = wire::ConnectionCloseFrame{};  // frame type 0, no reason
  frame.connection_close.error_code = static_cast<uint64_t>(code);
  if (!wire::encode_frame(writer, frame)) return 0;
  // Enough payload for the header protection sample (RFC 9001 §5.4.2).
  const size_t payload = writer.position() - encoded.header_size;
  if (payload < 4 && !wire::encode_padding(writer, 4 - payload)) return 0;
  const size_t payload_size = writer.position() - encoded.header_size;
  const size_t packet_size = writer.position() + crypto::kAeadTagLength;
  if (packet_size > out.size()) return 0;
  std::span<uint8_t> packet(out.data(), packet_size);
  if (!wire::patch_long_header_length(packet, encoded, payload_size + crypto::kAeadTagLength)) {
    return 0;
  }
  crypto::ProtectOp op;
  op.keys = write;
  op.packet_number = 0;
  op.packet = packet;
  op.header_length = encoded.header_size;
  op.payload = packet.subspan(encoded.header_size, payload_size);
  if (crypto::protect(mb_, op) != crypto::PacketStatus::kOk) return 0;
  return packet_size;
}

void Endpoint::reply_stateless_reset(Instant now, const conn::PathAddresses& path,
                                     std::span<const uint8_t> bytes,
                                     std::span<const uint8_t> dcid) {
  if (max_stateless_reset_length(bytes.size()) == 0) {
    ++stats_.datagrams_dropped;
    return;
  }
  const bool sent = queue_reply(now, true, path, [&](std::span<uint8_t> out) {
    std::array<uint8_t, kMaxStatelessResetLength> random;
    const size_t needed = stateless_reset_random_bytes_needed(bytes.size());
    random_.fill({random.data(), needed});
    return write_stateless_reset(bytes.size(), reset_tokens_.token_for(wire::ConnectionId(dcid)),
                                 {random.data(), needed}, out);
  });
  if (sent) ++stats_.stateless_resets_sent;
}

bool Endpoint::detect_stateless_reset(Instant now, const conn::PathAddresses& path,
                                      std::span<const uint8_t> bytes) {
  // RFC 9000 §10.3.1: a datagram no connection owns may be a reset from the
  // peer of the connection on that remote address: compare its last 16 bytes
  // with that connection's peer tokens.
  if (bytes.size() < kMinStatelessResetLength) return false;
  std::array<uint8_t, conn::SocketAddress::kEncodedMax> encoded;
  const size_t length = path.remote.encode(encoded);
  const auto owner = address_table_.find(std::span<const uint8_t>(encoded.data(), length));
  if (!owner) return false;
  Connection* c = slots_[*owner]->connection.get();
  if (c == nullptr || !c->check_stateless_reset(now, bytes)) return false;
  after_call(*owner);
  return true;
}

}  // namespace dpquic::endpoint
