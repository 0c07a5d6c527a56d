#include "quic/conn/range_set.h"

#include <algorithm>

namespace dpquic::conn {

RangeSet::RangeSet(size_t reserve) : initial_reserve_(std::max<size_t>(reserve, 1)) {
  ranges_.reserve(initial_reserve_);
}

void RangeSet::clear_and_trim(size_t max_retained) {
  ranges_.clear();
  if (ranges_.capacity() <= std::max(max_retained, initial_reserve_)) return;
  std::vector<Range> fresh;
  fresh.reserve(initial_reserve_);
  ranges_.swap(fresh);
}

void RangeSet::reserve_one_more() {
  // Explicit doubling: the growth policy is ours, not the library's.
  if (ranges_.size() == ranges_.capacity()) ranges_.reserve(ranges_.capacity() * 2);
}

void RangeSet::insert(uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  // First range that ends at or after `begin`: the first one that can
  // overlap or touch the new range.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                [](const Range& r, uint64_t value) { return r.end < value; });
  // One past the last range that starts at or before `end`.
  auto last = std::upper_bound(first, ranges_.end(), end,
                               [](uint64_t value, const Range& r) { return value < r.begin; });
  if (first == last) {
    // Disjoint from everything: a new range at `first`.
    const size_t index = static_cast<size_t>(first - ranges_.begin());
    reserve_one_more();
    ranges_.insert(ranges_.begin() + static_cast<std::ptrdiff_t>(index), Range{begin, end});
    return;
  }
  // Merge [first, last) and the new range into *first.
  first->begin = std::min(first->begin, begin);
  first->end = std::max((last - 1)->end, end);
  ranges_.erase(first + 1, last);
}

void RangeSet::remove(uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  // First range that ends after `begin` (ranges ending at `begin` are untouched).
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), begin,
                             [](uint64_t value, const Range& r) { return value < r.end; });
  if (it == ranges_.end() || it->begin >= end) return;
  if (it->begin < begin && it->end > end) {
    // Strictly inside one range: split it.
    const size_t index = static_cast<size_t>(it - ranges_.begin());
    const Range upper{end, it->end};
    reserve_one_more();
    ranges_[index].end = begin;
    ranges_.insert(ranges_.begin() + static_cast<std::ptrdiff_t>(index) + 1, upper);
    return;
  }
  if (it->begin < begin) {
    it->end = begin;  // keeps its lower part
    ++it;
  }
  auto erase_from = it;
  while (it != ranges_.end() && it->end <= end) ++it;
  if (it != ranges_.end() && it->begin < end) it->begin = end;  // keeps its upper part
  ranges_.erase(erase_from, it);
}

bool RangeSet::contains(uint64_t value) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), value,
                             [](uint64_t v, const Range& r) { return v < r.end; });
  return it != ranges_.end() && it->begin <= value;
}

void RangeSet::pop_front(size_t count) {
  ranges_.erase(ranges_.begin(),
                ranges_.begin() + static_cast<std::ptrdiff_t>(std::min(count, ranges_.size())));
}

uint64_t RangeSet::total_length() const {
  uint64_t total = 0;
  for (const Range& r : ranges_) total += r.end - r.begin;
  return total;
}

}  // namespace dpquic::conn
