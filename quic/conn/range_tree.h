#pragma once
// A set of disjoint, non-adjacent half-open ranges [start, end) of uint64
// offsets in an AVL tree: the ranges a reassembly buffer holds beyond its
// contiguous prefix.
//
// Why a tree: a peer chooses where its frames land. In a sorted array it can
// make every frame insert or erase near the front and so shift the whole
// array: O(size) per frame, 64 KiB of moves for 4096 ranges. Here a lookup
// costs O(log size) node visits, and a stored range never moves: nodes live
// in one array, linked by index (children and parent), and keep their index
// (their Handle) until erased. The lowest and highest ranges are kept, so
// work at either end (a peer filling holes from the prefix, or sending
// ahead) needs no search: only the rebalancing walk up from the change,
// which stops as soon as a subtree's height is unchanged.
//
// Invariants (valid() checks them): an in-order walk gives non-empty ranges
// with each one's end strictly below the next one's start; a node's height
// is one more than its taller child's, and its children's heights differ by
// at most one, so the height is at most 1.44 log2(size + 2).
//
// Allocation: node storage grows by doubling, up to max_size() nodes, only
// when a new maximum size is reached; erased nodes are reused through a free
// list. clear() keeps the storage; clear_and_trim() gives it back beyond a
// bound. Once warm, nothing allocates. Growing copies the nodes:
// entries_moved() counts every node copied, the only moves there are.
//
// Each node takes 24 bytes (16-bit links), so max_size() is at most 65535.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpquic::conn {

class RangeTree {
 public:
  struct Range {
    uint64_t start;
    uint64_t end;
  };
  // A stored range: valid until that range is erased or the tree cleared.
  using Handle = uint16_t;
  static constexpr Handle kNone = UINT16_MAX;
  static constexpr size_t kMaxSize = kNone;

  // `max_size` is clamped to kMaxSize; storage for `initial_capacity`
  // ranges (at most max_size) is reserved now.
  RangeTree(size_t max_size, size_t initial_capacity);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t max_size() const { return max_size_; }
  const Range& at(Handle handle) const { return nodes_[handle].range; }

  // The lowest and the highest range, or kNone (kept, not searched).
  Handle front() const { return front_; }
  Handle back() const { return back_; }
  // The lowest range with end >= value (one that overlaps or touches
  // [value, ...)), or kNone. O(1) when that is the lowest range or none.
  Handle first_ending_at_or_after(uint64_t value) const;
  // The lowest range with start > value, or kNone.
  Handle first_starting_after(uint64_t value) const;
  // The range after the one at `handle`, or kNone.
  Handle next(Handle handle) const;

  // Adds `range`: non-empty, disjoint from and not adjacent to every range
  // held. Returns kNone, storing nothing, when size() == max_size(). O(1)
  // search below the lowest or above the highest range, else O(log size).
  Handle insert(Range range);
  // The same when the caller knows `above`, the lowest range above `range`
  // (kNone: none is): no search from the root.
  Handle insert_before(Handle above, Range range);
  void erase(Handle handle);
  // Replaces the range at `handle` by one that keeps the invariants (it may
  // grow into the room left by ranges erased beside it).
  void replace(Handle handle, Range range) { nodes_[handle].range = range; }

  // Forgets every range, keeping the storage.
  void clear();
  // The same, and back to `initial_capacity` nodes of storage (one
  // allocation) when more than `max_retained` are held.
  void clear_and_trim(size_t max_retained, size_t initial_capacity);
  // Only on an empty tree.
  void set_max_size(size_t max_size);

  // Nodes the storage holds before it must grow.
  size_t capacity() const { return nodes_.capacity(); }
  // Nodes copied so far (storage growth); never reset.
  uint64_t entries_moved() const { return entries_moved_; }
  int height() const { return height_of(root_); }
  // Checks every invariant above (for tests: it walks the whole tree).
  bool valid() const;

  // Calls visit(const Range&) for every range, lowest first.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    Path stack{};
    size_t depth = 0;
    Handle handle = root_;
    while (handle != kNone || depth > 0) {
      for (; handle != kNone; handle = nodes_[handle].child[0]) stack[depth++] = handle;
      handle = stack[--depth];
      visit(nodes_[handle].range);
      handle = nodes_[handle].child[1];
    }
  }

 private:
  // 1.44 log2(65537) < 24: room to spare for the walk's stack.
  static constexpr size_t kMaxHeight = 32;
  using Path = std::array<Handle, kMaxHeight>;

  struct Node {
    Range range;
    std::array<Handle, 2> child;  // lower, higher
    Handle parent;
    uint8_t height;  // 1 for a leaf
  };

  int height_of(Handle handle) const { return handle == kNone ? 0 : nodes_[handle].height; }
  // Which child of its parent `handle` is (it has a parent).
  int side_of(Handle handle) const {
    return nodes_[nodes_[handle].parent].child[1] == handle ? 1 : 0;
  }
  // The lowest (side 0) or highest (side 1) node of a non-empty subtree.
  Handle extreme(Handle subtree, int side) const;
  Handle allocate(Range range);
  void grow();
  // Makes `child` (may be kNone) the `side` child of `parent`, or the root
  // when `parent` is kNone.
  void attach(Handle parent, int side, Handle child);
  void update_height(Handle handle);
  // Lifts the child on `side` (0 lower, 1 higher) into `handle`'s place;
  // returns it.
  Handle rotate_up(Handle handle, int side);
  // Restores the balance at `handle` after one child's height changed by
  // one; returns the subtree's new root.
  Handle rebalance(Handle handle);
  // Rebalances from `handle` up to the root, stopping where a subtree's
  // height is unchanged (nothing above it can change then).
  void retrace(Handle handle);
  // Unlinks `target`, which has two children: its successor takes its
  // place. Returns the lowest node whose subtree changed.
  Handle replace_by_successor(Handle target);
  // valid()'s walk: the subtree's height, or -1 when an invariant fails.
  int check(Handle subtree, const Range*& previous, size_t& count) const;

  std::vector<Node> nodes_;
  size_t max_size_;
  size_t size_ = 0;
  Handle root_ = kNone;
  Handle front_ = kNone;
  Handle back_ = kNone;
  Handle free_ = kNone;  // erased nodes, linked through child[0]
  uint64_t entries_moved_ = 0;
};

}  // namespace dpquic::conn
