// The receive path: splitting coalesced packets, removing packet protection,
// and dispatching frames (RFC 9000 §12, §19; RFC 9001 §5).

#include <algorithm>
#include <cstring>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/conn/packet_unprotect.h"
#include "quic/hot_path.h"
#include "quic/wire/coalesced.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frame_validity.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::FrameType;
using wire::PacketNumberSpace;
using wire::PacketType;
using wire::TransportErrorCode;

namespace {

EncryptionLevel level_of_packet(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return EncryptionLevel::kInitial;
    case PacketType::kZeroRtt: return EncryptionLevel::kEarlyData;
    case PacketType::kHandshake: return EncryptionLevel::kHandshake;
    default: return EncryptionLevel::kApplication;
  }
}

TransportError from_wire(wire::WireError error, const char* reason, uint64_t frame_type = 0) {
  const auto code = wire::transport_error_code(error);
  return transport_error(code ? *code : TransportErrorCode::kProtocolViolation, reason, frame_type);
}

}  // namespace

DPQUIC_INLINE_STEP uint32_t Connection::count_received_on_path(Instant now,
                                                               const PathAddresses& path,
                                                               size_t size) {
  const auto known = paths_.find(path);
  if (!known) return kUnknownPath;
  PathState& state = paths_.path(*known);
  state.bytes_received += size;  // every byte counts (RFC 9000 §8.1)
  if (!state.validated && *known == active_path_) loss_.set_amplification_blocked(now, false);
  return *known;
}

DPQUIC_HOT void Connection::handle_datagram(Instant now, const PathAddresses& path,
                                            transmit::EcnCodepoint ecn,
                                            std::span<uint8_t> datagram) {
  now_ = now;
  if (state_ == ConnectionState::kClosed || state_ == ConnectionState::kDraining) return;
  stats_.bytes_received += datagram.size();

  const uint32_t path_id = count_received_on_path(now, path, datagram.size());

  if (state_ == ConnectionState::kClosing) {
    // RFC 9000 §10.2.1: answer with CONNECTION_CLOSE, less and less often.
    ++closing_packets_received_;
    if ((closing_packets_received_ & (closing_packets_received_ - 1)) == 0) {
      queue_close_frames();
    }
    return;
  }

  wire::DatagramSplitter splitter(datagram, local_cids_.any_active().size());
  wire::CoalescedPacket packet;
  while (state_ != ConnectionState::kClosed && state_ != ConnectionState::kDraining &&
         splitter.next_any(packet)) {
    const wire::ParsedHeader& header = packet.header;
    if (!header.has_packet_number()) {
      drop_unparsed(now, datagram.size() - packet.offset);
      return;
    }
    // RFC 9000 §12.2: coalesced packets with another DCID are dropped.
    if (!packet.same_dcid) {
      ++stats_.packets_dropped;
      if (tracer_) {
        tracer_->on_packet_dropped(now, true, header.type, header.packet_size,
                                   PacketDropReason::kUnknownConnectionId);
      }
      continue;
    }
    // A client offering another version follows a server that chose it
    // (RFC 9368 §4); if the packet does not open under its keys, the switch
    // is undone (it was forged or corrupted).
    const bool followed =
        header.long_header && header.version != version_ && follow_server_version(header);
    const uint64_t received_before = stats_.packets_received;
    Arrival arrival{.now = now,
                    .addresses = path,
                    .datagram_size = datagram.size(),
                    .ecn = ecn,
                    .path_id = path_id,
                    .dcid = header.dcid};
    process_packet(arrival, datagram.subspan(packet.offset, header.packet_size), header, datagram);
    if (followed && stats_.packets_received == received_before &&
        state_ != ConnectionState::kClosed) {
      version_ = original_version_;
      if (handshake_ && !keys_.switch_initial_version(version_, handshake_->initial_dcid.span())) {
        finish(CloseReason::kTransportError);
        return;
      }
      keys_.discard_original_initial_read();
    }
  }
  if (splitter.error() != wire::WireError::kOk) drop_unparsed(now, splitter.dropped_bytes());
}

