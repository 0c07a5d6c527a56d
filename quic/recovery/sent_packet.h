#pragma once
// What recovery remembers about one sent packet (RFC 9002 §A.1.1). Kept small
// (16 bytes): the sent-packet ring holds one per packet in flight.

#include <cstdint>

#include "quic/time.h"

namespace dpquic::recovery {

struct SentPacket {
  Instant time_sent = 0;
  // Opaque to recovery: the connection's handle for the frames this packet
  // carried, so it can requeue them when the packet is declared lost.
  uint32_t frames = 0;
  // Bytes of the packet on the wire (header, payload, tag).
  uint16_t size = 0;
  bool ack_eliciting = false;
  // Counts towards bytes_in_flight and congestion control: ack-eliciting or
  // carrying PADDING (RFC 9002 §2).
  bool in_flight = false;
};

}  // namespace dpquic::recovery
