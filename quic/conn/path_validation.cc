#include "quic/conn/path_validation.h"

#include <algorithm>

#include "quic/recovery/rtt_estimator.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::conn {

namespace {

bool write_path_frame(wire::ByteWriter& writer, wire::FrameType type,
                      const std::array<uint8_t, 8>& data) {
  wire::Frame frame;
  frame.type = type;
  if (type == wire::FrameType::kPathChallenge) {
    frame.path_challenge = wire::PathDataFrame{data};
  } else {
    frame.path_response = wire::PathDataFrame{data};
  }
  return wire::encode_frame(writer, frame);
}

}  // namespace

PathTable::PathTable(RandomSource& random) : random_(random) {}

uint32_t PathTable::add_initial(const PathAddresses& addresses, bool validated) {
  paths_[0] = PathState{};
  paths_[0].addresses = addresses;
  paths_[0].validated = validated;
  paths_[0].in_use = true;
  occupied_[0] = true;
  created_[0] = creation_counter_++;
  old_challenge_count_[0] = 0;
  return 0;
}

std::optional<uint32_t> PathTable::find(const PathAddresses& addresses) const {
  for (uint32_t id = 0; id < kMaxPaths; ++id) {
    if (occupied_[id] && paths_[id].addresses == addresses) return id;
  }
  return std::nullopt;
}

uint32_t PathTable::pick_slot(std::optional<PathState>* evicted) {
  for (uint32_t id = 0; id < kMaxPaths; ++id) {
    if (!occupied_[id]) return id;
  }
  // Full: the oldest path not in use, preferring unvalidated ones (they
  // may be spoofed; a validated path is worth keeping to fall back to).
  uint32_t victim = kNoPath;
  for (const bool unvalidated_only : {true, false}) {
    for (uint32_t id = 0; id < kMaxPaths; ++id) {
      const PathState& state = paths_[id];
      if (state.in_use || (unvalidated_only && state.validated)) continue;
      if (victim == kNoPath || created_[id] < created_[victim]) victim = id;
    }
    if (victim != kNoPath) break;
  }
  // Every path in use (the connection marks at most a couple): replace the
  // oldest anyway rather than fail.
  if (victim == kNoPath) {
    victim = 0;
    for (uint32_t id = 1; id < kMaxPaths; ++id) {
      if (created_[id] < created_[victim]) victim = id;
    }
  }
  if (evicted != nullptr) *evicted = paths_[victim];
  remove(victim);
  return victim;
}

uint32_t PathTable::add_and_validate(const PathAddresses& addresses, Instant now, Duration pto,
                                     std::optional<PathState>* evicted) {
  if (const std::optional<uint32_t> known = find(addresses)) {
    start_validation(*known, now, pto);
    return *known;
  }
  const uint32_t id = pick_slot(evicted);
  paths_[id] = PathState{};
  paths_[id].addresses = addresses;
  occupied_[id] = true;
  created_[id] = creation_counter_++;
  start_validation(id, now, pto);
  return id;
}

void PathTable::start_validation(uint32_t id, Instant now, Duration pto) {
  PathState& state = paths_[id];
  old_challenge_count_[id] = 0;
  state.challenge_padded = false;
  new_challenge(id);
  const Duration timeout = std::max(3 * pto, 6 * recovery::kInitialRtt);
  state.validation_deadline = now > kNever - timeout ? kNever - 1 : now + timeout;
}

void PathTable::new_challenge(uint32_t id) {
  PathState& state = paths_[id];
  if (validating(id)) {
    // Keep the previous data answerable: the "lost" packet may just be late.
    auto& old = old_challenges_[id];
    std::copy_backward(old.begin(), old.end() - 1, old.end());
    old[0] = state.challenge;
    old_challenge_count_[id] =
        static_cast<uint8_t>(std::min<size_t>(old_challenge_count_[id] + 1, old.size()));
  }
  random_.fill(state.challenge);
  state.challenge_pending = true;
}

void PathTable::close_validation(uint32_t id) {
  PathState& state = paths_[id];
  state.validation_deadline = kNever;
  state.challenge_pending = false;
  state.challenge = {};
  old_challenges_[id] = {};
  old_challenge_count_[id] = 0;
}