void Connection::drop_unparsed(Instant now, size_t bytes) {
  ++stats_.packets_dropped;
  if (tracer_) {
    tracer_->on_packet_dropped(now, false, PacketType::kInitial, bytes,
                               PacketDropReason::kHeaderParseError);
  }
}

DPQUIC_HOT void Connection::process_packet(Arrival& arrival, std::span<uint8_t> packet,
                                           const wire::ParsedHeader& header,
                                           std::span<uint8_t> datagram) {
  const Instant now = arrival.now;
  uint32_t& path_id = arrival.path_id;
  // A server that switched versions (RFC 9368 §4) still reads the client's
  // Initials in the version it started with, until the client follows.
  const bool original_version = header.long_header && header.version != version_;
  if (const auto reason = precheck_packet(path_id, header, original_version)) {
    return drop_packet(now, header, packet.size(), *reason);
  }
  OpenedPacket opened;
  if (!open_packet(now, packet, header, original_version, datagram, opened)) return;
  const uint64_t number = opened.fields.packet_number;
  Space& sp = space(wire::packet_number_space(header.type));
  if (sp.acks.is_duplicate(number)) {
    return drop_packet(now, header, packet.size(), PacketDropReason::kDuplicate);
  }
  if (tracer_) tracer_->on_packet_received(now, header.type, number, packet.size(), opened.payload);
  learn_from_packet(now, path_id, header, original_version);
  if (path_id == active_path_ && header.type == PacketType::kOneRtt) {
    active_path_received_dcid_ = wire::ConnectionId(header.dcid);
  }
  if (opened.payload.empty()) {
    enter_closing(now,
                  transport_error(TransportErrorCode::kProtocolViolation, "packet without frames"),
                  false, 0);
    return;
  }
  // A new peer address gets its path before the frames are processed, so a
  // PATH_CHALLENGE on it is answered on it (RFC 9000 §8.2.2).
  const bool new_path = path_id == kUnknownPath;
  if (new_path) path_id = add_peer_path(arrival);
  bool ack_eliciting = false;
  bool probing_only = true;
  if (TransportError error =
          process_frames(arrival, header.type, opened.payload, ack_eliciting, probing_only)) {
    enter_closing(now, error, false, 0);
    return;
  }
  if (state_ == ConnectionState::kClosed || state_ == ConnectionState::kDraining) return;
  (void)sp.acks.on_packet_received(now, number, ack_eliciting, static_cast<uint8_t>(arrival.ecn));
  ++stats_.packets_received;
  last_received_ = now;
  reset_idle_timer(now);
  ack_eliciting_since_receive_ = false;
  if (header.type == PacketType::kOneRtt) {
    follow_peer_path(now, path_id, new_path, probing_only, number);
  }
}

void Connection::drop_packet(Instant now, const wire::ParsedHeader& header, size_t size,
                             PacketDropReason reason) {
  ++stats_.packets_dropped;
  if (tracer_) tracer_->on_packet_dropped(now, true, header.type, size, reason);
}

DPQUIC_INLINE_STEP std::optional<PacketDropReason> Connection::precheck_packet(
    uint32_t path_id, const wire::ParsedHeader& header, bool original_version) const {
  if (original_version &&
      (role_ != wire::Role::kServer || header.version != original_version_ ||
       header.type != PacketType::kInitial || keys_.original_initial_read_keys() == nullptr)) {
    return PacketDropReason::kUnexpectedVersion;
  }
  if (role_ == wire::Role::kClient) {
    if (header.type == PacketType::kZeroRtt) return PacketDropReason::kUnexpectedPacket;
    if (wire::check_server_initial_token(header) != wire::WireError::kOk) {
      return PacketDropReason::kUnexpectedPacket;
    }
    // RFC 9000 §7.2: once a server Initial was processed, long-header packets
    // with another Source Connection ID are not from that server.
    if (header.long_header && handshake_ && !handshake_->peer_initial_scid.empty() &&
        header.source_connection_id() != handshake_->peer_initial_scid) {
      return PacketDropReason::kUnexpectedSourceCid;
    }
  }
  if (space(wire::packet_number_space(header.type)).discarded) {
    return PacketDropReason::kKeyUnavailable;
  }
  // Packets from an unknown address: only 1-RTT after confirmation may
  // migrate the connection (RFC 9000 §9); everything else is dropped, and a
  // client discards every packet from an unknown server address.
  if (path_id == kUnknownPath && (role_ == wire::Role::kClient ||
                                  header.type != PacketType::kOneRtt || !handshake_confirmed_)) {
    return PacketDropReason::kUnknownPath;
  }
  return std::nullopt;
}

