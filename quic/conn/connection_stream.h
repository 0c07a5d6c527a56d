#pragma once
// A connection's stream: its sending and receiving parts plus the
// connection's scheduling and event flags. Private to the connection's
// implementation files.

#include <cstdint>
#include <optional>

#include "quic/conn/connection.h"
#include "quic/conn/receive_stream.h"
#include "quic/conn/send_stream.h"

namespace dpquic::conn {

struct Connection::Stream {
  uint64_t id = 0;
  uint32_t slot = 0;
  std::optional<SendStream> send;        // absent for a peer's uni stream
  std::optional<ReceiveStream> receive;  // absent for our uni stream
  bool in_send_queue = false;
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
