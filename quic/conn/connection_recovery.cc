// Acknowledgments and losses of sent frames, timers, key updates, and the
// closing and draining states (RFC 9000 §10, §13.3; RFC 9001 §6).

#include <algorithm>

#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/hot_path.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::PacketNumberSpace;

namespace {

TracedCloseTrigger traced_trigger(CloseReason reason) {
  switch (reason) {
    case CloseReason::kLocalClose: return TracedCloseTrigger::kLocalClose;
    case CloseReason::kPeerClose: return TracedCloseTrigger::kPeerClose;
    case CloseReason::kIdleTimeout: return TracedCloseTrigger::kIdleTimeout;
    case CloseReason::kHandshakeTimeout: return TracedCloseTrigger::kHandshakeTimeout;
    case CloseReason::kStatelessReset: return TracedCloseTrigger::kStatelessReset;
    case CloseReason::kVersionNegotiation: return TracedCloseTrigger::kVersionNegotiation;
    case CloseReason::kNone:
    case CloseReason::kTransportError: break;
  }
  return TracedCloseTrigger::kTransportError;
}

}  // namespace

void Connection::on_packet_acked(PacketNumberSpace space_id, uint64_t packet_number,
                                 const recovery::SentPacket& packet) {
  ++acked_in_frame_;
  if (ecn_marked_[static_cast<size_t>(space_id)].contains(packet_number)) ++ecn_marked_in_frame_;
  if (space_id == PacketNumberSpace::kApplication) {
    if (first_packet_in_phase_ && packet_number >= *first_packet_in_phase_) {
      current_phase_acked_ = true;
    }
    path_mtu_.on_packet_acked(packet_number, packet.size);
  }
  sent_frames_.consume(packet.frames,
                       [&](const SentFrame& frame) { on_frame_acked(space_id, frame); });
}

void Connection::on_packet_lost(PacketNumberSpace space_id, uint64_t packet_number,
                                const recovery::SentPacket& packet) {
  ++stats_.packets_lost;
  if (tracer_) {
    const wire::PacketType type =
        space_id == PacketNumberSpace::kInitial     ? wire::PacketType::kInitial
        : space_id == PacketNumberSpace::kHandshake ? wire::PacketType::kHandshake
                                                    : wire::PacketType::kOneRtt;
    tracer_->on_packet_lost(now_, type, packet_number);
  }
  if (abandoning_packets_) {
    sent_frames_.consume(packet.frames, [](const SentFrame&) {});
    return;
  }
  if (space_id == PacketNumberSpace::kApplication) {
    path_mtu_.on_packet_lost(now_, packet_number, packet.size);
  }
  sent_frames_.consume(packet.frames,
                       [&](const SentFrame& frame) { on_frame_lost(space_id, frame); });
}

void Connection::on_frame_acked(PacketNumberSpace space_id, const SentFrame& frame) {
  switch (frame.type) {
    case SentFrameType::kAck: space(space_id).acks.on_ack_frame_acknowledged(frame.offset); break;
    case SentFrameType::kStream:
      if (Stream* stream = find_stream(frame.stream_id); stream && stream->send) {
        stream->send->on_stream_frame_acked(
            StreamFrameRecord{frame.offset, frame.length, frame.fin});
        if (stream->write_blocked && stream->send->writable_bytes() != 0) {
          stream->write_blocked = false;
          push_stream_event(*stream, ConnectionEventType::kStreamWritable);
        }
        free_stream_if_done(*stream);
      }
      break;
    case SentFrameType::kCrypto: {
      Space& sp = space(space_id);
      if (sp.discarded || tls_ == nullptr) break;
      sp.crypto_in_flight.remove(frame.offset, frame.offset + frame.length);
      sp.crypto_lost.remove(frame.offset, frame.offset + frame.length);
      const auto level = static_cast<EncryptionLevel>(frame.stream_id);
      uint64_t keep_from = tls_->pending_offset(level);
      if (!sp.crypto_in_flight.empty())
        keep_from = std::min(keep_from, sp.crypto_in_flight.front().begin);
      if (!sp.crypto_lost.empty()) keep_from = std::min(keep_from, sp.crypto_lost.front().begin);
      tls_->release_acknowledged(level, keep_from);
      break;
    }
    case SentFrameType::kResetStream:
      if (Stream* stream = find_stream(frame.stream_id); stream && stream->send) {
        stream->send->on_reset_frame_acked();
        free_stream_if_done(*stream);
      }
      break;
    case SentFrameType::kRetireConnectionId: peer_cids_.on_retire_frame_acked(frame.offset); break;
    case SentFrameType::kHandshakeDone: handshake_done_acked_ = true; break;
    default: break;
  }
}

