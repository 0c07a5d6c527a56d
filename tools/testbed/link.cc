#include "tools/testbed/link.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace dpquic::harness {
namespace {

// Slots start with room for any datagram on a 1500-byte-MTU path, so only a
// larger datagram (a jumbo path) ever grows one.
constexpr size_t kDefaultSlotCapacity = 2048;
constexpr size_t kInitialSlots = 256;

// Orders the schedule heap so the front is the earliest (at, sequence).
bool later(const auto& a, const auto& b) {
  return a.at != b.at ? a.at > b.at : a.sequence > b.sequence;
}

bool ecn_capable(transmit::EcnCodepoint ecn) {
  return ecn == transmit::EcnCodepoint::kEct0 || ecn == transmit::EcnCodepoint::kEct1;
}

}  // namespace

Link::Link(const LinkConfig& config) : config_(config), impairment_(config) {
  slots_.reserve(kInitialSlots);
  free_slots_.reserve(kInitialSlots);
  schedule_.reserve(kInitialSlots);
  queue_.resize(kInitialSlots);
  for (size_t i = 0; i < kInitialSlots; ++i) {
    Slot& slot = slots_.emplace_back();
    slot.data = std::make_unique<uint8_t[]>(kDefaultSlotCapacity);
    slot.capacity = kDefaultSlotCapacity;
  }
  for (size_t i = kInitialSlots; i > 0; --i) free_slots_.push_back(static_cast<uint32_t>(i - 1));
}

void Link::reconfigure(const LinkConfig& config) {
  config_ = config;
  impairment_ = Impairment(config, impairment_.index());
}

Duration Link::serialization_time(size_t size) const {
  const unsigned __int128 bits_ns = static_cast<unsigned __int128>(size) * 8 * kSecond;
  return static_cast<Duration>((bits_ns + config_.bandwidth_bps - 1) / config_.bandwidth_bps);
}

void Link::drain_bottleneck(Instant now) {
  const size_t mask = queue_.size() - 1;
  while (queue_count_ > 0 && queue_[queue_head_].done <= now) {
    queue_bytes_ -= queue_[queue_head_].size;
    queue_head_ = (queue_head_ + 1) & mask;
    --queue_count_;
  }
}

size_t Link::queued_bytes(Instant now) {
  drain_bottleneck(now);
  return queue_bytes_;
}

uint32_t Link::acquire_slot(size_t size) {
  if (free_slots_.empty()) {
    // More datagrams in flight than ever before: double the slots.
    const size_t old_count = slots_.size();
    const size_t new_count = old_count * 2;
    slots_.reserve(new_count);
    free_slots_.reserve(new_count);
    for (size_t i = old_count; i < new_count; ++i) {
      Slot& slot = slots_.emplace_back();
      slot.data = std::make_unique<uint8_t[]>(kDefaultSlotCapacity);
      slot.capacity = kDefaultSlotCapacity;
    }
    for (size_t i = new_count; i > old_count; --i) {
      free_slots_.push_back(static_cast<uint32_t>(i - 1));
    }
  }
  const uint32_t index = free_slots_.back();
  free_slots_.pop_back();
  Slot& slot = slots_[index];
  if (slot.capacity < size) {
    slot.data = std::make_unique<uint8_t[]>(size);
    slot.capacity = size;
  }
  slot.length = size;
  return index;
}

void Link::release_slot(uint32_t slot) { free_slots_.push_back(slot); }

void Link::schedule(Instant at, uint32_t slot) {
  schedule_.push_back(Scheduled{at, next_sequence_++, slot});
  std::push_heap(schedule_.begin(), schedule_.end(),
                 [](const Scheduled& a, const Scheduled& b) { return later(a, b); });
}

void Link::grow_queue() {
  // Unwrap the ring into a buffer twice the size.
  std::vector<Serializing> grown(queue_.size() * 2);
  for (size_t i = 0; i < queue_count_; ++i) {
    grown[i] = queue_[(queue_head_ + i) & (queue_.size() - 1)];
  }
  queue_ = std::move(grown);
  queue_head_ = 0;
}

