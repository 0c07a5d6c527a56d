#pragma once
// A connection's stream: its sending and receiving parts plus the
// connection's scheduling and event flags. Private to the connection's
// implementation files.

#include <cstdint>
#include <optional>
#include <utility>

#include "quic/conn/connection.h"
#include "quic/conn/receive_stream.h"
#include "quic/conn/send_stream.h"

namespace dpquic::conn {

// One direction of the streams that use a slot, optional-like: absent or
// present (the live stream's part). The object itself outlives the stream:
// reset() retires it (its chunks or blocks go back to their pools at once)
// but keeps it, with the storage its ring and ranges grew to, and the next
// stream of the slot re-initialises it in place (Part::reinitialize caps what
// is kept), so opening and freeing streams allocates nothing once the slot
// has been used.
template <typename Part>
class RetainedStreamPart {
 public:
  explicit operator bool() const { return live_; }
  bool has_value() const { return live_; }
  Part& operator*() { return *storage_; }
  const Part& operator*() const { return *storage_; }
  Part* operator->() { return &*storage_; }
  const Part* operator->() const { return &*storage_; }

  // Makes the part present by re-initialising the object retained from an
  // earlier stream of the slot (Part::reinitialize(args...)); false, doing
  // nothing, if the slot has none yet (then use emplace()).
  template <typename... Args>
  bool reuse(const Args&... args) {
    if (!storage_ || live_) return false;
    storage_->reinitialize(args...);
    live_ = true;
    return true;
  }
  // Makes the part present with a newly constructed object.
  template <typename... Args>
  Part& emplace(Args&&... args) {
    storage_.emplace(std::forward<Args>(args)...);
    live_ = true;
    return *storage_;
  }
  // Makes the part absent, releasing what it holds from shared pools.
  void reset() {
    if (!live_) return;
    storage_->retire();
    live_ = false;
  }

 private:
  std::optional<Part> storage_;
  bool live_ = false;
};

struct Connection::Stream {
  uint64_t id = 0;
  uint32_t slot = 0;
  RetainedStreamPart<SendStream> send;        // absent for a peer's uni stream
  RetainedStreamPart<ReceiveStream> receive;  // absent for our uni stream
  bool in_control_queue = false;              // control_queue_: stream control frames owed
  bool readable_event_pending = false;
  bool write_blocked = false;  // a send was refused: report kStreamWritable later
  bool reset_reported = false;
  uint64_t highest_received = 0;  // for connection-level flow control
  uint64_t consumed_counted = 0;  // receive->connection_consumed() already credited
};

inline constexpr crypto::EncryptionLevel level_of_space(wire::PacketNumberSpace space) {
  switch (space) {
    case wire::PacketNumberSpace::kInitial: return crypto::EncryptionLevel::kInitial;
    case wire::PacketNumberSpace::kHandshake: return crypto::EncryptionLevel::kHandshake;
    default: return crypto::EncryptionLevel::kApplication;
  }
}

inline constexpr wire::PacketNumberSpace space_of_level(crypto::EncryptionLevel level) {
  switch (level) {
    case crypto::EncryptionLevel::kInitial: return wire::PacketNumberSpace::kInitial;
    case crypto::EncryptionLevel::kHandshake: return wire::PacketNumberSpace::kHandshake;
    default: return wire::PacketNumberSpace::kApplication;
  }
}

}  // namespace dpquic::conn
