#pragma once
// What each sent packet carried that must be resent or released when the
// packet is declared lost or acknowledged (RFC 9000 §13.3): one small record
// per retransmittable frame, in a ring shared by all packet number spaces of
// a connection.
//
// A packet's records are consecutive; SentPacket::frames holds the index of
// the first, and the last one has `last_in_packet` set. Records are marked
// done when their packet leaves the sent-packet ring, and the ring's tail
// advances over done records, so memory tracks what is in flight. The ring
// grows by doubling only when more records are outstanding than ever before
// (warm-up); steady state allocates nothing.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpquic::conn {

enum class SentFrameType : uint8_t {
  kDone = 0,  // processed (acknowledged or lost): skip
  kNone,      // a packet with nothing to track (ACK/PADDING/PING only)
  kStream,
  kCrypto,
  kAck,  // value = Largest Acknowledged of the ACK frame sent
  kMaxData,
  kMaxStreamData,
  kMaxStreamsBidi,
  kMaxStreamsUni,
  kResetStream,
  kStopSending,
  kNewConnectionId,
  kRetireConnectionId,
  kHandshakeDone,
  kPathChallenge,
  kNewToken,
  kDataBlocked,
  kStreamDataBlocked,
  kStreamsBlockedBidi,
  kStreamsBlockedUni,
};

struct SentFrame {
  uint64_t stream_id = 0;  // or crypto level, path id
  uint64_t offset = 0;     // or the frame's value / sequence number
  uint32_t length = 0;
  SentFrameType type = SentFrameType::kNone;
  bool fin = false;
  bool last_in_packet = false;
};

class SentFrameLog {
 public:
  // The ring doubles when full and keeps its size: a busy connection grows
  // it once to what its window needs; an idle one keeps the small start
  // (memory per idle connection).
  explicit SentFrameLog(size_t initial_capacity = 32);

  // Appends a record to the packet being built; begin_packet() first.
  void begin_packet() {
    packet_first_ = head_;
    packet_open_ = true;
  }
  // Inline so that the caller's record goes straight into its slot: called
  // out of line, the record was built on the caller's stack in field-sized
  // stores and copied in with wider loads, which stall on store forwarding.
  void add(const SentFrame& frame) {
    if (head_ - tail_ >= records_.size()) grow();
    SentFrame& slot = records_[head_ & mask_];
    slot = frame;
    slot.last_in_packet = false;
    if (slot.type == SentFrameType::kDone) slot.type = SentFrameType::kNone;
    ++head_;
  }
  // Closes the packet's records (adding a kNone record if it had none) and
  // returns its handle for SentPacket::frames.
  uint32_t end_packet();
  // Drops the records of a packet that was abandoned before being sent.
  void abandon_packet() {
    head_ = packet_first_;
    packet_open_ = false;
  }

  // Visits the records of packet `handle`, then marks them done. The
  // callback takes (const SentFrame&).
  template <typename Visit>
  void consume(uint32_t handle, Visit&& visit) {
    uint64_t index = rebase(handle);
    if (index < tail_ || index >= head_) return;  // already released
    for (;; ++index) {
      SentFrame& frame = records_[index & mask_];
      const bool last = frame.last_in_packet;
      if (frame.type != SentFrameType::kDone) {
        visit(static_cast<const SentFrame&>(frame));
        frame.type = SentFrameType::kDone;
      }
      if (last || index + 1 >= head_) break;
    }
    advance_tail();
  }

  size_t outstanding() const { return static_cast<size_t>(head_ - tail_); }
  size_t capacity() const { return records_.size(); }

 private:
  // Handles are the low 32 bits of the 64-bit record index; the live window
  // is far smaller than 2^32, so the full index is recovered near head_.
  uint64_t rebase(uint32_t handle) const {
    uint64_t index = (head_ & ~uint64_t{0xffffffff}) | handle;
    if (index > head_) index -= uint64_t{1} << 32;
    return index;
  }
  void advance_tail() {
    while (tail_ < head_ && records_[tail_ & mask_].type == SentFrameType::kDone) ++tail_;
  }
  void grow();

  std::vector<SentFrame> records_;
  uint64_t mask_;
  uint64_t head_ = 0;  // next record index
  uint64_t tail_ = 0;  // oldest record not done
  uint64_t packet_first_ = 0;
  bool packet_open_ = false;
};

}  // namespace dpquic::conn
