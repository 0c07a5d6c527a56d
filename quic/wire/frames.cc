#include "quic/wire/frames.h"

#include <algorithm>

namespace dpquic::wire {

namespace {

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::ranges::equal(a, b);
}

}  // namespace

const char* to_string(FrameType type) {
  switch (type) {
    case FrameType::kPadding: return "PADDING";
    case FrameType::kPing: return "PING";
    case FrameType::kAck: return "ACK";
    case FrameType::kAckEcn: return "ACK_ECN";
    case FrameType::kResetStream: return "RESET_STREAM";
    case FrameType::kStopSending: return "STOP_SENDING";
    case FrameType::kCrypto: return "CRYPTO";
    case FrameType::kNewToken: return "NEW_TOKEN";
    case FrameType::kStream: return "STREAM";
    case FrameType::kMaxData: return "MAX_DATA";
    case FrameType::kMaxStreamData: return "MAX_STREAM_DATA";
    case FrameType::kMaxStreamsBidi: return "MAX_STREAMS_BIDI";
    case FrameType::kMaxStreamsUni: return "MAX_STREAMS_UNI";
    case FrameType::kDataBlocked: return "DATA_BLOCKED";
    case FrameType::kStreamDataBlocked: return "STREAM_DATA_BLOCKED";
    case FrameType::kStreamsBlockedBidi: return "STREAMS_BLOCKED_BIDI";
    case FrameType::kStreamsBlockedUni: return "STREAMS_BLOCKED_UNI";
    case FrameType::kNewConnectionId: return "NEW_CONNECTION_ID";
    case FrameType::kRetireConnectionId: return "RETIRE_CONNECTION_ID";
    case FrameType::kPathChallenge: return "PATH_CHALLENGE";
    case FrameType::kPathResponse: return "PATH_RESPONSE";
    case FrameType::kConnectionCloseTransport: return "CONNECTION_CLOSE";
    case FrameType::kConnectionCloseApplication: return "CONNECTION_CLOSE_APP";
    case FrameType::kHandshakeDone: return "HANDSHAKE_DONE";
    case FrameType::kImmediateAck: return "IMMEDIATE_ACK";
    case FrameType::kDatagram: return "DATAGRAM";
    case FrameType::kAckFrequency: return "ACK_FREQUENCY";
  }
  return "UNKNOWN";
}

// One case per frame type: long for that reason alone.
bool same_frame(const Frame& a, const Frame& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case FrameType::kPadding: return a.padding.length == b.padding.length;
    case FrameType::kPing:
    case FrameType::kHandshakeDone:
    case FrameType::kImmediateAck: return true;
    case FrameType::kAck:
      return a.ack.ack_delay == b.ack.ack_delay && same_ranges(a.ack.ranges, b.ack.ranges);
    case FrameType::kAckEcn:
      return a.ack.ack_delay == b.ack.ack_delay && a.ack.ecn == b.ack.ecn &&
             same_ranges(a.ack.ranges, b.ack.ranges);
    case FrameType::kResetStream:
      return a.reset_stream.stream_id == b.reset_stream.stream_id &&
             a.reset_stream.application_error_code == b.reset_stream.application_error_code &&
             a.reset_stream.final_size == b.reset_stream.final_size;
    case FrameType::kStopSending:
      return a.stop_sending.stream_id == b.stop_sending.stream_id &&
             a.stop_sending.application_error_code == b.stop_sending.application_error_code;
    case FrameType::kCrypto:
      return a.crypto.offset == b.crypto.offset && same_bytes(a.crypto.data, b.crypto.data);
    case FrameType::kNewToken: return same_bytes(a.new_token.token, b.new_token.token);
    case FrameType::kStream:
      return a.stream.stream_id == b.stream.stream_id && a.stream.offset == b.stream.offset &&
             a.stream.fin == b.stream.fin && a.stream.has_offset == b.stream.has_offset &&
             a.stream.has_length == b.stream.has_length && same_bytes(a.stream.data, b.stream.data);
    case FrameType::kMaxData: return a.max_data.maximum_data == b.max_data.maximum_data;
    case FrameType::kDataBlocked: return a.data_blocked.maximum_data == b.data_blocked.maximum_data;
    case FrameType::kMaxStreamData:
      return a.max_stream_data.stream_id == b.max_stream_data.stream_id &&
             a.max_stream_data.maximum_stream_data == b.max_stream_data.maximum_stream_data;
    case FrameType::kStreamDataBlocked:
      return a.stream_data_blocked.stream_id == b.stream_data_blocked.stream_id &&
             a.stream_data_blocked.maximum_stream_data == b.stream_data_blocked.maximum_stream_data;
    case FrameType::kMaxStreamsBidi:
    case FrameType::kMaxStreamsUni:
      return a.max_streams.maximum_streams == b.max_streams.maximum_streams;
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni:
      return a.streams_blocked.maximum_streams == b.streams_blocked.maximum_streams;
    case FrameType::kNewConnectionId:
      return a.new_connection_id.sequence_number == b.new_connection_id.sequence_number &&
             a.new_connection_id.retire_prior_to == b.new_connection_id.retire_prior_to &&
             same_bytes(a.new_connection_id.connection_id, b.new_connection_id.connection_id) &&
             a.new_connection_id.stateless_reset_token == b.new_connection_id.stateless_reset_token;
    case FrameType::kRetireConnectionId:
      return a.retire_connection_id.sequence_number == b.retire_connection_id.sequence_number;
    case FrameType::kPathChallenge: return a.path_challenge.data == b.path_challenge.data;
    case FrameType::kPathResponse: return a.path_response.data == b.path_response.data;
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication:
      return a.connection_close.error_code == b.connection_close.error_code &&
             a.connection_close.frame_type == b.connection_close.frame_type &&
             same_bytes(a.connection_close.reason_phrase, b.connection_close.reason_phrase);
    case FrameType::kDatagram:
      return a.datagram.has_length == b.datagram.has_length &&
             same_bytes(a.datagram.data, b.datagram.data);
    case FrameType::kAckFrequency:
      return a.ack_frequency.sequence_number == b.ack_frequency.sequence_number &&
             a.ack_frequency.ack_eliciting_threshold == b.ack_frequency.ack_eliciting_threshold &&
             a.ack_frequency.requested_max_ack_delay_us ==
                 b.ack_frequency.requested_max_ack_delay_us &&
             a.ack_frequency.reordering_threshold == b.ack_frequency.reordering_threshold;
  }
  return false;
}

}  // namespace dpquic::wire