DPQUIC_INLINE_STEP bool Connection::open_packet(Instant now, std::span<uint8_t> packet,
                                                const wire::ParsedHeader& header,
                                                bool original_version, std::span<uint8_t> datagram,
                                                OpenedPacket& opened) {
  const EncryptionLevel level = level_of_packet(header.type);
  const Space& sp = space(wire::packet_number_space(header.type));
  auto drop = [&](PacketDropReason reason) {
    drop_packet(now, header, packet.size(), reason);
    return false;
  };
  const crypto::HeaderProtectionKey* hp =
      original_version ? &keys_.original_initial_read_keys()->header_protection()
                       : keys_.read_header_protection(level);
  if (hp == nullptr) return drop(PacketDropReason::kKeyUnavailable);
  const std::optional<uint64_t> largest =
      sp.acks.has_received() ? std::optional<uint64_t>(sp.acks.largest_received()) : std::nullopt;
  const wire::WireError pn_error =
      remove_packet_header_protection(*core_.mb, *hp, packet, header, largest, opened.fields);
  if (pn_error == wire::WireError::kDrop) return drop(PacketDropReason::kHeaderParseError);
  const crypto::ReadKeySelection selection =
      original_version
          ? crypto::ReadKeySelection{&keys_.original_initial_read_keys()->aead(),
                                     crypto::KeyGeneration::kCurrent}
          : keys_.select_read_key(level, opened.fields.key_phase, opened.fields.packet_number, now);
  if (selection.key == nullptr) return drop(PacketDropReason::kKeyUnavailable);
  if (opened.fields.payload_size < crypto::kAeadTagLength) {
    return drop(PacketDropReason::kHeaderParseError);
  }
  if (open_packet_payload(*core_.mb, *selection.key, packet, opened.fields, opened.payload) !=
      crypto::PacketStatus::kOk) {
    on_open_failure(now, header, packet.size(), datagram);
    return false;
  }
  if (!after_packet_opened(now, level, selection.generation, opened.fields.packet_number)) {
    return false;
  }
  if (pn_error == wire::WireError::kProtocolViolation) {
    enter_closing(now, transport_error(TransportErrorCode::kProtocolViolation, "reserved bits set"),
                  false, 0);
    return false;
  }
  return true;
}

void Connection::on_open_failure(Instant now, const wire::ParsedHeader& header, size_t size,
                                 std::span<uint8_t> datagram) {
  if (!header.long_header && detect_stateless_reset(datagram)) {
    enter_draining(now, CloseReason::kStatelessReset, 0, false);
    return;
  }
  drop_packet(now, header, size, PacketDropReason::kDecryptionFailure);
  if (!keys_.on_authentication_failure(
          tls_ && tls_->cipher_suite() ? *tls_->cipher_suite() : crypto::CipherSuite::kAes128Gcm)) {
    enter_closing(now,
                  transport_error(TransportErrorCode::kAeadLimitReached,
                                  "too many packets failed authentication"),
                  false, 0);
  }
}

DPQUIC_INLINE_STEP bool Connection::after_packet_opened(Instant now, EncryptionLevel level,
                                                        crypto::KeyGeneration generation,
                                                        uint64_t packet_number) {
  const uint64_t write_generation = keys_.key_phase().write_generation();
  if (level == EncryptionLevel::kApplication &&
      !keys_.on_packet_opened(level, generation, packet_number, now,
                              loss_.pto_duration(PacketNumberSpace::kApplication))) {
    enter_closing(
        now,
        keys_.key_update_error()
            ? transport_error(TransportErrorCode::kKeyUpdateError, "key update error")
            : transport_error(TransportErrorCode::kInternalError, "key derivation failed"),
        false, 0);
    return false;
  }
  if (keys_.key_phase().write_generation() != write_generation) {
    // We answered the peer's key update: our own next update waits for an
    // acknowledgment of a packet sent under these keys (RFC 9001 §6.1).
    packets_under_key_ = 0;
    first_packet_in_phase_.reset();
    current_phase_acked_ = false;
    ++stats_.key_updates;
    if (tracer_) tracer_->on_key_updated(now, keys_.key_phase().write_generation(), false);
  }
  return true;
}

