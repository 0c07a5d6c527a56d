#include "quic/conn/range_tree.h"

#include <algorithm>
#include <cstdlib>

namespace dpquic::conn {

RangeTree::RangeTree(size_t max_size, size_t initial_capacity)
    : max_size_(std::min(max_size, kMaxSize)) {
  nodes_.reserve(std::min(initial_capacity, max_size_));
}

RangeTree::Handle RangeTree::first_ending_at_or_after(uint64_t value) const {
  if (front_ == kNone || nodes_[front_].range.end >= value) return front_;
  if (nodes_[back_].range.end < value) return kNone;
  // Disjoint ranges sorted by start are sorted by end too. Both children
  // are read before the comparison picks one: a descent is a chain of
  // dependent loads, and this keeps one load per level on it.
  Handle found = kNone;
  for (Handle handle = root_; handle != kNone;) {
    const Node& node = nodes_[handle];
    const Handle lower = node.child[0];
    const Handle higher = node.child[1];
    const bool below = node.range.end < value;
    found = below ? found : handle;
    handle = below ? higher : lower;
  }
  return found;
}

RangeTree::Handle RangeTree::first_starting_after(uint64_t value) const {
  if (front_ == kNone || nodes_[front_].range.start > value) return front_;
  if (nodes_[back_].range.start <= value) return kNone;
  Handle found = kNone;
  for (Handle handle = root_; handle != kNone;) {
    const Node& node = nodes_[handle];
    const Handle lower = node.child[0];
    const Handle higher = node.child[1];
    const bool below = node.range.start <= value;
    found = below ? found : handle;
    handle = below ? higher : lower;
  }
  return found;
}

RangeTree::Handle RangeTree::next(Handle handle) const {
  if (handle == back_) return kNone;
  if (nodes_[handle].child[1] != kNone) return extreme(nodes_[handle].child[1], 0);
  // Up past every ancestor we are the higher side of.
  while (nodes_[handle].parent != kNone && side_of(handle) == 1) handle = nodes_[handle].parent;
  return nodes_[handle].parent;
}

RangeTree::Handle RangeTree::extreme(Handle subtree, int side) const {
  while (nodes_[subtree].child[side] != kNone) subtree = nodes_[subtree].child[side];
  return subtree;
}

void RangeTree::grow() {
  // Explicit doubling up to max_size(): the growth policy is ours.
  const size_t capacity = std::min(max_size_, std::max<size_t>(4, nodes_.capacity() * 2));
  entries_moved_ += nodes_.size();
  nodes_.reserve(capacity);
}

RangeTree::Handle RangeTree::allocate(Range range) {
  Handle handle = free_;
  if (handle != kNone) {
    free_ = nodes_[handle].child[0];
  } else {
    if (nodes_.size() == nodes_.capacity()) grow();
    handle = static_cast<Handle>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[handle] = Node{range, {kNone, kNone}, kNone, 1};
  return handle;
}

RangeTree::Handle RangeTree::insert(Range range) {
  return insert_before(first_starting_after(range.start), range);
}

RangeTree::Handle RangeTree::insert_before(Handle above, Range range) {
  // Without erased nodes to reuse, nodes_.size() == size_ < max_size_ here,
  // so the storage never grows past max_size().
  if (size_ >= max_size_) return kNone;
  const Handle fresh = allocate(range);
  ++size_;
  // The new node goes right after its predecessor: as the higher child of
  // the highest node (none above), as the lower child of `above` if it has
  // none, else as the higher child of the highest node below `above`.
  Handle parent = back_;
  int side = 1;
  if (above == kNone) {
    back_ = fresh;
  } else if (nodes_[above].child[0] == kNone) {
    parent = above;
    side = 0;
  } else {
    parent = extreme(nodes_[above].child[0], 1);
  }
  if (front_ == kNone || range.start < nodes_[front_].range.start) front_ = fresh;
  attach(parent, side, fresh);
  retrace(parent);
  return fresh;
}

void RangeTree::erase(Handle target) {
  const Node& node = nodes_[target];
  // The lowest node's successor is the lowest of its higher subtree, or
  // else its parent (mirrored for the highest).
  if (target == front_) front_ = node.child[1] != kNone ? extreme(node.child[1], 0) : node.parent;
  if (target == back_) back_ = node.child[0] != kNone ? extreme(node.child[0], 1) : node.parent;
  Handle changed = node.parent;
  if (node.child[0] != kNone && node.child[1] != kNone) {
    changed = replace_by_successor(target);
  } else {
    const int side = node.parent == kNone ? 0 : side_of(target);
    attach(node.parent, side, node.child[node.child[0] == kNone ? 1 : 0]);
  }
  nodes_[target].child[0] = free_;
  free_ = target;
  --size_;
  retrace(changed);
}

RangeTree::Handle RangeTree::replace_by_successor(Handle target) {
  // Every other node keeps its handle: the successor is relinked, not copied.
  const Node& node = nodes_[target];
  const Handle successor = extreme(node.child[1], 0);
  Handle changed = successor;
  if (successor != node.child[1]) {
    changed = nodes_[successor].parent;
    attach(changed, 0, nodes_[successor].child[1]);
    attach(successor, 1, node.child[1]);
  }
  attach(successor, 0, node.child[0]);
  nodes_[successor].height = node.height;
  attach(node.parent, node.parent == kNone ? 0 : side_of(target), successor);
  return changed;
}

void RangeTree::attach(Handle parent, int side, Handle child) {
  if (parent == kNone) {
    root_ = child;
  } else {
    nodes_[parent].child[side] = child;
  }
  if (child != kNone) nodes_[child].parent = parent;
}

void RangeTree::clear() {
  nodes_.clear();
  size_ = 0;
  root_ = kNone;
  front_ = kNone;
  back_ = kNone;
  free_ = kNone;
}

void RangeTree::clear_and_trim(size_t max_retained, size_t initial_capacity) {
  clear();
  if (nodes_.capacity() <= max_retained) return;
  std::vector<Node> fresh;
  fresh.reserve(std::min(initial_capacity, max_size_));
  nodes_.swap(fresh);
}

void RangeTree::set_max_size(size_t max_size) { max_size_ = std::min(max_size, kMaxSize); }

void RangeTree::update_height(Handle handle) {
  Node& node = nodes_[handle];
  node.height =
      static_cast<uint8_t>(1 + std::max(height_of(node.child[0]), height_of(node.child[1])));
}

RangeTree::Handle RangeTree::rotate_up(Handle handle, int side) {
  const Handle up = nodes_[handle].child[side];
  const Handle parent = nodes_[handle].parent;
  const int parent_side = parent == kNone ? 0 : side_of(handle);
  attach(handle, side, nodes_[up].child[1 - side]);
  attach(up, 1 - side, handle);
  attach(parent, parent_side, up);
  update_height(handle);
  update_height(up);
  return up;
}

RangeTree::Handle RangeTree::rebalance(Handle handle) {
  update_height(handle);
  const Node& node = nodes_[handle];
  const int balance = height_of(node.child[0]) - height_of(node.child[1]);
  if (balance >= -1 && balance <= 1) return handle;
  const int heavy = balance > 1 ? 0 : 1;
  const Node& child = nodes_[node.child[heavy]];
  // A child leaning the other way is turned first (a double rotation).
  if (height_of(child.child[heavy]) < height_of(child.child[1 - heavy]))
    rotate_up(node.child[heavy], 1 - heavy);
  return rotate_up(handle, heavy);
}

void RangeTree::retrace(Handle handle) {
  while (handle != kNone) {
    const int old_height = nodes_[handle].height;
    const Handle top = rebalance(handle);
    if (nodes_[top].height == old_height) return;
    handle = nodes_[top].parent;
  }
}

int RangeTree::check(Handle subtree, const Range*& previous, size_t& count) const {
  if (subtree == kNone) return 0;
  const Node& node = nodes_[subtree];
  for (const Handle child : node.child)
    if (child != kNone && nodes_[child].parent != subtree) return -1;
  const int lower = check(node.child[0], previous, count);
  if (lower < 0) return -1;
  if (node.range.start >= node.range.end) return -1;
  if (previous != nullptr && previous->end >= node.range.start) return -1;
  if (previous == nullptr && subtree != front_) return -1;
  previous = &node.range;
  ++count;
  const int higher = check(node.child[1], previous, count);
  if (higher < 0 || std::abs(lower - higher) > 1) return -1;
  const int height = 1 + std::max(lower, higher);
  return height == node.height ? height : -1;
}

bool RangeTree::valid() const {
  const Range* previous = nullptr;
  size_t count = 0;
  if (root_ != kNone && nodes_[root_].parent != kNone) return false;
  if (check(root_, previous, count) < 0 || count != size_ || size_ > max_size_) return false;
  // The last range walked is the highest one.
  return size_ == 0 ? front_ == kNone && back_ == kNone : previous == &nodes_[back_].range;
}

}  // namespace dpquic::conn
