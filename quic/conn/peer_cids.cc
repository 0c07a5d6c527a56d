#include "quic/conn/peer_cids.h"

#include <openssl/mem.h>

#include <algorithm>

#include "quic/wire/frame_codec.h"

namespace dpquic::conn {

namespace {

using wire::TransportErrorCode;

constexpr uint64_t kNewCidFrameType = static_cast<uint64_t>(wire::FrameType::kNewConnectionId);
constexpr size_t kMinActiveLimit = 2;  // RFC 9000 §18.2
constexpr uint64_t kSeenWindow = 64;

const wire::ConnectionId kNoCid{};

}  // namespace

PeerConnectionIds::PeerConnectionIds(size_t active_limit, size_t max_pending_retire)
    : slots_(std::max(active_limit, kMinActiveLimit)),
      retire_bound_(std::max(max_pending_retire, 2 * slots_.size())) {
  retirements_.reserve(retire_bound_);
}

// --- Sequence bookkeeping ------------------------------------------------------

bool PeerConnectionIds::seen(uint64_t sequence) const {
  if (sequence < seen_base_) return true;
  if (sequence - seen_base_ >= kSeenWindow) return false;
  return (seen_bits_ >> (sequence - seen_base_)) & 1;
}

void PeerConnectionIds::mark_seen(uint64_t sequence) {
  if (sequence < seen_base_) return;
  if (sequence - seen_base_ >= kSeenWindow) {
    // Slide so `sequence` is the window's top. Sequences that fall below it
    // count as seen: a frame arriving 64 sequences late is ignored.
    const uint64_t new_base = sequence - (kSeenWindow - 1);
    const uint64_t shift = new_base - seen_base_;
    seen_bits_ = shift >= kSeenWindow ? 0 : seen_bits_ >> shift;
    seen_base_ = new_base;
  }
  seen_bits_ |= uint64_t{1} << (sequence - seen_base_);
}

PeerConnectionIds::Slot* PeerConnectionIds::find_live(uint64_t sequence) {
  for (Slot& slot : slots_) {
    if (slot.live && slot.sequence == sequence) return &slot;
  }
  return nullptr;
}

PeerConnectionIds::Slot* PeerConnectionIds::free_slot() {
  for (Slot& slot : slots_) {
    if (!slot.live) return &slot;
  }
  return nullptr;
}

size_t PeerConnectionIds::held_count() const {
  return static_cast<size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.live; }));
}

bool PeerConnectionIds::queue_retirement(uint64_t sequence) {
  for (const Retirement& retirement : retirements_) {
    if (retirement.sequence == sequence) return true;  // already owed
  }
  if (retirements_.size() >= retire_bound_) return false;
  retirements_.push_back(Retirement{sequence, false});  // within reserved capacity
  return true;
}

bool PeerConnectionIds::retire_slot(Slot& slot) {
  if (!queue_retirement(slot.sequence)) return false;
  slot.live = false;
  slot.used = false;
  slot.has_token = false;
  return true;
}

bool PeerConnectionIds::activate_lowest() {
  // An unused CID first: a used one may be another path's (§9.5).
  size_t best = slots_.size();
  for (const bool unused_only : {true, false}) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& slot = slots_[i];
      if (!slot.live || (unused_only && slot.used)) continue;
      if (best == slots_.size() || slot.sequence < slots_[best].sequence) best = i;
    }
    if (best != slots_.size()) break;
  }
  if (best == slots_.size()) {
    has_active_ = false;
    return false;
  }
  active_slot_ = best;
  has_active_ = true;
  slots_[best].used = true;
  return true;
}

// --- Handshake-provided CIDs -------------------------------------------------------

void PeerConnectionIds::set_initial(const wire::ConnectionId& cid) {
  Slot* slot = find_live(0);
  if (slot == nullptr) slot = free_slot();
  if (slot == nullptr) return;  // cannot happen: sequence 0 comes first
  *slot = Slot{};
  slot->live = true;
  slot->used = true;
  slot->sequence = 0;
  slot->cid = cid;
  active_slot_ = static_cast<size_t>(slot - slots_.data());
  has_active_ = true;
  mark_seen(0);
}