DPQUIC_INLINE_STEP void Connection::learn_from_packet(Instant now, uint32_t path_id,
                                                      const wire::ParsedHeader& header,
                                                      bool original_version) {
  // The client sent a packet in the negotiated version: it has switched.
  if (role_ == wire::Role::kServer && header.long_header && !original_version &&
      version_ != original_version_) {
    keys_.discard_original_initial_read();
  }
  // First packet of the peer: a client learns the server's CID (§7.2).
  if (role_ == wire::Role::kClient && header.type == PacketType::kInitial && handshake_ &&
      handshake_->peer_initial_scid.empty()) {
    handshake_->peer_initial_scid = header.source_connection_id();
    peer_cids_.set_initial(handshake_->peer_initial_scid);
  }
  if (role_ == wire::Role::kServer && header.type == PacketType::kHandshake) {
    // RFC 9000 §8.1: a Handshake packet validates the client's address;
    // RFC 9001 §4.9.1: the server drops Initial keys on the first one.
    peer_address_validated_ = true;
    if (path_id != kUnknownPath) paths_.path(path_id).validated = true;
    discard_space(now, PacketNumberSpace::kInitial);
  }
}

DPQUIC_INLINE_STEP void Connection::follow_peer_path(Instant now, uint32_t path_id, bool new_path,
                                                     bool probing_only, uint64_t packet_number) {
  const bool largest_so_far = packet_number >= largest_non_probing_pn_;
  if (new_path) {
    on_new_path(now, path_id, !probing_only && largest_so_far, packet_number);
  } else if (path_id != active_path_ && !probing_only && largest_so_far &&
             role_ == wire::Role::kServer && paths_.exists(path_id) &&
             paths_.path(path_id).has_peer_cid) {
    // The peer moved back to (or on to) a known path; one not validated
    // is validated again before it carries more than 3x (§9.3).
    set_active_path(path_id);
    PathState& moved_to = paths_.path(path_id);
    if (!moved_to.validated) {
      paths_.start_validation(path_id, now, loss_.pto_duration(PacketNumberSpace::kApplication));
    } else {
      loss_.set_amplification_blocked(now, false);
    }
  }
  if (!probing_only && largest_so_far) largest_non_probing_pn_ = packet_number;
}

uint32_t Connection::add_peer_path(const Arrival& arrival) {
  // Server side (clients drop packets from unknown addresses): the client
  // probes, migrates or its NAT rebound (RFC 9000 §9.3). The path is
  // validated before it carries more than 3x what it received. Also when we
  // sent disable_active_migration: §9 lets us validate and allow the
  // migration rather than drop, and a NAT rebinding then survives.
  const uint32_t id = add_path(arrival.now, arrival.addresses);
  paths_.path(id).bytes_received += arrival.datagram_size;
  // A peer CID of its own (§9.5). With none unused, the active path's CID
  // only if the peer kept its DCID and we answer from the same local
  // address (§9.5 MAY; see connection_paths.cc); otherwise this path
  // cannot be sent on until the peer gives us another CID.
  if (!claim_path_cid(id)) {
    const PathState& active = paths_.path(active_path_);
    const bool same_dcid = wire::ConnectionId(arrival.dcid) == active_path_received_dcid_;
    if (active.has_peer_cid && (peer_cids_.active().empty() || same_dcid) &&
        arrival.addresses.local == active.addresses.local) {
      paths_.path(id).has_peer_cid = true;
      paths_.path(id).peer_cid_sequence = active.peer_cid_sequence;
    } else {
      free_peer_cid_for(id);
    }
  }
  return id;
}

