// The receive path up to the frames: splitting coalesced packets, removing
// packet protection (RFC 9000 §12; RFC 9001 §5), paths and key phases; and
// runs of 1-RTT packets opened in one AEAD burst (receive_burst.h).
// Frames are dispatched in connection_frames.cc.

#include <algorithm>
#include <cstring>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/conn/connection.h"
#include "quic/conn/packet_unprotect.h"
#include "quic/hot_path.h"
#include "quic/wire/coalesced.h"
#include "quic/wire/header.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::PacketNumberSpace;
using wire::PacketType;
using wire::TransportErrorCode;
using Verdict = ReceiveBurst::Verdict;

namespace {

EncryptionLevel level_of_packet(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return EncryptionLevel::kInitial;
    case PacketType::kZeroRtt: return EncryptionLevel::kEarlyData;
    case PacketType::kHandshake: return EncryptionLevel::kHandshake;
    default: return EncryptionLevel::kApplication;
  }
}

}  // namespace

DPQUIC_INLINE_STEP uint32_t Connection::count_received_on_path(Instant now,
                                                               const PathAddresses& path,
                                                               size_t size, uint32_t hint) {
  const auto known = paths_.exists(hint) && paths_.path(hint).addresses == path
                         ? std::optional<uint32_t>(hint)
                         : paths_.find(path);
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

  if (state_ == ConnectionState::kClosing) return on_datagram_while_closing();

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

void Connection::on_datagram_while_closing() {
  // RFC 9000 §10.2.1: answer with CONNECTION_CLOSE, less and less often.
  ++closing_packets_received_;
  if ((closing_packets_received_ & (closing_packets_received_ - 1)) == 0) queue_close_frames();
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
  process_opened(arrival, packet, header, original_version, opened);
}

DPQUIC_INLINE_STEP void Connection::process_opened(Arrival& arrival, std::span<uint8_t> packet,
                                                   const wire::ParsedHeader& header,
                                                   bool original_version,
                                                   const OpenedPacket& opened) {
  const Instant now = arrival.now;
  uint32_t& path_id = arrival.path_id;
  const uint64_t number = opened.fields.packet_number;
  Space& sp = space(wire::packet_number_space(header.type));
  if (sp.acks.is_duplicate(number)) {
    return drop_packet(now, header, packet.size(), PacketDropReason::kDuplicate);
  }
  if (tracer_) tracer_->on_packet_received(now, header.type, number, packet.size(), opened.payload);
  learn_from_packet(now, path_id, header, original_version);
  // Compared before it is rebuilt: in steady state it does not change, and
  // a ConnectionId built and copied in per packet stalled on store
  // forwarding (its copy reads back bytes just stored in pieces).
  if (path_id == active_path_ && header.type == PacketType::kOneRtt &&
      !active_path_received_dcid_.matches(header.dcid)) {
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
  wire::WireError pn_error = wire::WireError::kOk;
  if (const auto reason =
          unmask_packet(packet, header, original_version, opened.fields, pn_error)) {
    drop_packet(now, header, packet.size(), *reason);
    return false;
  }
  return open_unmasked(now, packet, header, original_version, datagram, pn_error, opened);
}

DPQUIC_INLINE_STEP std::optional<PacketDropReason> Connection::unmask_packet(
    std::span<uint8_t> packet, const wire::ParsedHeader& header, bool original_version,
    wire::PacketNumberFields& fields, wire::WireError& pn_error) const {
  const Space& sp = space(wire::packet_number_space(header.type));
  const crypto::HeaderProtectionKey* hp =
      original_version ? &keys_.original_initial_read_keys()->header_protection()
                       : keys_.read_header_protection(level_of_packet(header.type));
  if (hp == nullptr) return PacketDropReason::kKeyUnavailable;
  const std::optional<uint64_t> largest =
      sp.acks.has_received() ? std::optional<uint64_t>(sp.acks.largest_received()) : std::nullopt;
  pn_error = remove_packet_header_protection(*core_.mb, *hp, packet, header, largest, fields);
  if (pn_error == wire::WireError::kDrop) return PacketDropReason::kHeaderParseError;
  return std::nullopt;
}

DPQUIC_INLINE_STEP bool Connection::open_unmasked(Instant now, std::span<uint8_t> packet,
                                                  const wire::ParsedHeader& header,
                                                  bool original_version,
                                                  std::span<uint8_t> datagram,
                                                  wire::WireError pn_error, OpenedPacket& opened) {
  const EncryptionLevel level = level_of_packet(header.type);
  auto drop = [&](PacketDropReason reason) {
    drop_packet(now, header, packet.size(), reason);
    return false;
  };
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
  return accept_opened(now, level, selection.generation, opened.fields.packet_number, pn_error);
}

DPQUIC_INLINE_STEP bool Connection::accept_opened(Instant now, EncryptionLevel level,
                                                  crypto::KeyGeneration generation,
                                                  uint64_t packet_number,
                                                  wire::WireError pn_error) {
  if (!after_packet_opened(now, level, generation, packet_number)) return false;
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

// --- Runs of 1-RTT packets (receive_burst.h) --------------------------------------------

DPQUIC_HOT void Connection::handle_datagrams(Instant now,
                                             std::span<const InboundDatagram> datagrams) {
  now_ = now;
  ReceiveBurst& burst = *core_.receive_burst;
  size_t next = 0;
  while (next < datagrams.size()) {
    next = stage_run(now, datagrams, next, burst);
    if (burst.count == 0) {
      // Not a packet a run takes (a long header, a coalesced datagram, an
      // unknown path, a closing connection): the one-at-a-time path.
      const InboundDatagram& datagram = datagrams[next++];
      handle_datagram(now, datagram.path, datagram.ecn, datagram.bytes);
      continue;
    }
    crypto::open_burst(*core_.mb, {burst.ops.data(), burst.op_count},
                       {burst.status.data(), burst.op_count});
    process_run(now, datagrams, burst);
  }
}

// Stages datagrams from `next` until one is not for a run or the run is
// full; returns the next datagram. Header protection comes off the whole run
// at once, then packet numbers and read keys are decided in order.
size_t Connection::stage_run(Instant now, std::span<const InboundDatagram> datagrams, size_t next,
                             ReceiveBurst& burst) {
  burst.count = 0;
  burst.op_count = 0;
  burst.unmask_count = 0;
  while (next < datagrams.size() && burst.count < ReceiveBurst::kCapacity &&
         classify_packet(datagrams[next], burst)) {
    burst.packets[burst.count++].datagram = static_cast<uint32_t>(next++);
  }
  crypto::remove_header_protection_burst(*core_.mb, {burst.unmask.data(), burst.unmask_count},
                                         {burst.pn_lengths.data(), burst.unmask_count});
  const Space& sp = space(PacketNumberSpace::kApplication);
  // Decoding against the largest packet number before the run is enough: the
  // peer sized each packet number for the largest we had acknowledged.
  const std::optional<uint64_t> largest =
      sp.acks.has_received() ? std::optional<uint64_t>(sp.acks.largest_received()) : std::nullopt;
  bool other_phase = false;
  for (size_t i = 0; i < burst.count; ++i) {
    choose_read_key(now, largest, burst, burst.packets[i], other_phase);
  }
  return next;
}

// False, with nothing changed, for a datagram the one-at-a-time path takes.
// Otherwise the run's next packet: kDrop with its reason, or kUnmask.
DPQUIC_INLINE_STEP bool Connection::classify_packet(const InboundDatagram& datagram,
                                                    ReceiveBurst& burst) {
  if (state_ != ConnectionState::kHandshake && state_ != ConnectionState::kEstablished) {
    return false;
  }
  const std::span<uint8_t> bytes = datagram.bytes;
  ReceiveBurst::Packet& staged = burst.packets[burst.count];
  wire::ParsedHeader& header = staged.header;
  if (bytes.empty() || (bytes[0] & 0x80) != 0 ||
      wire::parse_packet_header(bytes, local_cids_.any_active().size(), header) !=
          wire::WireError::kOk) {
    return false;
  }
  // Consecutive datagrams mostly share a path: one comparison, not a search.
  const ReceiveBurst::Packet* previous =
      burst.count == 0 ? nullptr : &burst.packets[burst.count - 1];
  const auto path_id =
      previous != nullptr && paths_.path(previous->path_id).addresses == datagram.path
          ? std::optional<uint32_t>(previous->path_id)
          : paths_.find(datagram.path);
  if (!path_id) return false;
  staged.path_id = *path_id;
  staged.verdict = Verdict::kDrop;
  if (const auto reason = precheck_packet(*path_id, header, false)) {
    staged.drop_reason = *reason;
    return true;
  }
  const crypto::HeaderProtectionKey* hp =
      keys_.read_header_protection(EncryptionLevel::kApplication);
  if (hp == nullptr) {
    staged.drop_reason = PacketDropReason::kKeyUnavailable;
    return true;
  }
  staged.verdict = Verdict::kUnmask;
  staged.unmask = static_cast<uint8_t>(burst.unmask_count);
  burst.unmask[burst.unmask_count++] = {hp, bytes, header.packet_number_offset};
  return true;
}

// An unmasked packet's number, then its key: kOpen in the current phase
// (its OpenOp added), kOther from the first packet in another phase on.
DPQUIC_INLINE_STEP void Connection::choose_read_key(Instant now, std::optional<uint64_t> largest,
                                                    ReceiveBurst& burst,
                                                    ReceiveBurst::Packet& staged,
                                                    bool& other_phase) {
  if (staged.verdict != Verdict::kUnmask) return;
  staged.verdict = Verdict::kDrop;
  staged.drop_reason = PacketDropReason::kHeaderParseError;
  const std::span<uint8_t> bytes = burst.unmask[staged.unmask].packet;
  if (burst.pn_lengths[staged.unmask] == 0) return;
  staged.pn_error = wire::decode_packet_number_fields(bytes, staged.header, largest, staged.fields);
  if (staged.pn_error == wire::WireError::kDrop) return;
  const crypto::ReadKeySelection selection =
      other_phase ? crypto::ReadKeySelection{}
                  : keys_.select_read_key(EncryptionLevel::kApplication, staged.fields.key_phase,
                                          staged.fields.packet_number, now);
  if (other_phase || selection.generation != crypto::KeyGeneration::kCurrent) {
    // Opened on its turn, when the packets before it are done.
    staged.verdict = Verdict::kOther;
    other_phase = true;
    return;
  }
  if (selection.key == nullptr) staged.drop_reason = PacketDropReason::kKeyUnavailable;
  if (selection.key == nullptr || staged.fields.payload_size < crypto::kAeadTagLength) return;
  staged.verdict = Verdict::kOpen;
  staged.op = static_cast<uint8_t>(burst.op_count);
  crypto::OpenOp& op = burst.ops[burst.op_count++];
  const std::span<uint8_t> body =
      bytes.subspan(staged.fields.payload_offset, staged.fields.payload_size);
  op.key = selection.key;
  op.packet_number = staged.fields.packet_number;
  op.header = bytes.first(staged.fields.payload_offset);
  op.ciphertext = body;
  op.out = body.first(body.size() - crypto::kAeadTagLength);
}

// Each staged packet as handle_datagram would take it, in order: counted on
// its path, then dropped, answered with a close, or its frames processed.
DPQUIC_HOT void Connection::process_run(Instant now, std::span<const InboundDatagram> datagrams,
                                        const ReceiveBurst& burst) {
  for (size_t i = 0; i < burst.count; ++i) {
    if (state_ == ConnectionState::kClosed || state_ == ConnectionState::kDraining) return;
    const ReceiveBurst::Packet& staged = burst.packets[i];
    const InboundDatagram& datagram = datagrams[staged.datagram];
    stats_.bytes_received += datagram.bytes.size();
    const uint32_t path_id =
        count_received_on_path(now, datagram.path, datagram.bytes.size(), staged.path_id);
    if (state_ == ConnectionState::kClosing) {
      on_datagram_while_closing();
      continue;
    }
    process_staged(now, datagram, path_id, burst, staged);
  }
}

DPQUIC_INLINE_STEP void Connection::process_staged(Instant now, const InboundDatagram& datagram,
                                                   uint32_t path_id, const ReceiveBurst& burst,
                                                   const ReceiveBurst::Packet& staged) {
  const wire::ParsedHeader& header = staged.header;
  const std::span<uint8_t> bytes = datagram.bytes;
  // A path that went away since staging is checked again, as for any packet.
  const auto reason = staged.verdict == Verdict::kDrop ? std::optional(staged.drop_reason)
                                                       : precheck_packet(path_id, header, false);
  if (reason) return drop_packet(now, header, bytes.size(), *reason);
  OpenedPacket opened{.fields = staged.fields, .payload = {}};
  if (staged.verdict == Verdict::kOther) {
    if (!open_unmasked(now, bytes, header, false, bytes, staged.pn_error, opened)) return;
  } else {
    if (burst.status[staged.op] != crypto::PacketStatus::kOk) {
      return on_open_failure(now, header, bytes.size(), bytes);
    }
    opened.payload = burst.ops[staged.op].out;
    if (!accept_opened(now, EncryptionLevel::kApplication, crypto::KeyGeneration::kCurrent,
                       staged.fields.packet_number, staged.pn_error)) {
      return;
    }
  }
  Arrival arrival{.now = now,
                  .addresses = datagram.path,
                  .datagram_size = bytes.size(),
                  .ecn = datagram.ecn,
                  .path_id = path_id,
                  .dcid = header.dcid};
  process_opened(arrival, bytes, header, false, opened);
}

}  // namespace dpquic::conn
