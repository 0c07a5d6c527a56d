#include "tools/testbed/event_loop.h"

#include <algorithm>

namespace dpquic::harness {

void EventLoop::set_stall_limits(uint64_t timeout_repeats, uint64_t rounds_per_instant) {
  max_timeout_repeats_ = timeout_repeats;
  max_rounds_per_instant_ = rounds_per_instant;
}

void EventLoop::check_timeout_stall(Member& member) {
  const Instant timeout = member.node->poll_timeout();
  if (timeout > now_ || member.active) {
    member.stuck_timeouts = 0;
    return;
  }
  if (++member.stuck_timeouts > max_timeout_repeats_) {
    throw SimulationStalled("simulator: the " + member.name + " node still reports timeout " +
                            std::to_string(timeout) + " <= now " + std::to_string(now_) +
                            " after " + std::to_string(member.stuck_timeouts) +
                            " consecutive handle_timeout calls without sending or receiving");
  }
}

bool EventLoop::run_round(const std::function<bool()>& done) {
  for (Member* member : members_) member->active = false;
  while (deliver_one()) {
    if (done()) return true;
  }
  fired_.assign(members_.size(), false);
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i]->node->poll_timeout() > now_) continue;
    members_[i]->node->handle_timeout(now_);
    fired_[i] = true;
    if (done()) return true;
  }
  for (Member* member : members_) {
    member->node->poll_transmit(now_, *member->sink);
    if (done()) return true;
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    if (fired_[i]) check_timeout_stall(*members_[i]);
  }
  return false;
}

Instant EventLoop::next_event() const {
  Instant next = next_delivery();
  for (const Member* member : members_) next = std::min(next, member->node->poll_timeout());
  return next;
}

bool EventLoop::run_until(const std::function<bool()>& done, Instant deadline) {
  if (done()) return true;
  uint64_t rounds_at_this_instant = 0;
  for (;;) {
    if (run_round(done)) return true;
    const Instant next = next_event();
    if (next > now_) {
      if (next == kNever || next > deadline) {
        // Nothing more happens before the deadline.
        if (deadline != kNever && deadline > now_) now_ = deadline;
        return false;
      }
      now_ = next;
      rounds_at_this_instant = 0;
      for (Member* member : members_) member->stuck_timeouts = 0;
      continue;
    }
    if (++rounds_at_this_instant > max_rounds_per_instant_) {
      throw SimulationStalled("simulator: virtual time stuck at " + std::to_string(now_) + " for " +
                              std::to_string(rounds_at_this_instant) +
                              " rounds (zero-delay traffic that never ends?)");
    }
  }
}

}  // namespace dpquic::harness