void Connection::on_new_path(Instant now, uint32_t id, bool non_probing, uint64_t) {
  // Congestion state starts afresh on a path the peer moved to (§9.4).
  const PathAddresses& addresses = paths_.path(id).addresses;
  // Without a CID for the new path we cannot answer there (§9.5): stay.
  if (non_probing && paths_.path(id).has_peer_cid) {
    // RFC 9000 §9.3.3: an apparent migration may be an attacker forwarding
    // copies; validating the previous path makes the genuine peer send on it
    // again, which moves the connection back.
    const uint32_t previous = active_path_;
    set_active_path(id);
    paths_.start_validation(previous, now, loss_.pto_duration(PacketNumberSpace::kApplication));
    cc_->reset_for_new_path(now);
    // §9.4: a port-only change (NAT rebinding) may keep the RTT estimate.
    if (!paths_.path(previous).addresses.remote.same_ip(addresses.remote)) loss_.reset_rtt();
    ecn_.reset_for_new_path();
  }
}

bool Connection::check_stateless_reset(Instant now, std::span<const uint8_t> datagram) {
  if (state_ == ConnectionState::kClosed || state_ == ConnectionState::kDraining ||
      !detect_stateless_reset(datagram)) {
    return false;
  }
  enter_draining(now, CloseReason::kStatelessReset, 0, false);
  return true;
}

bool Connection::detect_stateless_reset(std::span<const uint8_t> datagram) {
  // RFC 9000 §10.3.1: the last 16 bytes of a datagram that fails to decrypt.
  if (datagram.size() < 21) return false;
  return peer_cids_.is_stateless_reset(datagram.last(16));
}

DPQUIC_HOT TransportError Connection::process_frames(const Arrival& arrival, PacketType type,
                                                     std::span<const uint8_t> payload,
                                                     bool& ack_eliciting, bool& probing_only) {
  wire::FrameDecoder decoder(payload);
  wire::Frame frame;
  bool acked = false;
  while (!decoder.done()) {
    const wire::WireError error = decoder.next(frame);
    if (error != wire::WireError::kOk) return from_wire(error, "malformed frame");
    if (wire::check_frame_allowed(frame.type, type, role_) != wire::WireError::kOk) {
      return transport_error(TransportErrorCode::kProtocolViolation,
                             "frame not allowed in this packet type",
                             static_cast<uint64_t>(frame.type));
    }
    if (frame.type == FrameType::kAck || frame.type == FrameType::kAckEcn) {
      // One ACK frame per packet is processed: each one composes the part
      // of the in-flight window it reaches, so a packet full of ACK frames
      // spanning the window would cost that many times the work. A peer
      // sends one; ignoring acknowledgments only delays them.
      if (acked) {
        ++stats_.ack_frames_ignored;
        continue;
      }
      acked = true;
    }
    if (wire::is_ack_eliciting(frame.type)) ack_eliciting = true;
    if (!wire::is_probing(frame.type)) probing_only = false;
    if (TransportError failure = on_frame(arrival, type, frame)) return failure;
    if (state_ == ConnectionState::kDraining || state_ == ConnectionState::kClosed ||
        state_ == ConnectionState::kClosing) {
      break;
    }
  }
  return {};
}

