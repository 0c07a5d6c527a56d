#include "quic/conn/local_cids.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::conn {

namespace {

using wire::TransportErrorCode;

const wire::ConnectionId kNoCid{};

}  // namespace

LocalConnectionIds::LocalConnectionIds(CidGenerator* generator,
                                       const crypto::StatelessResetTokens* reset_tokens,
                                       CidRegistry& registry, size_t max_issued)
    : generator_(generator),
      reset_tokens_(reset_tokens),
      registry_(registry),
      max_issued_(max_issued),
      // Sequence 1 (preferred_address) is issued before the peer's limit is
      // known, so it can take the active count one above a cap of 1.
      capacity_(max_issued + 1) {
  if (max_issued == 0) throw std::invalid_argument("LocalConnectionIds: max_issued must be >= 1");
  entries_.reserve(capacity_);
}

void LocalConnectionIds::fill_random(std::span<uint8_t> out) {
  if (generator_ != nullptr) {
    generator_->random().fill(out);
  } else {
    fill_random_unbuffered(out);
  }
}

wire::ConnectionId LocalConnectionIds::new_cid() {
  if (generator_ != nullptr) return generator_->generate();
  std::array<uint8_t, wire::kMaxConnectionIdLength> bytes;
  fill_random(std::span<uint8_t>(bytes.data(), initial_length_));
  return wire::ConnectionId(std::span<const uint8_t>(bytes.data(), initial_length_));
}

wire::StatelessResetToken LocalConnectionIds::token_for(const wire::ConnectionId& cid) {
  if (reset_tokens_ != nullptr) return reset_tokens_->token_for(cid);
  // No reset key: a random token, so a peer can never match it (§10.3.2
  // lets an endpoint that does not support reset send any value).
  wire::StatelessResetToken token;
  fill_random(token);
  return token;
}

void LocalConnectionIds::set_initial(const wire::ConnectionId& cid) {
  if (initial_set_ || closed_) return;
  initial_set_ = true;
  initial_length_ = cid.size();
  next_sequence_ = 1;
  if (cid.empty()) return;  // nothing to route on, nothing more to issue
  initial_registered_ = registry_.register_cid(cid);
  if (!initial_registered_) return;
  announced_end_ = 1;  // sequence 0 travels in the handshake
  Entry entry;
  entry.sequence = 0;
  entry.cid = cid;
  // The token for sequence 0 is the server's transport parameter; computed
  // here so the stateless reset path and ours agree.
  entry.reset_token = token_for(cid);
  entries_.push_back(entry);
}

LocalConnectionIds::Entry* LocalConnectionIds::issue_one(bool send_frame) {
  if (!initial_registered_ || closed_ || entries_.size() >= capacity_) {
    return nullptr;
  }
  for (int attempt = 0; attempt < kRegisterAttempts; ++attempt) {
    const wire::ConnectionId cid = new_cid();
    // A CID is never issued twice on one connection (§5.1): also checked
    // here, since a registry may accept a CID this connection already owns.
    if (is_active(cid)) continue;
    if (!registry_.register_cid(cid)) continue;
    Entry entry;
    entry.sequence = next_sequence_++;
    entry.cid = cid;
    entry.reset_token = token_for(cid);
    entry.in_frame = send_frame;
    entry.frame_pending = send_frame;
    entries_.push_back(entry);
    return &entries_.back();
  }
  return nullptr;
}

void LocalConnectionIds::issue_up_to_target() {
  if (peer_limit_ == 0) return;
  const size_t target = static_cast<size_t>(std::min<uint64_t>(peer_limit_, max_issued_));
  while (entries_.size() < target) {
    if (issue_one(/*send_frame=*/true) == nullptr) break;
  }
}

void LocalConnectionIds::on_peer_limit(uint64_t active_connection_id_limit) {
  peer_limit_ = active_connection_id_limit;
  issue_up_to_target();
}

bool LocalConnectionIds::new_cid_frame_due() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const Entry& entry) { return entry.frame_pending; });
}

bool LocalConnectionIds::write_new_cid_frame(wire::ByteWriter& writer, uint64_t& sequence) {
  for (Entry& entry : entries_) {
    if (!entry.frame_pending) continue;
    wire::Frame frame;
    frame.type = wire::FrameType::kNewConnectionId;
    frame.new_connection_id = wire::NewConnectionIdFrame{};
    frame.new_connection_id.sequence_number = entry.sequence;
    // We never ask the peer to retire CIDs early.
    frame.new_connection_id.retire_prior_to = 0;
    frame.new_connection_id.connection_id = entry.cid.span();
    frame.new_connection_id.stateless_reset_token = entry.reset_token;
    if (!wire::encode_frame(writer, frame)) return false;
    entry.frame_pending = false;
    announced_end_ = std::max(announced_end_, entry.sequence + 1);
    sequence = entry.sequence;
    return true;
  }
  return false;
}

void LocalConnectionIds::on_new_cid_frame_lost(uint64_t sequence) {
  for (Entry& entry : entries_) {
    if (entry.sequence == sequence) {
      // Sequence 0 and the preferred_address CID travel in the handshake,
      // never in this frame.
      if (entry.in_frame) entry.frame_pending = true;
      return;
    }
  }
}

TransportError LocalConnectionIds::on_retire(uint64_t sequence,
                                             std::span<const uint8_t> packet_dcid) {
  constexpr uint64_t kFrameType = static_cast<uint64_t>(wire::FrameType::kRetireConnectionId);
  if (initial_length_ == 0) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "RETIRE_CONNECTION_ID with zero-length connection IDs", kFrameType);
  }
  if (sequence >= announced_end_) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "RETIRE_CONNECTION_ID for a sequence never sent", kFrameType);
  }
  const auto it = std::find_if(entries_.begin(), entries_.end(), [sequence](const Entry& entry) {
    return entry.sequence == sequence;
  });
  if (it == entries_.end()) return {};  // already retired: a retransmission
  if (it->cid == wire::ConnectionId(packet_dcid)) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "RETIRE_CONNECTION_ID names the packet's own connection ID", kFrameType);
  }
  registry_.unregister_cid(it->cid);
  entries_.erase(it);  // within reserved capacity: no allocation
  issue_up_to_target();
  return {};
}

void LocalConnectionIds::unregister_all() {
  for (const Entry& entry : entries_) registry_.unregister_cid(entry.cid);
  entries_.clear();
  closed_ = true;
}

const wire::ConnectionId& LocalConnectionIds::any_active() const {
  return entries_.empty() ? kNoCid : entries_.front().cid;
}

bool LocalConnectionIds::is_active(const wire::ConnectionId& cid) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&cid](const Entry& entry) { return entry.cid == cid; });
}

std::optional<std::pair<wire::ConnectionId, wire::StatelessResetToken>>
LocalConnectionIds::issue_for_preferred_address() {
  if (next_sequence_ != 1 || entries_.empty()) return std::nullopt;
  const Entry* entry = issue_one(/*send_frame=*/false);
  if (entry == nullptr) return std::nullopt;
  announced_end_ = entry->sequence + 1;  // sent in the transport parameter
  return std::make_pair(entry->cid, entry->reset_token);
}

}  // namespace dpquic::conn
