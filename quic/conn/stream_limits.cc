#include "quic/conn/stream_limits.h"

#include <algorithm>

namespace dpquic::conn {

namespace {

using wire::TransportErrorCode;

uint64_t clamp_streams(uint64_t value) { return std::min(value, kMaxStreamsValue); }

}  // namespace

StreamLimits::StreamLimits(wire::Role local_role, uint64_t local_max_bidi, uint64_t local_max_uni)
    : local_role_(local_role) {
  PerDirection& bidi = at(StreamDirection::kBidirectional);
  bidi.window = clamp_streams(local_max_bidi);
  bidi.advertised = bidi.window;
  PerDirection& uni = at(StreamDirection::kUnidirectional);
  uni.window = clamp_streams(local_max_uni);
  uni.advertised = uni.window;
}

void StreamLimits::set_peer_limits(uint64_t peer_max_bidi, uint64_t peer_max_uni) {
  const StreamDirection directions[] = {StreamDirection::kBidirectional,
                                        StreamDirection::kUnidirectional};
  const uint64_t values[] = {peer_max_bidi, peer_max_uni};
  for (int i = 0; i < 2; ++i) {
    PerDirection& dir = at(directions[i]);
    dir.peer_max = clamp_streams(values[i]);
    if (dir.local_opened < dir.peer_max) dir.blocked_due = false;
  }
}

std::optional<uint64_t> StreamLimits::open_local(StreamDirection direction) {
  PerDirection& dir = at(direction);
  if (dir.local_opened >= dir.peer_max) {
    // One STREAMS_BLOCKED per limit value: the peer learns nothing new from
    // a second one at the same limit.
    if (dir.blocked_sent_at != dir.peer_max) dir.blocked_due = true;
    return std::nullopt;
  }
  return make_stream_id(dir.local_opened++, local_role_, direction);
}

TransportError StreamLimits::on_peer_stream(uint64_t id,
                                            std::optional<uint64_t>& newly_opened_begin) {
  newly_opened_begin.reset();
  if (is_local(id, local_role_)) {
    if (local_stream_opened(id)) return {};
    return transport_error(TransportErrorCode::kStreamStateError,
                           "frame for a local stream that was never opened");
  }
  const StreamDirection direction = stream_direction(id);
  PerDirection& dir = at(direction);
  const uint64_t index = stream_index(id);
  if (index >= dir.advertised) {
    return transport_error(TransportErrorCode::kStreamLimitError,
                           direction == StreamDirection::kBidirectional
                               ? "peer exceeded the bidirectional stream limit"
                               : "peer exceeded the unidirectional stream limit");
  }
  if (index < dir.peer_opened) return {};
  newly_opened_begin = make_stream_id(dir.peer_opened, peer_role(), direction);
  dir.peer_opened = index + 1;
  return {};
}

bool StreamLimits::peer_stream_opened(uint64_t id) const {
  if (is_local(id, local_role_)) return false;
  return stream_index(id) < at(stream_direction(id)).peer_opened;
}

bool StreamLimits::local_stream_opened(uint64_t id) const {
  if (!is_local(id, local_role_)) return false;
  return stream_index(id) < at(stream_direction(id)).local_opened;
}

void StreamLimits::on_peer_stream_closed(StreamDirection direction) {
  PerDirection& dir = at(direction);
  if (dir.peer_closed < dir.peer_opened) ++dir.peer_closed;
}

uint64_t StreamLimits::next_max_streams(StreamDirection d) const {
  const PerDirection& dir = at(d);
  // peer_closed <= peer_opened <= advertised <= 2^60 and window <= 2^60: no
  // overflow before the clamp.
  return std::max(dir.advertised, clamp_streams(dir.peer_closed + dir.window));
}

bool StreamLimits::max_streams_due(StreamDirection d) const {
  const PerDirection& dir = at(d);
  if (dir.max_streams_retransmit) return true;
  const uint64_t next = next_max_streams(d);
  const uint64_t threshold = std::max<uint64_t>(1, dir.window / 2);
  return next - dir.advertised >= threshold;
}

void StreamLimits::on_max_streams_sent(StreamDirection d, uint64_t value) {
  PerDirection& dir = at(d);
  if (value >= dir.advertised) {
    dir.advertised = clamp_streams(value);
    dir.max_streams_retransmit = false;
  }
}

void StreamLimits::on_max_streams_lost(StreamDirection d, uint64_t value) {
  PerDirection& dir = at(d);
  if (value >= dir.advertised) dir.max_streams_retransmit = true;
}

TransportError StreamLimits::on_max_streams(StreamDirection d, uint64_t maximum) {
  if (maximum > kMaxStreamsValue) {
    // MAX_STREAMS frame types (RFC 9000 §19.11).
    const uint64_t frame_type = d == StreamDirection::kBidirectional ? 0x12 : 0x13;
    return transport_error(TransportErrorCode::kFrameEncodingError, "MAX_STREAMS above 2^60",
                           frame_type);
  }
  PerDirection& dir = at(d);
  if (maximum > dir.peer_max) {
    dir.peer_max = maximum;
    dir.blocked_due = false;
  }
  return {};
}

bool StreamLimits::streams_blocked_due(StreamDirection d) const { return at(d).blocked_due; }

uint64_t StreamLimits::streams_blocked_value(StreamDirection d) const { return at(d).peer_max; }

void StreamLimits::on_streams_blocked_sent(StreamDirection d) {
  PerDirection& dir = at(d);
  dir.blocked_due = false;
  dir.blocked_sent_at = dir.peer_max;
}

void StreamLimits::on_streams_blocked_lost(StreamDirection d, uint64_t value) {
  PerDirection& dir = at(d);
  if (value == dir.peer_max && dir.local_opened >= dir.peer_max) dir.blocked_due = true;
}

}  // namespace dpquic::conn