DPQUIC_HOT TransportError Connection::on_frame(const Arrival& arrival, PacketType type,
                                               const wire::Frame& frame) {
  const Instant now = arrival.now;
  const uint64_t frame_type = static_cast<uint64_t>(frame.type);
  switch (frame.type) {
    case FrameType::kPadding:
    case FrameType::kPing:
    case FrameType::kDataBlocked:
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni: return {};
    case FrameType::kAck:
    case FrameType::kAckEcn: return on_ack_frame(now, wire::packet_number_space(type), frame);
    case FrameType::kCrypto: {
      const EncryptionLevel level = type == PacketType::kInitial ? EncryptionLevel::kInitial
                                    : type == PacketType::kHandshake
                                        ? EncryptionLevel::kHandshake
                                        : EncryptionLevel::kApplication;
      return on_crypto_frame(now, level, frame.crypto);
    }
    case FrameType::kStream:
      if (type == PacketType::kZeroRtt) {
        zero_rtt_stream_limit_ = std::max(zero_rtt_stream_limit_, frame.stream.stream_id + 1);
      }
      return on_stream_frame(now, frame.stream);
    case FrameType::kResetStream: return on_reset_stream(frame.reset_stream);
    case FrameType::kStopSending: return on_stop_sending(frame.stop_sending);
    case FrameType::kMaxStreamData: return on_max_stream_data(frame.max_stream_data);
    case FrameType::kStreamDataBlocked: {
      Stream* stream = nullptr;
      return stream_for_frame(frame.stream_data_blocked.stream_id, false, true, stream);
    }
    case FrameType::kMaxData: on_max_data(frame.max_data.maximum_data); return {};
    case FrameType::kMaxStreamsBidi:
      return stream_limits_.on_max_streams(StreamDirection::kBidirectional,
                                           frame.max_streams.maximum_streams);
    case FrameType::kMaxStreamsUni:
      return stream_limits_.on_max_streams(StreamDirection::kUnidirectional,
                                           frame.max_streams.maximum_streams);
    case FrameType::kNewConnectionId: return on_new_connection_id(frame.new_connection_id);
    case FrameType::kRetireConnectionId:
      return local_cids_.on_retire(frame.retire_connection_id.sequence_number, arrival.dcid);
    case FrameType::kPathChallenge:
      paths_.on_path_challenge(arrival.path_id, frame.path_challenge.data);
      return {};
    case FrameType::kPathResponse: on_path_response(now, frame.path_response.data); return {};
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication:
      enter_draining(now, CloseReason::kPeerClose, frame.connection_close.error_code,
                     frame.type == FrameType::kConnectionCloseApplication);
      return {};
    case FrameType::kHandshakeDone: on_handshake_confirmed(now); return {};
    case FrameType::kNewToken: return on_new_token(frame.new_token);
    case FrameType::kDatagram: return on_datagram_frame(frame.datagram);
    case FrameType::kAckFrequency:
    case FrameType::kImmediateAck:
      // We never advertise min_ack_delay, so the peer must not send these.
      return transport_error(TransportErrorCode::kProtocolViolation,
                             "ack frequency was not negotiated", frame_type);
  }
  return transport_error(TransportErrorCode::kFrameEncodingError, "unknown frame", frame_type);
}

void Connection::on_max_data(uint64_t maximum_data) {
  const uint64_t before = send_credit_.available();
  send_credit_.on_max_data(maximum_data);
  if (before != 0 || send_credit_.available() == 0) return;
  for (auto& slot : stream_slots_) {
    if (slot && slot->send && slot->send->wants_to_send(send_credit_.available())) {
      schedule_stream(*slot);
    }
  }
}

TransportError Connection::on_new_connection_id(const wire::NewConnectionIdFrame& frame) {
  if (peer_cids_.active().empty()) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "NEW_CONNECTION_ID to a zero-length CID user",
                           static_cast<uint64_t>(FrameType::kNewConnectionId));
  }
  if (TransportError error = peer_cids_.on_new_connection_id(frame)) return error;
  reassign_path_cids();
  return {};
}

void Connection::on_path_response(Instant now, const std::array<uint8_t, 8>& data) {
  const auto validated = paths_.on_path_response(data);
  if (!validated) return;
  if (role_ == wire::Role::kServer && *validated == active_path_) {
    peer_address_validated_ = true;
    loss_.set_amplification_blocked(now, false);
  }
  // A client whose move (migration, preferred address) is validated does
  // not need the paths it left: their CIDs are retired (§9.5).
  if (role_ == wire::Role::kClient && *validated == active_path_) {
    for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) abandon_path(id);
  }
  // RFC 9000 §8.2.1: a validation whose challenge the amplification limit
  // kept below 1200 bytes is followed by one with a padded challenge, now
  // that the path is not limited, to check its MTU.
  if (!paths_.path(*validated).challenge_padded) {
    paths_.start_validation(*validated, now, loss_.pto_duration(PacketNumberSpace::kApplication));
  }
}

TransportError Connection::on_new_token(const wire::NewTokenFrame& frame) {
  if (frame.token.empty()) {
    return transport_error(TransportErrorCode::kFrameEncodingError, "empty NEW_TOKEN",
                           static_cast<uint64_t>(FrameType::kNewToken));
  }
  if (core_.client_tokens != nullptr) core_.client_tokens->store(server_name_, frame.token);
  received_new_token_ = true;
  return {};
}

