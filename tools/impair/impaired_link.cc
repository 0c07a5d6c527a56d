#include "tools/impair/impaired_link.h"

#include <algorithm>
#include <cstring>

namespace dpquic::impair {
namespace {

constexpr uint64_t kNanosPerSecond = 1'000'000'000ull;

// Heap order: the earliest release first, then the earliest submitted.
bool later(const auto& a, const auto& b) {
  return a.release != b.release ? a.release > b.release : a.sequence > b.sequence;
}

}  // namespace

TokenBucket::TokenBucket(uint64_t rate_bits_per_second, uint64_t burst_bytes, uint64_t queue_bytes)
    : rate_(rate_bits_per_second),
      capacity_(burst_bytes * 8 * kNanosPerSecond),
      max_queue_delay_(static_cast<Duration>(static_cast<unsigned __int128>(queue_bytes) * 8 *
                                             kNanosPerSecond / rate_bits_per_second)),
      tokens_at_free_(capacity_) {}

uint64_t TokenBucket::refill(uint64_t tokens, Duration elapsed) const {
  const uint64_t missing = capacity_ > tokens ? capacity_ - tokens : 0;
  if (elapsed >= missing / rate_ + 1) return std::max(tokens, capacity_);
  return tokens + elapsed * rate_;
}

std::optional<Instant> TokenBucket::admit(Instant now, size_t bytes) {
  const Instant start = std::max(now, free_at_);
  // Data queued ahead of this datagram needs start - now to drain.
  if (start - now > max_queue_delay_) return std::nullopt;
  uint64_t tokens = refill(tokens_at_free_, start - free_at_);
  const uint64_t need = static_cast<uint64_t>(bytes) * 8 * kNanosPerSecond;
  Instant depart = start;
  if (tokens >= need) {
    tokens -= need;
  } else {
    const Duration wait = (need - tokens + rate_ - 1) / rate_;
    depart = start + wait;
    tokens = tokens + wait * rate_ - need;
  }
  free_at_ = depart;
  tokens_at_free_ = tokens;
  return depart;
}

bool BlackholeSchedule::dropping(Instant now) const {
  if (off_ == 0 || now < start_) return false;
  return (now - start_) % (on_ + off_) >= on_;
}

ImpairedLink::ImpairedLink(const LinkConfig& config, uint64_t seed, Instant start)
    : config_(config),
      rng_(seed),
      burst_(config.burst_enter, config.burst_exit, config.burst_loss_in_bad),
      blackhole_(config.blackhole_on, config.blackhole_off, start) {
  if (config_.rate_bits_per_second > 0) {
    uint64_t queue = config_.queue_bytes;
    if (queue == 0) queue = std::max<uint64_t>(16 * 1024, config_.rate_bits_per_second / 80);
    bucket_.emplace(config_.rate_bits_per_second, config_.rate_burst_bytes, queue);
  }
  if (config_.max_packets == 0) config_.max_packets = 1;
  slots_.reserve(config_.max_packets);
  free_slots_.reserve(config_.max_packets);
  heap_.reserve(config_.max_packets);
  held_.reserve(config_.max_packets);
  ready_.reserve(config_.max_packets);
}

std::optional<uint32_t> ImpairedLink::acquire(std::span<const uint8_t> bytes, uint32_t flow) {
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else if (slots_.size() < config_.max_packets) {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    return std::nullopt;
  }
  Slot& slot = slots_[index];
  // Grows only past the largest datagram this slot ever held.
  if (slot.bytes.size() < bytes.size()) slot.bytes.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(slot.bytes.data(), bytes.data(), bytes.size());
  slot.length = bytes.size();
  slot.flow = flow;
  slot.hold = false;
  return index;
}

void ImpairedLink::release_slot(uint32_t slot) { free_slots_.push_back(slot); }

void ImpairedLink::corrupt(Slot& slot) {
  if (slot.length == 0) return;
  // One to three bits anywhere in the UDP payload.
  const uint64_t flips = 1 + rng_.below(3);
  for (uint64_t i = 0; i < flips; ++i) {
    const uint64_t bit = rng_.below(slot.length * 8);
    slot.bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

void ImpairedLink::submit(Instant now, std::span<const uint8_t> bytes, uint32_t flow) {
  ++counters_.received;
  if (blackhole_.dropping(now)) {
    ++counters_.dropped_blackhole;
    return;
  }
  if (rng_.chance(config_.loss)) {
    ++counters_.dropped_loss;
    return;
  }
  if (config_.burst_enter > 0 && burst_.lose(rng_)) {
    ++counters_.dropped_burst;
    return;
  }
  const int copies = rng_.chance(config_.duplicate) ? 2 : 1;
  if (copies == 2) ++counters_.duplicated;
  for (int copy = 0; copy < copies; ++copy) {
    const std::optional<uint32_t> slot = acquire(bytes, flow);
    if (!slot) {
      ++counters_.dropped_overflow;
      continue;
    }
    if (rng_.chance(config_.corrupt)) {
      corrupt(slots_[*slot]);
      ++counters_.corrupted;
    }
    schedule(now, *slot);
  }
}

void ImpairedLink::schedule(Instant now, uint32_t index) {
  Slot& slot = slots_[index];
  Instant release = now;
  if (bucket_) {
    const std::optional<Instant> depart = bucket_->admit(now, slot.length);
    if (!depart) {
      ++counters_.dropped_queue;
      release_slot(index);
      return;
    }
    if (*depart > now) ++counters_.rate_queued;
    release = *depart;
  }
  const Duration extra = config_.delay + (config_.jitter ? rng_.below(config_.jitter + 1) : 0);
  if (extra > 0) {
    ++counters_.delayed;
    release += extra;
  }
  if (rng_.chance(config_.reorder)) {
    ++counters_.held;
    if (config_.reorder_delay > 0) {
      release += config_.reorder_delay;
    } else {
      slot.hold = true;
    }
  }
  slot.sequence = next_sequence_++;
  heap_.push_back(Scheduled{release, slot.sequence, index});
  std::push_heap(heap_.begin(), heap_.end(),
                 [](const Scheduled& a, const Scheduled& b) { return later(a, b); });
}

ImpairedLink::Due ImpairedLink::emit(uint32_t index) {
  const Slot& slot = slots_[index];
  ++counters_.forwarded;
  if (highest_emitted_ && slot.sequence < *highest_emitted_) {
    ++counters_.reordered;
  } else {
    highest_emitted_ = slot.sequence;
  }
  returned_ = index;
  return Due{std::span<const uint8_t>(slot.bytes.data(), slot.length), slot.flow};
}

std::optional<ImpairedLink::Due> ImpairedLink::next_due(Instant now) {
  if (returned_) {
    release_slot(*returned_);
    returned_.reset();
  }
  if (ready_head_ < ready_.size()) return emit(ready_[ready_head_++]);
  ready_.clear();
  ready_head_ = 0;
  // Held datagrams whose wait ran out go first, oldest first.
  for (size_t i = 0; i < held_.size();) {
    if (held_[i].deadline <= now) {
      ready_.push_back(held_[i].slot);
      held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (!ready_.empty()) return emit(ready_[ready_head_++]);
  while (!heap_.empty() && heap_.front().release <= now) {
    std::pop_heap(heap_.begin(), heap_.end(),
                  [](const Scheduled& a, const Scheduled& b) { return later(a, b); });
    const uint32_t index = heap_.back().slot;
    heap_.pop_back();
    Slot& slot = slots_[index];
    if (slot.hold) {
      slot.hold = false;
      held_.push_back(Held{index, std::max<uint32_t>(config_.reorder_packets, 1),
                           now + config_.reorder_hold_limit});
      continue;
    }
    // This datagram overtakes every held one; those whose count is reached
    // follow right after it.
    for (size_t i = 0; i < held_.size();) {
      if (--held_[i].remaining == 0) {
        ready_.push_back(held_[i].slot);
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    return emit(index);
  }
  return std::nullopt;
}

Instant ImpairedLink::next_event() const {
  Instant next = kNever;
  if (ready_head_ < ready_.size()) return 0;
  if (!heap_.empty()) next = heap_.front().release;
  for (const Held& held : held_) next = std::min(next, held.deadline);
  return next;
}

}  // namespace dpquic::impair