void Connection::on_frame_lost(PacketNumberSpace space_id, const SentFrame& frame) {
  Stream* stream = nullptr;
  switch (frame.type) {
    case SentFrameType::kStream:
      if ((stream = find_stream(frame.stream_id)) && stream->send) {
        stream->send->on_stream_frame_lost(
            StreamFrameRecord{frame.offset, frame.length, frame.fin});
        schedule_stream(*stream);
      }
      break;
    case SentFrameType::kCrypto: {
      Space& sp = space(space_id);
      if (sp.discarded) break;
      sp.crypto_in_flight.remove(frame.offset, frame.offset + frame.length);
      sp.crypto_lost.insert(frame.offset, frame.offset + frame.length);
      break;
    }
    case SentFrameType::kMaxData:
      receive_window_.on_update_lost(frame.offset);
      if (receive_window_.update_due()) max_data_pending_ = true;
      break;
    case SentFrameType::kMaxStreamData:
      if ((stream = find_stream(frame.stream_id)) && stream->receive) {
        stream->receive->window().on_update_lost(frame.offset);
        if (stream->receive->window().update_due()) schedule_stream(*stream);
      }
      break;
    case SentFrameType::kMaxStreamsBidi:
      stream_limits_.on_max_streams_lost(StreamDirection::kBidirectional, frame.offset);
      break;
    case SentFrameType::kMaxStreamsUni:
      stream_limits_.on_max_streams_lost(StreamDirection::kUnidirectional, frame.offset);
      break;
    case SentFrameType::kResetStream:
      if ((stream = find_stream(frame.stream_id)) && stream->send) {
        stream->send->on_reset_frame_lost();
        schedule_stream(*stream);
      }
      break;
    case SentFrameType::kStopSending:
      if ((stream = find_stream(frame.stream_id)) && stream->receive) {
        stream->receive->on_stop_sending_lost();
        schedule_stream(*stream);
      }
      break;
    case SentFrameType::kStreamDataBlocked:
      if ((stream = find_stream(frame.stream_id)) && stream->send) {
        stream->send->on_blocked_frame_lost();
      }
      break;
    case SentFrameType::kNewConnectionId: local_cids_.on_new_cid_frame_lost(frame.offset); break;
    case SentFrameType::kRetireConnectionId: peer_cids_.on_retire_frame_lost(frame.offset); break;
    case SentFrameType::kHandshakeDone: handshake_done_pending_ = true; break;
    case SentFrameType::kNewToken: new_token_pending_ = true; break;
    case SentFrameType::kPathChallenge:
      paths_.on_challenge_lost(static_cast<uint32_t>(frame.stream_id));
      break;
    default: break;
  }
}

// --- Timers -------------------------------------------------------------------------------------

DPQUIC_HOT Instant Connection::next_timeout() const {
  if (state_ == ConnectionState::kClosed) return kNever;
  if (state_ == ConnectionState::kClosing || state_ == ConnectionState::kDraining) {
    return close_deadline_;
  }
  const Instant loss_timer = probes_unsent() ? kNever : loss_.timer();
  const Instant handshake_deadline = handshake_ ? handshake_->deadline : kNever;
  Instant deadline = std::min({idle_deadline_, handshake_deadline, loss_timer, pacing_deadline_,
                               paths_.next_deadline(), path_mtu_.next_deadline(),
                               keep_alive_pending_ ? kNever : keep_alive_deadline_});
  for (const Space& sp : spaces_) {
    if (!sp.discarded) deadline = std::min(deadline, sp.acks.ack_deadline());
  }
  return deadline;
}

void Connection::handle_timeout(Instant now) {
  now_ = now;
  if (state_ == ConnectionState::kClosed) return;
  if (state_ == ConnectionState::kClosing || state_ == ConnectionState::kDraining) {
    if (now >= close_deadline_) finish(close_reason_);
    return;
  }
  if (now >= idle_deadline_) {
    // RFC 9000 §10.1: the connection is silently closed.
    close_reason_ = CloseReason::kIdleTimeout;
    finish(CloseReason::kIdleTimeout);
    return;
  }
  if (handshake_ && now >= handshake_->deadline && !handshake_complete_) {
    close_reason_ = CloseReason::kHandshakeTimeout;
    finish(CloseReason::kHandshakeTimeout);
    return;
  }
  if (pacing_deadline_ <= now) pacing_deadline_ = kNever;
  if (keep_alive_deadline_ <= now && handshake_confirmed_) keep_alive_pending_ = true;
  if (path_mtu_.next_deadline() <= now) path_mtu_.on_timeout(now);
  // The PTO is measured from the last ack-eliciting packet, which may be
  // long past (e.g. the 1-RTT space's when the handshake spaces are
  // discarded): without this guard it would fire again and again at the
  // same instant, multiplying the backoff while a single probe goes out.
  if (loss_.timer() <= now && !probes_unsent()) on_loss_timer(now);
  handle_path_timeouts(now);
}

