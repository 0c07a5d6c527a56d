#pragma once
// Windowed extremum filters for BBR's path model (draft-ietf-ccwg-bbr).
//
// WindowedMaxFilter is Kathleen Nichols' algorithm for the running maximum
// of a stream over a sliding window (draft §5.5.5: "UpdateWindowedMaxFilter()
// can be implemented using Kathleen Nichols' algorithm"): it keeps the best,
// second-best and third-best samples of successively later sub-windows, so
// an update is O(1) and the filter is three samples, whatever the window.
// Time is whatever the caller counts in (BBR uses packet-timed rounds).
//
// TwoCycleMaxFilter is the max_bw filter of §2.11 and §5.5.6: the maximum
// over the current and the previous ProbeBW cycle, advanced once a cycle
// ("BBR.cycle_count only needs to be tracked with a single bit").

#include <algorithm>
#include <cstdint>

namespace dpquic::recovery {

template <typename T>
class WindowedMaxFilter {
 public:
  void reset(T value, uint64_t time) { best_[0] = best_[1] = best_[2] = Sample{value, time}; }

  // Adds `value` at `time` (non-decreasing); samples older than `window`
  // leave. Returns the maximum over the window.
  T update(T value, uint64_t time, uint64_t window) {
    const Sample sample{value, time};
    if (value >= best_[0].value || time - best_[2].time > window) {
      reset(value, time);
      return value;
    }
    if (value >= best_[1].value) {
      best_[1] = best_[2] = sample;
    } else if (value >= best_[2].value) {
      best_[2] = sample;
    }
    return expire(sample, window);
  }

  T best() const { return best_[0].value; }

 private:
  struct Sample {
    T value{};
    uint64_t time = 0;
  };

  // The best sample is older than the window: the second and third move
  // up. Otherwise, when a quarter (half) of the window has passed without a
  // second (third) best of its own, the newest sample takes that place, so
  // each keeps covering a later part of the window.
  T expire(const Sample& sample, uint64_t window) {
    const uint64_t age = sample.time - best_[0].time;
    if (age > window) {
      best_[0] = best_[1];
      best_[1] = best_[2];
      best_[2] = sample;
      if (sample.time - best_[0].time > window) {
        best_[0] = best_[1];
        best_[1] = best_[2];
        best_[2] = sample;
      }
    } else if (best_[1].time == best_[0].time && age > window / 4) {
      best_[1] = best_[2] = sample;
    } else if (best_[2].time == best_[1].time && age > window / 2) {
      best_[2] = sample;
    }
    return best_[0].value;
  }

  Sample best_[3];
};

template <typename T>
class TwoCycleMaxFilter {
 public:
  void update(T value) { current_ = std::max(current_, value); }
  // AdvanceMaxBwFilter(): a new cycle begins; the previous one is forgotten.
  void advance() {
    previous_ = current_;
    current_ = T{};
  }
  void reset() { previous_ = current_ = T{}; }
  T best() const { return std::max(previous_, current_); }

 private:
  T current_{};
  T previous_{};
};

}  // namespace dpquic::recovery
