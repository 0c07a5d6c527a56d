#include "quic/conn/stream_scheduler.h"

#include <algorithm>

namespace dpquic::conn {

void StreamScheduler::reserve(size_t slots) {
  if (nodes_.size() < slots) nodes_.resize(slots);
}

void StreamScheduler::assign(uint32_t slot, uint64_t stream_id) {
  Node& node = nodes_[slot];
  node.stream_id = stream_id;
  node.priority = StreamPriority{};
}

void StreamScheduler::set_priority(uint32_t slot, const StreamPriority& priority) {
  Node& node = nodes_[slot];
  StreamPriority wanted = priority;
  wanted.urgency = std::min(wanted.urgency, StreamPriority::kLowestUrgency);
  if (node.priority == wanted) return;
  const bool was_queued = node.queued;
  if (was_queued) unlink(slot);
  node.priority = wanted;
  if (was_queued) link(slot);
}

void StreamScheduler::push(uint32_t slot) {
  if (nodes_[slot].queued) return;
  link(slot);
}

uint32_t StreamScheduler::front() const {
  const Level& level = levels_[static_cast<size_t>(__builtin_ctz(non_empty_))];
  return level.ordered != kNone ? level.ordered : level.rotating;
}

void StreamScheduler::pop() { unlink(front()); }

void StreamScheduler::clear() {
  for (Node& node : nodes_) {
    node.queued = false;
    node.next = kNone;
  }
  levels_.fill(Level{});
  non_empty_ = 0;
  count_ = 0;
}

size_t StreamScheduler::level_of(const StreamPriority& priority) {
  return priority.critical ? 0 : 1 + static_cast<size_t>(priority.urgency);
}

void StreamScheduler::link(uint32_t slot) {
  Node& node = nodes_[slot];
  const size_t index = level_of(node.priority);
  Level& level = levels_[index];
  node.queued = true;
  node.next = kNone;
  ++count_;
  if (!node.priority.incremental && !node.priority.critical) {
    // Sorted insertion: few non-incremental streams share a level.
    uint32_t* place = &level.ordered;
    while (*place != kNone && nodes_[*place].stream_id < node.stream_id) {
      place = &nodes_[*place].next;
    }
    node.next = *place;
    *place = slot;
  } else if (level.rotating == kNone) {
    level.rotating = level.rotating_tail = slot;
  } else {
    nodes_[level.rotating_tail].next = slot;
    level.rotating_tail = slot;
  }
  update_mask(index);
}

void StreamScheduler::unlink(uint32_t slot) {
  Node& node = nodes_[slot];
  const size_t index = level_of(node.priority);
  Level& level = levels_[index];
  const bool ordered = !node.priority.incremental && !node.priority.critical;
  uint32_t* place = ordered ? &level.ordered : &level.rotating;
  uint32_t previous = kNone;
  while (*place != slot) {
    previous = *place;
    place = &nodes_[*place].next;
  }
  *place = node.next;
  if (!ordered && level.rotating_tail == slot) level.rotating_tail = previous;
  node.next = kNone;
  node.queued = false;
  --count_;
  update_mask(index);
}

void StreamScheduler::update_mask(size_t index) {
  const Level& level = levels_[index];
  const auto bit = static_cast<uint16_t>(1u << index);
  if (level.ordered != kNone || level.rotating != kNone) {
    non_empty_ |= bit;
  } else {
    non_empty_ &= static_cast<uint16_t>(~bit);
  }
}

}  // namespace dpquic::conn
