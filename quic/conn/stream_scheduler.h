#pragma once
// Which stream sends next: the transport's stream scheduler, following the
// model of Extensible Priorities (RFC 9218 §4, §10) so that an application
// scheduling by urgency (HTTP/3) and the transport never disagree.
//
// Contract:
// - Streams are named by their slot (a small integer the connection owns).
//   A slot is either queued (it has something to send) or not; push() of a
//   queued slot does nothing.
// - Levels, first to last: critical streams (an application's own control
//   streams, e.g. HTTP/3's control and QPACK streams), then urgency 0 to 7.
//   front() is always a stream of the first non-empty level: a less urgent
//   stream is never chosen while a more urgent one is queued.
// - Within a level, non-incremental streams come first, lowest stream ID
//   first, and the front one stays the front one while it is queued: such
//   responses go one after another. Incremental streams then take turns:
//   push() after pop() puts one at the back of its level (round-robin, a
//   packet's worth per turn).
// - The default priority is urgency 3, incremental: streams whose
//   application sets nothing share the connection round-robin.
// - Nothing allocates after reserve(): queues are intrusive lists through
//   per-slot nodes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpquic::conn {

struct StreamPriority {
  static constexpr uint8_t kDefaultUrgency = 3;
  static constexpr uint8_t kLowestUrgency = 7;

  uint8_t urgency = kDefaultUrgency;  // 0 (most urgent) .. 7
  bool incremental = true;
  bool critical = false;  // before every urgency (urgency and incremental ignored)

  bool operator==(const StreamPriority&) const = default;
};

class StreamScheduler {
 public:
  // Room for slots [0, slots): call when the connection adds stream slots.
  void reserve(size_t slots);

  // The slot's stream is now `stream_id` with the default priority. The
  // slot must not be queued.
  void assign(uint32_t slot, uint64_t stream_id);
  // Changes the slot's priority; a queued slot moves to its new place.
  void set_priority(uint32_t slot, const StreamPriority& priority);
  const StreamPriority& priority(uint32_t slot) const { return nodes_[slot].priority; }

  void push(uint32_t slot);
  bool queued(uint32_t slot) const { return nodes_[slot].queued; }
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  // The stream to send next (the scheduler must not be empty).
  uint32_t front() const;
  // Takes front() off the queue.
  void pop();
  // Takes every slot off the queue.
  void clear();

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kLevels = 1 + StreamPriority::kLowestUrgency + 1;

  struct Node {
    uint64_t stream_id = 0;
    StreamPriority priority;
    uint32_t next = kNone;
    bool queued = false;
  };
  struct Level {
    uint32_t ordered = kNone;   // non-incremental, by stream ID
    uint32_t rotating = kNone;  // incremental, FIFO
    uint32_t rotating_tail = kNone;
  };

  static size_t level_of(const StreamPriority& priority);
  void link(uint32_t slot);
  void unlink(uint32_t slot);
  void update_mask(size_t level);

  std::vector<Node> nodes_;
  std::array<Level, kLevels> levels_{};
  uint16_t non_empty_ = 0;  // bit per level
  size_t count_ = 0;
};

}  // namespace dpquic::conn
