#pragma once
// QUIC frames as qlog QuicFrame objects (draft-ietf-quic-qlog-quic-events,
// the qlog 0.3 definitions), parsed from a packet's plaintext payload with
// quic/wire's frame codec.

#include <cstdint>
#include <span>
#include <string_view>

#include "dataplane/qlog/json_writer.h"

namespace dpquic::dataplane {

// Writes the member `"frames":[...]` for `payload`. The decoder stops at the
// first malformed frame, which is then logged as {"frame_type":"unknown"}.
// `ack_delay_exponent` is the ACK sender's (to turn ACK Delay into ms).
// Only frame headers and lengths are read, never STREAM or DATAGRAM data, so
// a packet we built (its STREAM data not in place yet) can be logged too.
void write_qlog_frames(JsonWriter& json, std::span<const uint8_t> payload,
                       uint64_t ack_delay_exponent);

}  // namespace dpquic::dataplane