TransportError Connection::on_datagram_frame(const wire::DatagramFrame& frame) {
  // RFC 9221 §3: the limit covers the whole frame, type and length too.
  const uint64_t limit = config_.transport.max_datagram_frame_size;
  const uint64_t length = frame.data.size();
  const uint64_t frame_size = 1 + length + (frame.has_length ? wire::varint_length(length) : 0);
  if (limit == 0 || frame_size > limit) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "DATAGRAM not negotiated or too large",
                           static_cast<uint64_t>(FrameType::kDatagram));
  }
  if (datagrams_in_.full() || length > sizeof(QueuedDatagram::bytes)) {
    ++stats_.datagrams_dropped;  // unreliable by definition (RFC 9221 §5)
    return {};
  }
  QueuedDatagram& slot = datagrams_in_.next_slot();
  std::memcpy(slot.bytes.data(), frame.data.data(), length);
  slot.length = static_cast<uint16_t>(length);
  datagrams_in_.commit();
  ConnectionEvent event;
  event.type = ConnectionEventType::kDatagram;
  push_event(event);
  return {};
}

TransportError Connection::on_ack_frame(Instant now, PacketNumberSpace space_id,
                                        const wire::Frame& frame) {
  acked_in_frame_ = 0;
  ecn_marked_in_frame_ = 0;
  const bool has_ecn = frame.type == FrameType::kAckEcn;
  const std::optional<uint64_t> largest_before = loss_.largest_acked(space_id);
  const wire::WireError error = loss_.on_ack_received(now, space_id, frame.ack, has_ecn, *this);
  if (error != wire::WireError::kOk) {
    return from_wire(error, "ACK of a packet never sent", static_cast<uint64_t>(frame.type));
  }
  if (acked_in_frame_ != 0) {
    // RFC 9000 §13.4.2.1: only an ACK that raises the largest acknowledged
    // may fail validation. CE marks are a congestion signal loss detection
    // already acted on (RFC 9002 §B.7).
    const std::optional<uint64_t> largest_after = loss_.largest_acked(space_id);
    const bool increased = largest_after && (!largest_before || *largest_after > *largest_before);
    (void)ecn_.on_ack(space_id, ecn_marked_in_frame_, has_ecn ? &frame.ack.ecn : nullptr,
                      increased);
  }
  ecn_marked_in_frame_ = 0;
  if (tracer_) trace_metrics(now);
  return {};
}

TransportError Connection::on_crypto_frame(Instant now, EncryptionLevel level,
                                           const wire::CryptoFrame& frame) {
  Space& sp = space(space_of_level(level));
  if (sp.discarded || tls_ == nullptr) return {};
  const uint64_t limit = sp.crypto_receive->read_offset() + config_.max_crypto_buffer;
  switch (sp.crypto_receive->insert(frame.offset, frame.data, limit)) {
    case ReceiveResult::kOk: break;
    case ReceiveResult::kExceedsLimit:
    case ReceiveResult::kTooFragmented:
      // quiche CVE-2024-1765: CRYPTO data far ahead is refused, not stored.
      return transport_error(TransportErrorCode::kCryptoBufferExceeded,
                             "CRYPTO data beyond the buffer", 0x06);
    case ReceiveResult::kOutOfMemory:
      return transport_error(TransportErrorCode::kInternalError, "receive buffers exhausted", 0x06);
  }
  bool provided = false;
  for (std::span<const uint8_t> piece = sp.crypto_receive->readable(); !piece.empty();
       piece = sp.crypto_receive->readable()) {
    if (!tls_->provide_handshake_data(level, piece)) {
      return transport_error(static_cast<TransportErrorCode>(tls_->error_code()),
                             "TLS refused handshake data", 0x06);
    }
    sp.crypto_receive->consume(piece.size());
    provided = true;
  }
  if (provided) advance_tls(now);
  return {};
}