void Connection::on_loss_timer(Instant now) {
  const uint32_t ptos = loss_.pto_count();
  loss_.on_timeout(now, *this);
  if (loss_.pto_count() > ptos) path_mtu_.on_pto(now);  // black-hole evidence
  if (tracer_) trace_metrics(now);
  // A probe of the handshake spaces carries the unacknowledged CRYPTO data
  // again rather than a bare PING, so a lost flight is repaired in one PTO.
  for (const PacketNumberSpace s : {PacketNumberSpace::kInitial, PacketNumberSpace::kHandshake}) {
    Space& sp = space(s);
    if (sp.discarded || loss_.probes_pending(s) == 0) continue;
    for (const RangeSet::Range& range : sp.crypto_in_flight.ranges()) {
      sp.crypto_lost.insert(range.begin, range.end);
    }
    sp.crypto_in_flight.clear();
  }
  // Likewise a server's 1-RTT probe carries HANDSHAKE_DONE again until it is
  // acknowledged (RFC 9002 §6.2.4 allows previously sent data in probes):
  // until then the client cannot confirm the handshake, and its own probes
  // go to the Handshake space the server has discarded, so a bare PING
  // would need one more round trip (its ACK) to repair the loss.
  if (role_ == wire::Role::kServer && handshake_complete_ && !handshake_done_acked_ &&
      loss_.probes_pending(PacketNumberSpace::kApplication) != 0) {
    handshake_done_pending_ = true;
  }
}

void Connection::handle_path_timeouts(Instant now) {
  std::array<uint32_t, PathTable::kMaxPaths> failed;
  size_t failed_count = 0;
  paths_.on_timeout(now, failed, failed_count);
  const auto failed_end = failed.begin() + static_cast<std::ptrdiff_t>(failed_count);
  if (std::find(failed.begin(), failed_end, active_path_) != failed_end &&
      !fall_back_to_validated_path(now)) {
    enter_closing(
        now, transport_error(wire::TransportErrorCode::kNoViablePath, "path validation failed"),
        false, 0);
    return;
  }
  // A path that failed validation and is not (now) the active one is
  // dropped, and its peer CID retired (§9.5).
  for (size_t i = 0; i < failed_count; ++i) abandon_path(failed[i]);
}

bool Connection::fall_back_to_validated_path(Instant now) {
  // The active path failed validation: go back to the last validated peer
  // address (RFC 9000 §9.3.2), which the move to the new one left unused,
  // also when its own re-validation (§9.3.3) just failed too: the peer
  // proved it before, and an attacker must not close the connection.
  const uint32_t failed_active = active_path_;
  for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) {
    if (id != failed_active && paths_.exists(id) && paths_.path(id).validated &&
        paths_.path(id).has_peer_cid) {
      set_active_path(id);
      loss_.set_amplification_blocked(now, false);
      return true;
    }
  }
  return false;
}

bool Connection::peer_unresponsive(Instant now) const {
  if (!is_open() || !loss_.has_ack_eliciting_in_flight()) return false;
  const Duration silence = std::max<Duration>(3 * loss_.rtt().pto_base(), kUnresponsiveFloor);
  return now >= last_received_ && now - last_received_ >= silence;
}

void Connection::reset_idle_timer(Instant now) {
  if (idle_timeout_ == 0) {
    idle_deadline_ = kNever;
    return;
  }
  // RFC 9000 §10.1: at least three PTOs, so probes get a chance.
  const Duration pto = loss_.pto_duration(PacketNumberSpace::kApplication);
  idle_deadline_ = now + std::max<Duration>(idle_timeout_, 3 * pto);
}

bool Connection::probes_unsent() const {
  for (const PacketNumberSpace s : {PacketNumberSpace::kInitial, PacketNumberSpace::kHandshake,
                                    PacketNumberSpace::kApplication}) {
    if (loss_.probes_pending(s) != 0) return true;
  }
  return false;
}

Duration Connection::closing_period() const {
  return 3 * loss_.pto_duration(PacketNumberSpace::kApplication);
}

void Connection::maybe_update_keys() {
  if (!handshake_confirmed_ || tls_ == nullptr) return;
  uint64_t limit = config_.key_update_interval_packets;
  if (const auto suite = tls_->cipher_suite()) {
    // Stay well inside the AEAD confidentiality limit (RFC 9001 §6.6).
    const uint64_t aead_limit = crypto::aead_confidentiality_limit(*suite);
    if (aead_limit != UINT64_MAX)
      limit = limit == 0 ? aead_limit / 2 : std::min(limit, aead_limit / 2);
  }
  if (limit != 0 && packets_under_key_ >= limit) (void)initiate_key_update();
}

