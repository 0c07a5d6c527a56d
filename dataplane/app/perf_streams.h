#pragma once
// Bookkeeping shared by the perf server and client: per-stream records in a
// pool (a free list; storage grows in blocks during warm-up only), an
// intrusive list to queue them without allocating, and a (connection,
// stream) -> record hash map.
//
// Everything grows only when more records are live at once than ever before
// (bounded by stream limits times connections), never per stream in steady
// state.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

// The links of one list a record can be on (each list has its own member).
template <typename T>
struct ListLinks {
  T* prev = nullptr;
  T* next = nullptr;
  bool linked = false;
};

// A doubly-linked FIFO of records through their `Links` member.
template <typename T, ListLinks<T> T::*Links>
class IntrusiveList {
 public:
  bool empty() const { return head_ == nullptr; }
  T* front() const { return head_; }
  static T* next(const T* item) { return (item->*Links).next; }
  static bool contains(const T* item) { return (item->*Links).linked; }

  void push_back(T* item) {
    ListLinks<T>& links = item->*Links;
    if (links.linked) return;
    links.prev = tail_;
    links.next = nullptr;
    links.linked = true;
    if (tail_ != nullptr) {
      (tail_->*Links).next = item;
    } else {
      head_ = item;
    }
    tail_ = item;
  }
  void push_front(T* item) {
    ListLinks<T>& links = item->*Links;
    if (links.linked) return;
    links.prev = nullptr;
    links.next = head_;
    links.linked = true;
    if (head_ != nullptr) {
      (head_->*Links).prev = item;
    } else {
      tail_ = item;
    }
    head_ = item;
  }
  void remove(T* item) {
    ListLinks<T>& links = item->*Links;
    if (!links.linked) return;
    if (links.prev != nullptr) {
      (links.prev->*Links).next = links.next;
    } else {
      head_ = links.next;
    }
    if (links.next != nullptr) {
      (links.next->*Links).prev = links.prev;
    } else {
      tail_ = links.prev;
    }
    links = ListLinks<T>{};
  }
  // Moves every item of `other` to the end of this list.
  void splice_back(IntrusiveList& other) {
    while (T* item = other.front()) {
      other.remove(item);
      push_back(item);
    }
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
};

// Records of type T (default-constructible, with a `uint32_t slot` member
// the pool sets), handed out from a free list. Pointers stay valid: storage
// grows by whole blocks.
template <typename T>
class RecordPool {
 public:
  static constexpr size_t kBlock = 256;

  T* take() {
    if (free_.empty()) grow();
    T* record = free_.back();
    free_.pop_back();
    return record;
  }
  // Returns a record, reset to its default state (its slot kept).
  void give(T* record) {
    const uint32_t slot = record->slot;
    *record = T{};
    record->slot = slot;
    free_.push_back(record);  // capacity reserved by grow(): never allocates
  }
  // The record in `slot` (taken or free), or null past the storage.
  T* at(uint32_t slot) const {
    if (slot >= blocks_.size() * kBlock) return nullptr;
    return &blocks_[slot / kBlock][slot % kBlock];
  }
  size_t capacity() const { return blocks_.size() * kBlock; }
  size_t live() const { return capacity() - free_.size(); }

 private:
  void grow() {
    const uint32_t first = static_cast<uint32_t>(capacity());
    blocks_.push_back(std::make_unique<T[]>(kBlock));
    free_.reserve(capacity());
    for (size_t i = kBlock; i-- > 0;) {
      T* record = &blocks_.back()[i];
      record->slot = first + static_cast<uint32_t>(i);
      free_.push_back(record);
    }
  }

  std::vector<std::unique_ptr<T[]>> blocks_;
  std::vector<T*> free_;
};

// (connection handle, stream id) -> record, by open addressing with linear
// probing and backward-shift deletion (no tombstones). Doubles when more
// than half full; lookups and erasures never allocate.
template <typename T>
class StreamTable {
 public:
  explicit StreamTable(size_t initial_capacity = 64) {
    size_t capacity = 16;
    while (capacity < initial_capacity) capacity *= 2;
    entries_.resize(capacity);
  }

  T* find(endpoint::ConnectionHandle handle, uint64_t stream_id) const {
    for (size_t i = home(handle, stream_id);; i = (i + 1) & mask()) {
      const Entry& entry = entries_[i];
      if (entry.value == nullptr) return nullptr;
      if (entry.handle == handle && entry.stream_id == stream_id) return entry.value;
    }
  }
  // Adds or replaces the record of (handle, stream_id).
  void insert(endpoint::ConnectionHandle handle, uint64_t stream_id, T* value) {
    if ((size_ + 1) * 2 > entries_.size()) rehash(entries_.size() * 2);
    if (place(handle, stream_id, value)) ++size_;
  }
  bool erase(endpoint::ConnectionHandle handle, uint64_t stream_id) {
    size_t i = home(handle, stream_id);
    for (;; i = (i + 1) & mask()) {
      const Entry& entry = entries_[i];
      if (entry.value == nullptr) return false;
      if (entry.handle == handle && entry.stream_id == stream_id) break;
    }
    // Shift back the later entries of the run whose home is not between the
    // hole and their position, so every entry stays reachable from home.
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); entries_[j].value != nullptr; j = (j + 1) & mask()) {
      const size_t h = home(entries_[j].handle, entries_[j].stream_id);
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (stays) continue;
      entries_[hole] = entries_[j];
      hole = j;
    }
    entries_[hole] = Entry{};
    --size_;
    return true;
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t stream_id = 0;
    endpoint::ConnectionHandle handle = 0;
    T* value = nullptr;  // null: an empty bucket
  };

  size_t mask() const { return entries_.size() - 1; }
  size_t home(endpoint::ConnectionHandle handle, uint64_t stream_id) const {
    uint64_t x = stream_id * 0x9e3779b97f4a7c15ull ^ (uint64_t{handle} + 1) * 0xc2b2ae3d27d4eb4full;
    x ^= x >> 31;
    return static_cast<size_t>(x) & mask();
  }
  // Returns whether a new entry was added (false: replaced).
  bool place(endpoint::ConnectionHandle handle, uint64_t stream_id, T* value) {
    for (size_t i = home(handle, stream_id);; i = (i + 1) & mask()) {
      Entry& entry = entries_[i];
      if (entry.value == nullptr) {
        entry = Entry{stream_id, handle, value};
        return true;
      }
      if (entry.handle == handle && entry.stream_id == stream_id) {
        entry.value = value;
        return false;
      }
    }
  }
  void rehash(size_t capacity) {
    std::vector<Entry> old(capacity);
    old.swap(entries_);
    for (const Entry& entry : old) {
      if (entry.value != nullptr) place(entry.handle, entry.stream_id, entry.value);
    }
  }

  std::vector<Entry> entries_;
  size_t size_ = 0;
};

}  // namespace dpquic::dataplane