void PeerConnectionIds::set_initial_reset_token(const wire::StatelessResetToken& token) {
  if (Slot* slot = find_live(0)) {
    slot->reset_token = token;
    slot->has_token = true;
  }
}

void PeerConnectionIds::add_preferred_address_cid(const wire::ConnectionId& cid,
                                                  const wire::StatelessResetToken& token) {
  if (seen(1)) return;
  Slot* slot = free_slot();
  if (slot == nullptr) return;  // active_limit >= 2 leaves room next to sequence 0
  *slot = Slot{};
  slot->live = true;
  slot->sequence = 1;
  slot->cid = cid;
  slot->reset_token = token;
  slot->has_token = true;
  mark_seen(1);
}

// --- NEW_CONNECTION_ID ---------------------------------------------------------------

TransportError PeerConnectionIds::on_new_connection_id(const wire::NewConnectionIdFrame& frame) {
  if (active().empty()) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "NEW_CONNECTION_ID while using a zero-length connection ID",
                           kNewCidFrameType);
  }
  if (frame.retire_prior_to > frame.sequence_number) {
    return transport_error(TransportErrorCode::kFrameEncodingError,
                           "NEW_CONNECTION_ID Retire Prior To above Sequence Number",
                           kNewCidFrameType);
  }
  if (frame.connection_id.empty() || frame.connection_id.size() > wire::kMaxConnectionIdLength) {
    return transport_error(TransportErrorCode::kFrameEncodingError,
                           "NEW_CONNECTION_ID connection ID length not 1..20", kNewCidFrameType);
  }
  bool repeat = false;
  if (TransportError error = check_repeat(frame, repeat)) return error;
  // Received before and retired since: a retransmission, never reused.
  const bool already_retired = !repeat && seen(frame.sequence_number);
  // An increased Retire Prior To retires first, then the new CID is added
  // (§5.1.2), so a peer may replace all CIDs without exceeding our limit.
  if (frame.retire_prior_to > largest_retire_prior_to_) {
    if (TransportError error = retire_prior_to(frame.retire_prior_to)) return error;
  }
  if (!repeat && !already_retired) {
    if (TransportError error = add_new(frame)) return error;
  }
  if (!has_active_ && !activate_lowest()) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "NEW_CONNECTION_ID retires every connection ID", kNewCidFrameType);
  }
  return {};
}

TransportError PeerConnectionIds::check_repeat(const wire::NewConnectionIdFrame& frame,
                                               bool& repeat) const {
  const wire::ConnectionId cid(frame.connection_id);
  for (const Slot& slot : slots_) {
    if (!slot.live) continue;
    if (slot.sequence == frame.sequence_number) {
      if (slot.cid != cid || (slot.has_token && slot.reset_token != frame.stateless_reset_token)) {
        return transport_error(TransportErrorCode::kProtocolViolation,
                               "NEW_CONNECTION_ID reuses a sequence number", kNewCidFrameType);
      }
      repeat = true;
    } else if (slot.cid == cid) {
      return transport_error(TransportErrorCode::kProtocolViolation,
                             "NEW_CONNECTION_ID reuses a connection ID", kNewCidFrameType);
    }
  }
  return {};
}

TransportError PeerConnectionIds::retire_prior_to(uint64_t value) {
  largest_retire_prior_to_ = value;
  bool active_retired = false;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!slot.live || slot.sequence >= largest_retire_prior_to_) continue;
    if (has_active_ && i == active_slot_) active_retired = true;
    if (!retire_slot(slot)) {
      return transport_error(TransportErrorCode::kConnectionIdLimitError,
                             "too many unacknowledged connection ID retirements", kNewCidFrameType);
    }
  }
  if (active_retired) has_active_ = false;
  return {};
}

TransportError PeerConnectionIds::add_new(const wire::NewConnectionIdFrame& frame) {
  mark_seen(frame.sequence_number);
  if (frame.sequence_number < largest_retire_prior_to_) {
    // Already retired by an earlier Retire Prior To (§19.15).
    if (queue_retirement(frame.sequence_number)) return {};
    return transport_error(TransportErrorCode::kConnectionIdLimitError,
                           "too many unacknowledged connection ID retirements", kNewCidFrameType);
  }
  Slot* slot = free_slot();
  if (slot == nullptr) {
    return transport_error(TransportErrorCode::kConnectionIdLimitError,
                           "peer exceeds active_connection_id_limit", kNewCidFrameType);
  }
  *slot = Slot{};
  slot->live = true;
  slot->sequence = frame.sequence_number;
  slot->cid = wire::ConnectionId(frame.connection_id);
  slot->reset_token = frame.stateless_reset_token;
  slot->has_token = true;
  return {};
}

