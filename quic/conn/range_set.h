#pragma once
// A set of disjoint, non-adjacent half-open ranges [begin, end) of uint64
// offsets, kept sorted: acknowledged and lost bytes of a send stream.
//
// The storage is reserved up front and grows by doubling only when a range
// must be added to a full set; it never shrinks, so a set that has reached its
// working size never allocates again (the per-packet rule).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dpquic::conn {

class RangeSet {
 public:
  struct Range {
    uint64_t begin;
    uint64_t end;
  };

  explicit RangeSet(size_t reserve = 8);

  // Adds [begin, end), merging it with every range it overlaps or touches.
  // An empty range (begin >= end) changes nothing.
  void insert(uint64_t begin, uint64_t end);
  // Removes [begin, end); a range strictly containing it is split in two.
  void remove(uint64_t begin, uint64_t end);
  bool contains(uint64_t value) const;

  bool empty() const { return ranges_.empty(); }
  // Number of ranges (not of values).
  size_t size() const { return ranges_.size(); }
  // The lowest range; the set must not be empty.
  const Range& front() const { return ranges_.front(); }
  void pop_front() { pop_front(1); }
  // Removes the `count` lowest ranges (at most size()) in one move.
  void pop_front(size_t count);
  std::span<const Range> ranges() const { return ranges_; }
  // Forgets every range, keeping the storage.
  void clear() { ranges_.clear(); }
  // Forgets every range for reuse by a new owner (a recycled stream): keeps
  // the storage unless it grew beyond `max_retained` ranges, in which case it
  // goes back to the constructor's reservation (one allocation), so a set
  // that once held many ranges does not keep them for the rest of its life.
  void clear_and_trim(size_t max_retained);
  // Sum of the ranges' lengths.
  uint64_t total_length() const;
  // Ranges the storage holds before it must grow.
  size_t capacity() const { return ranges_.capacity(); }

 private:
  // Makes room for one more range, doubling the storage if it is full.
  void reserve_one_more();

  std::vector<Range> ranges_;
  size_t initial_reserve_;
};

}  // namespace dpquic::conn
