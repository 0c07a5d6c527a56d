// LoadWorker's connections: their events, GOAWAY, the end of a connection
// and its slot, and the source ports they hold (load_worker.h).

#include <algorithm>

#include "dataplane/shard/shard_core.h"
#include "quic/wire/errors.h"
#include "tools/quicload/load_worker.h"

namespace dpquic::tools {

namespace {

// Why a connection that never completed its handshake ended.
ErrorKind handshake_error(const conn::ConnectionEvent& event) {
  switch (event.close_reason) {
    case conn::CloseReason::kHandshakeTimeout:
    case conn::CloseReason::kIdleTimeout: return ErrorKind::kHandshakeTimeout;
    case conn::CloseReason::kPeerClose:
      return !event.application_error &&
                     event.error_code ==
                         static_cast<uint64_t>(wire::TransportErrorCode::kConnectionRefused)
                 ? ErrorKind::kRefused
                 : ErrorKind::kProtocol;
    case conn::CloseReason::kStatelessReset: return ErrorKind::kClosed;
    default: return ErrorKind::kProtocol;
  }
}

}  // namespace

// --- Connections ------------------------------------------------------------------------

void LoadWorker::on_event(Instant now, const endpoint::EndpointEvent& event) {
  const int32_t index =
      event.connection < slot_of_handle_.size() ? slot_of_handle_[event.connection] : kNoSlot;
  // Our bookkeeping first: on kClosed the client then fails the open
  // requests, which must not refill a connection that is gone.
  if (index != kNoSlot) {
    if (event.event.type == conn::ConnectionEventType::kEstablished) {
      on_established(static_cast<uint32_t>(index), now);
    } else if (event.event.type == conn::ConnectionEventType::kClosed) {
      on_closed(static_cast<uint32_t>(index), event.event, now);
    }
  }
  const bool closed = event.event.type == conn::ConnectionEventType::kClosed;
  if (closed) forget_retiring(event.connection);
  // --handshake-only: the connections close once confirmed, before any
  // request; setting up an application session for them (HTTP/3 control and
  // QPACK streams) would be load on the client, not on the handshake.
  if (!options_.handshake_only) {
    if (perf_) {
      perf_->on_event(now, event);
    } else {
      h3_->on_event(now, event);
    }
  }
  if (closed) closing_.push_back(event.connection);
}

void LoadWorker::on_goaway(endpoint::ConnectionHandle handle, uint64_t) {
  last_goaway_ = dataplane::monotonic_now();
  const int32_t index = handle < slot_of_handle_.size() ? slot_of_handle_[handle] : kNoSlot;
  // --idle holds its connections to the end: the server's close counts.
  if (index == kNoSlot || idle_mode_) return;
  const Slot& slot = slots_[index];
  ++counters_.goaways;
  if (slot.in_flight == 0) {
    to_close_.push_back(slot.handle);
  } else {
    retiring_.push_back(
        Retiring{slot.handle, static_cast<uint32_t>(index), slot.generation, slot.in_flight});
  }
  release_slot(static_cast<uint32_t>(index), !stopping_);
}

void LoadWorker::forget_retiring(endpoint::ConnectionHandle handle) {
  std::erase_if(retiring_, [handle](const Retiring& r) { return r.handle == handle; });
}

bool LoadWorker::peer_draining(Instant now) const {
  // (`now` may predate last_goaway_: the iteration's clock.)
  return last_goaway_ != 0 && now < last_goaway_ + options_.timeout;
}

void LoadWorker::sweep_closing() {
  size_t kept = 0;
  for (const endpoint::ConnectionHandle handle : closing_) {
    if (io_.endpoint().exists(handle)) {
      closing_[kept++] = handle;
    } else {
      release_local(handle);
    }
  }
  closing_.resize(kept);
}

void LoadWorker::release_local(endpoint::ConnectionHandle handle) {
  if (handle >= local_of_handle_.size() || !local_of_handle_[handle].valid()) return;
  io_.close_local(local_of_handle_[handle]);
  local_of_handle_[handle] = conn::SocketAddress();
}

void LoadWorker::pump(Instant now) {
  if (perf_) {
    perf_->pump(now);
  } else {
    h3_->pump(now);
  }
}

bool LoadWorker::wants_pump() const { return perf_ ? perf_->wants_pump() : h3_->wants_pump(); }

void LoadWorker::on_established(uint32_t index, Instant now) {
  Slot& slot = slots_[index];
  if (slot.state != SlotState::kConnecting) return;
  slot.state = SlotState::kEstablished;
  --connecting_;
  ++counters_.handshakes;
  handshake_.record(now - slot.connect_at);
  if (options_.handshake_only || idle_mode_) latency_.record(now - slot.connect_at);
  if (const conn::Connection* c = io_.endpoint().connection(slot.handle)) {
    if (const crypto::TlsSession* tls = c->tls()) {
      counters_.resumed += tls->session_resumed() ? 1 : 0;
      counters_.zero_rtt_offered += tls->early_data_offered() ? 1 : 0;
      counters_.zero_rtt_accepted += tls->early_data_accepted() ? 1 : 0;
    }
  }
  if (!options_.handshake_only && !idle_mode_) fill(index, now);
}

void LoadWorker::check_confirmed() {
  for (uint32_t index = 0; index < slots_.size(); ++index) {
    const Slot& slot = slots_[index];
    if (slot.state != SlotState::kEstablished) continue;
    const conn::Connection* c = io_.endpoint().connection(slot.handle);
    if (c != nullptr && c->handshake_confirmed()) finish_connection(index);
  }
}

void LoadWorker::on_closed(uint32_t index, const conn::ConnectionEvent& event, Instant now) {
  const Slot& slot = slots_[index];
  bool may_reopen = false;
  const ErrorKind error = handshake_error(event);
  if (slot.state == SlotState::kConnecting && error == ErrorKind::kRefused && peer_draining(now)) {
    ++counters_.connections_refused_after_goaway;
    reconnect_at_ = now + kRefusedBackoff;
    may_reopen = reopen_allowed();
  } else if (slot.state == SlotState::kConnecting) {
    ++counters_.handshakes_failed;
    counters_.count(error);
    // A request count is not retried against a server that failed a
    // handshake; handshakes and timed runs go on.
    may_reopen = (options_.handshake_only || unbounded_) && reopen_allowed();
  } else {
    // Closed under its open requests (the client fails them as "closed").
    may_reopen = unbounded_ && reopen_allowed();
    // --idle: a held connection must last until the end.
    if (idle_mode_ && !stopping_) counters_.count(ErrorKind::kClosed);
  }
  release_slot(index, may_reopen);
}

void LoadWorker::finish_connection(uint32_t index) {
  to_close_.push_back(slots_[index].handle);
  release_slot(index, reopen_allowed());
}

void LoadWorker::release_slot(uint32_t index, bool may_reopen) {
  Slot& slot = slots_[index];
  if (!live(slot)) return;
  slot_of_handle_[slot.handle] = kNoSlot;
  --live_slots_;
  if (slot.state == SlotState::kConnecting) --connecting_;
  first_ended_ = true;
  slot.in_flight = 0;
  if (may_reopen) {
    slot.state = SlotState::kIdle;
    idle_.push_back(index);
  } else {
    slot.state = SlotState::kDone;
  }
}

}  // namespace dpquic::tools