TransportError Connection::stream_for_frame(uint64_t id, bool needs_send, bool needs_receive,
                                            Stream*& stream) {
  stream = nullptr;
  if ((needs_send && !local_can_send(id, role_)) ||
      (needs_receive && !local_can_receive(id, role_))) {
    return transport_error(TransportErrorCode::kStreamStateError,
                           "frame for the wrong direction of a stream");
  }
  stream = find_stream(id);
  if (stream != nullptr) return {};
  if (is_local(id, role_)) {
    if (!stream_limits_.local_stream_opened(id)) {
      return transport_error(TransportErrorCode::kStreamStateError,
                             "frame for a stream we never opened");
    }
    return {};  // finished and freed: late frames are ignored
  }
  std::optional<uint64_t> first_new;
  if (TransportError error = stream_limits_.on_peer_stream(id, first_new)) return error;
  if (!first_new) return {};  // opened earlier and already freed
  for (uint64_t opened = *first_new; opened <= id; opened += 4) {
    Stream& created = create_stream(opened);
    push_stream_event(created, ConnectionEventType::kStreamOpened);
  }
  stream = find_stream(id);
  return {};
}

DPQUIC_HOT TransportError Connection::on_stream_frame(Instant, const wire::StreamFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, false, true, stream)) {
    error.frame_type = 0x08;
    return error;
  }
  if (stream == nullptr) return {};
  uint64_t newly = 0;
  if (TransportError error =
          stream->receive->on_stream_frame(frame.offset, frame.data, frame.fin, newly)) {
    return error;
  }
  if (newly != 0) {
    received_total_ += newly;
    stats_.stream_bytes_received += newly;
    if (!receive_window_.on_received(received_total_)) {
      return transport_error(TransportErrorCode::kFlowControlError,
                             "connection flow control limit exceeded", 0x08);
    }
  }
  account_consumed(*stream);  // data discarded after STOP_SENDING
  if (stream->receive->readable()) push_stream_event(*stream, ConnectionEventType::kStreamReadable);
  // A stopped stream is never read: it ends here once the peer sent all.
  if (stream->receive->finished()) free_stream_if_done(*stream);
  return {};
}

TransportError Connection::on_reset_stream(const wire::ResetStreamFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, false, true, stream)) return error;
  if (stream == nullptr) return {};
  uint64_t newly = 0;
  if (TransportError error =
          stream->receive->on_reset_stream(frame.application_error_code, frame.final_size, newly)) {
    return error;
  }
  if (newly != 0) {
    received_total_ += newly;
    if (!receive_window_.on_received(received_total_)) {
      return transport_error(TransportErrorCode::kFlowControlError,
                             "connection flow control limit exceeded", 0x04);
    }
  }
  account_consumed(*stream);
  if (stream->receive->reset_received() && !stream->reset_reported) {
    stream->reset_reported = true;
    ConnectionEvent event;
    event.type = ConnectionEventType::kStreamReset;
    event.stream_id = stream->id;
    event.error_code = frame.application_error_code;
    push_event(event);
  }
  push_stream_event(*stream, ConnectionEventType::kStreamReadable);
  // A stopped stream is never read: the reset ends it here.
  if (stream->receive->finished()) free_stream_if_done(*stream);
  return {};
}

TransportError Connection::on_stop_sending(const wire::StopSendingFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, true, false, stream)) return error;
  if (stream == nullptr) return {};
  if (!stream->send->stop_sending_received()) {
    stream->send->on_stop_sending(frame.application_error_code);
    schedule_stream(*stream);
    ConnectionEvent event;
    event.type = ConnectionEventType::kStreamStopped;
    event.stream_id = stream->id;
    event.error_code = frame.application_error_code;
    push_event(event);
  }
  return {};
}

TransportError Connection::on_max_stream_data(const wire::StreamDataLimitFrame& frame) {
  Stream* stream = nullptr;
  if (TransportError error = stream_for_frame(frame.stream_id, true, false, stream)) return error;
  if (stream == nullptr) return {};
  stream->send->on_max_stream_data(frame.maximum_stream_data);
  if (stream->send->wants_to_send(send_credit_.available())) schedule_stream(*stream);
  if (stream->write_blocked && stream->send->writable_bytes() != 0) {
    stream->write_blocked = false;
    push_stream_event(*stream, ConnectionEventType::kStreamWritable);
  }
  return {};
}

}  // namespace dpquic::conn