uint64_t PathTable::amplification_budget(uint32_t id) const {
  const PathState& state = paths_[id];
  if (state.validated) return UINT64_MAX;
  const uint64_t allowance =
      state.bytes_received > UINT64_MAX / 3 ? UINT64_MAX : 3 * state.bytes_received;
  return allowance > state.bytes_sent ? allowance - state.bytes_sent : 0;
}

// --- PATH_CHALLENGE received -> PATH_RESPONSE --------------------------------------

void PathTable::drop_response(size_t index) {
  for (size_t i = index + 1; i < response_count_; ++i) responses_[i - 1] = responses_[i];
  --response_count_;
  responses_[response_count_] = PendingResponse{};
}

void PathTable::on_path_challenge(uint32_t id, const std::array<uint8_t, 8>& data) {
  if (!exists(id)) return;
  if (response_count_ == kMaxPendingResponses) drop_response(0);
  responses_[response_count_++] = PendingResponse{id, data};
}

bool PathTable::response_due(uint32_t id) const {
  for (size_t i = 0; i < response_count_; ++i) {
    if (responses_[i].path == id) return true;
  }
  return false;
}

bool PathTable::write_path_response(uint32_t id, wire::ByteWriter& writer) {
  for (size_t i = 0; i < response_count_; ++i) {
    if (responses_[i].path != id) continue;
    if (!write_path_frame(writer, wire::FrameType::kPathResponse, responses_[i].data)) return false;
    drop_response(i);
    return true;
  }
  return false;
}

// --- Our PATH_CHALLENGE ----------------------------------------------------------------

bool PathTable::challenge_due(uint32_t id) const {
  return exists(id) && paths_[id].challenge_pending;
}

bool PathTable::write_path_challenge(uint32_t id, wire::ByteWriter& writer) {
  if (!challenge_due(id)) return false;
  return write_path_frame(writer, wire::FrameType::kPathChallenge, paths_[id].challenge);
}

void PathTable::on_challenge_sent(uint32_t id) {
  if (exists(id)) paths_[id].challenge_pending = false;
}

void PathTable::on_challenge_lost(uint32_t id) {
  if (!exists(id) || !validating(id) || paths_[id].challenge_pending) return;
  // At most kChallengeHistory challenges per validation, all answerable: on
  // a busy path loss is declared about once per RTT, and resending each
  // time would flood an address that may be dead (after NAT rebinding the
  // old one is re-validated) far faster than Initials are sent (§8.2.1).
  if (old_challenge_count_[id] + size_t{1} >= kChallengeHistory) return;
  new_challenge(id);
}

std::optional<uint32_t> PathTable::on_path_response(const std::array<uint8_t, 8>& data) {
  for (uint32_t id = 0; id < kMaxPaths; ++id) {
    if (!occupied_[id] || !validating(id)) continue;
    bool match = paths_[id].challenge == data;
    for (size_t i = 0; i < old_challenge_count_[id]; ++i) {
      match = match || old_challenges_[id][i] == data;
    }
    if (!match) continue;
    paths_[id].validated = true;
    close_validation(id);
    return id;
  }
  return std::nullopt;
}

void PathTable::on_timeout(Instant now, std::span<uint32_t> failed_out, size_t& failed_count) {
  failed_count = 0;
  for (uint32_t id = 0; id < kMaxPaths && failed_count < failed_out.size(); ++id) {
    if (!occupied_[id] || !validating(id) || paths_[id].validation_deadline > now) continue;
    close_validation(id);
    failed_out[failed_count++] = id;
  }
}

Instant PathTable::next_deadline() const {
  Instant deadline = kNever;
  for (uint32_t id = 0; id < kMaxPaths; ++id) {
    if (occupied_[id]) deadline = std::min(deadline, paths_[id].validation_deadline);
  }
  return deadline;
}

void PathTable::remove(uint32_t id) {
  if (id >= kMaxPaths) return;
  for (size_t i = response_count_; i > 0; --i) {
    if (responses_[i - 1].path == id) drop_response(i - 1);
  }
  close_validation(id);
  paths_[id] = PathState{};
  occupied_[id] = false;
}

}  // namespace dpquic::conn