// --- Use and retirement ------------------------------------------------------------

const wire::ConnectionId& PeerConnectionIds::active() const {
  return has_active_ ? slots_[active_slot_].cid : kNoCid;
}

uint64_t PeerConnectionIds::active_sequence() const {
  return has_active_ ? slots_[active_slot_].sequence : 0;
}

bool PeerConnectionIds::has_unused() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const Slot& slot) { return slot.live && !slot.used; });
}

bool PeerConnectionIds::switch_to_unused() {
  if (!has_active_) return false;
  size_t next = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.live && !slot.used &&
        (next == slots_.size() || slot.sequence < slots_[next].sequence)) {
      next = i;
    }
  }
  if (next == slots_.size()) return false;
  if (!retire_slot(slots_[active_slot_])) return false;
  active_slot_ = next;
  slots_[next].used = true;
  return true;
}

std::optional<PeerConnectionIds::ClaimedCid> PeerConnectionIds::claim_unused() {
  Slot* next = nullptr;
  for (Slot& slot : slots_) {
    if (slot.live && !slot.used && (next == nullptr || slot.sequence < next->sequence)) {
      next = &slot;
    }
  }
  if (next == nullptr) return std::nullopt;
  next->used = true;
  return ClaimedCid{next->sequence, next->cid};
}

const wire::ConnectionId* PeerConnectionIds::cid_for(uint64_t sequence) const {
  for (const Slot& slot : slots_) {
    if (slot.live && slot.sequence == sequence) return &slot.cid;
  }
  return nullptr;
}

bool PeerConnectionIds::set_active(uint64_t sequence) {
  Slot* slot = find_live(sequence);
  if (slot == nullptr) return false;
  active_slot_ = static_cast<size_t>(slot - slots_.data());
  has_active_ = true;
  slot->used = true;
  return true;
}

bool PeerConnectionIds::retire(uint64_t sequence) {
  Slot* slot = find_live(sequence);
  if (slot == nullptr || (has_active_ && slot == &slots_[active_slot_])) return false;
  return retire_slot(*slot);
}

bool PeerConnectionIds::retire_frame_due() const {
  return std::any_of(retirements_.begin(), retirements_.end(),
                     [](const Retirement& retirement) { return !retirement.in_flight; });
}

bool PeerConnectionIds::write_retire_frame(wire::ByteWriter& writer, uint64_t& sequence) {
  for (Retirement& retirement : retirements_) {
    if (retirement.in_flight) continue;
    wire::Frame frame;
    frame.type = wire::FrameType::kRetireConnectionId;
    frame.retire_connection_id = wire::RetireConnectionIdFrame{retirement.sequence};
    if (!wire::encode_frame(writer, frame)) return false;
    retirement.in_flight = true;
    sequence = retirement.sequence;
    return true;
  }
  return false;
}

void PeerConnectionIds::on_retire_frame_lost(uint64_t sequence) {
  for (Retirement& retirement : retirements_) {
    if (retirement.sequence == sequence) {
      retirement.in_flight = false;
      return;
    }
  }
}

void PeerConnectionIds::on_retire_frame_acked(uint64_t sequence) {
  for (auto it = retirements_.begin(); it != retirements_.end(); ++it) {
    if (it->sequence == sequence) {
      retirements_.erase(it);  // no allocation
      return;
    }
  }
}

bool PeerConnectionIds::is_stateless_reset(std::span<const uint8_t> last16) const {
  if (last16.size() != wire::StatelessResetToken{}.size()) return false;
  // Every candidate is compared in full, whatever matched before.
  int match = 0;
  for (const Slot& slot : slots_) {
    if (!slot.live || !slot.used || !slot.has_token) continue;
    match |= CRYPTO_memcmp(slot.reset_token.data(), last16.data(), last16.size()) == 0;
  }
  return match != 0;
}

}  // namespace dpquic::conn