// --- Closing
// --------------------------------------------------------------------------------------

void Connection::close(Instant now, uint64_t error_code, bool application, const char* reason) {
  now_ = now;
  // Already closing, draining or closed: the first close and its reason stand.
  if (state_ == ConnectionState::kClosing || state_ == ConnectionState::kDraining ||
      state_ == ConnectionState::kClosed) {
    return;
  }
  if (state_ == ConnectionState::kHandshake &&
      keys_.write_keys(EncryptionLevel::kInitial) == nullptr &&
      keys_.write_keys(EncryptionLevel::kHandshake) == nullptr &&
      keys_.write_keys(EncryptionLevel::kApplication) == nullptr) {
    finish(CloseReason::kLocalClose);
    return;
  }
  close_reason_ = CloseReason::kLocalClose;
  enter_closing(now,
                transport_error(application ? wire::TransportErrorCode::kApplicationError
                                            : static_cast<wire::TransportErrorCode>(error_code),
                                reason),
                application, error_code);
}

void Connection::enter_closing(Instant now, const TransportError& error, bool application,
                               uint64_t application_code) {
  if (state_ == ConnectionState::kClosing || state_ == ConnectionState::kDraining ||
      state_ == ConnectionState::kClosed) {
    return;
  }
  state_ = ConnectionState::kClosing;
  if (tracer_) tracer_->on_state_changed(now, TracedState::kClosing);
  close_error_ = error;
  close_application_ = application;
  close_application_code_ = application_code;
  queue_close_frames();
  close_deadline_ = now + closing_period();
  if (close_reason_ == CloseReason::kNone) close_reason_ = CloseReason::kTransportError;
  close_error_code_ = application ? application_code : static_cast<uint64_t>(error.code);
  push_close_event(application);
}

void Connection::queue_close_frames() {
  // RFC 9000 §10.2.3: before the handshake is confirmed the peer may not
  // have our highest keys (a server cannot know whether the client has
  // Handshake keys; 1-RTT may not be readable yet), so the close goes out
  // at every level we can still write; each in its own burst, since a close
  // ends one. Once confirmed, 1-RTT alone.
  uint8_t levels = 0;
  for (const EncryptionLevel level :
       {EncryptionLevel::kInitial, EncryptionLevel::kHandshake, EncryptionLevel::kApplication}) {
    if (handshake_confirmed_ && level != EncryptionLevel::kApplication) continue;
    if (keys_.write_keys(level) == nullptr || space(space_of_level(level)).discarded) continue;
    levels |= static_cast<uint8_t>(1u << static_cast<unsigned>(level));
  }
  close_levels_pending_ = levels;
  close_frame_pending_ = levels != 0;
}

void Connection::enter_draining(Instant now, CloseReason reason, uint64_t code, bool application) {
  if (state_ == ConnectionState::kDraining || state_ == ConnectionState::kClosed) return;
  const bool was_closing = state_ == ConnectionState::kClosing;
  state_ = ConnectionState::kDraining;
  if (tracer_) tracer_->on_state_changed(now, TracedState::kDraining);
  close_deadline_ = now + closing_period();
  if (was_closing) return;  // the close we started stands as the reason
  close_reason_ = reason;
  close_error_code_ = code;
  push_close_event(application);
}

void Connection::expire_handshake(Instant now) {
  now_ = now;
  if (state_ == ConnectionState::kClosed) return;
  close_reason_ = CloseReason::kHandshakeTimeout;
  finish(CloseReason::kHandshakeTimeout);
}

void Connection::finish(CloseReason reason) {
  if (state_ == ConnectionState::kClosed) return;
  state_ = ConnectionState::kClosed;
  if (close_reason_ == CloseReason::kNone) close_reason_ = reason;
  if (!close_event_pushed_) push_close_event(false);
  if (tracer_) tracer_->on_state_changed(now_, TracedState::kClosed);
  local_cids_.unregister_all();
}

void Connection::push_close_event(bool application) {
  // The application hears of the end once, however it came about.
  ConnectionEvent event;
  event.type = ConnectionEventType::kClosed;
  event.error_code = close_error_code_;
  event.close_reason = close_reason_;
  event.application_error = application;
  push_event(event);
  close_event_pushed_ = true;
  if (tracer_) {
    TracedClose close;
    close.trigger = traced_trigger(close_reason_);
    close.remote =
        close_reason_ == CloseReason::kPeerClose || close_reason_ == CloseReason::kStatelessReset;
    close.application = application;
    close.error_code = close_error_code_;
    if (state_ == ConnectionState::kClosing && close_error_.reason != nullptr) {
      close.reason = close_error_.reason;
    }
    tracer_->on_connection_closed(now_, close);
  }
}

}  // namespace dpquic::conn