bool Link::enter_bottleneck(Instant now, size_t size, Instant& departs) {
  drain_bottleneck(now);
  if (config_.queue_bytes > 0 && queue_bytes_ + size > config_.queue_bytes) {
    ++stats_.dropped_queue;
    return false;
  }
  busy_until_ = std::max(now, busy_until_) + serialization_time(size);
  departs = busy_until_;
  if (queue_count_ == queue_.size()) grow_queue();
  queue_[(queue_head_ + queue_count_) & (queue_.size() - 1)] = Serializing{departs, size};
  ++queue_count_;
  queue_bytes_ += size;
  return true;
}

void Link::schedule_copy(Instant at, uint32_t original_slot, size_t size) {
  // acquire_slot may grow slots_, so re-find the original afterwards.
  const uint32_t copy = acquire_slot(size);
  const Slot& original = slots_[original_slot];
  Slot& duplicate = slots_[copy];
  if (size > 0) std::memcpy(duplicate.data.get(), original.data.get(), size);
  duplicate.path = original.path;
  duplicate.ecn = original.ecn;
  schedule(at, copy);
  ++stats_.duplicated;
}

bool Link::send(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                std::span<const uint8_t> bytes) {
  const size_t size = bytes.size();
  ++stats_.sent;
  stats_.bytes_sent += size;
  if (config_.mtu != 0 && size > config_.mtu) {
    ++stats_.dropped_mtu;
    return false;
  }
  const ImpairmentVerdict verdict = impairment_.next(size);
  if (verdict.drop != DropReason::kNone) {
    ++stats_.dropped_loss;
    return false;
  }

  Instant departs = now;
  if (config_.bandwidth_bps > 0 && !enter_bottleneck(now, size, departs)) return false;
  Instant arrives = departs + config_.one_way_delay;

  if (config_.bleach_ecn) {
    ecn = transmit::EcnCodepoint::kNotEct;
  } else if (verdict.ce_mark && ecn_capable(ecn)) {
    ecn = transmit::EcnCodepoint::kCe;
    ++stats_.ce_marked;
  }

  const uint32_t index = acquire_slot(size);
  {
    Slot& slot = slots_[index];
    if (size > 0) std::memcpy(slot.data.get(), bytes.data(), size);
    slot.path = path;
    slot.ecn = ecn;
    if (verdict.corrupt) {
      slot.data[verdict.corrupt_bit / 8] ^= static_cast<uint8_t>(1u << (verdict.corrupt_bit % 8));
      ++stats_.corrupted;
    }
  }
  if (verdict.reorder) {
    arrives += config_.reorder_extra_delay;
    ++stats_.reordered;
  }
  schedule(arrives, index);

  if (verdict.duplicate) schedule_copy(arrives, index, size);
  return true;
}

bool Link::take_due(Instant now, Delivery& out) {
  if (taken_slot_ != kNoSlot) {
    release_slot(taken_slot_);
    taken_slot_ = kNoSlot;
  }
  if (schedule_.empty() || schedule_.front().at > now) return false;
  std::pop_heap(schedule_.begin(), schedule_.end(),
                [](const Scheduled& a, const Scheduled& b) { return later(a, b); });
  const Scheduled entry = schedule_.back();
  schedule_.pop_back();
  Slot& slot = slots_[entry.slot];
  out.path = slot.path;
  out.ecn = slot.ecn;
  out.bytes = std::span<uint8_t>(slot.data.get(), slot.length);
  out.at = entry.at;
  taken_slot_ = entry.slot;
  ++stats_.delivered;
  stats_.bytes_delivered += slot.length;
  return true;
}

void Link::mark_taken_unroutable() {
  if (taken_slot_ == kNoSlot) return;
  --stats_.delivered;
  stats_.bytes_delivered -= slots_[taken_slot_].length;
  ++stats_.dropped_unroutable;
}

}  // namespace dpquic::harness
