#include "dataplane/qlog/qlog_frames.h"

#include <string_view>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::dataplane {
namespace {

using wire::FrameType;

std::string_view bytes_as_text(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// One case per frame type, each writing qlog's fields for it (the QUIC
// event definitions, draft-ietf-quic-qlog-quic-events): long for that
// reason alone.
void write_frame(JsonWriter& json, const wire::Frame& frame, uint64_t ack_delay_exponent) {
  json.begin_object();
  switch (frame.type) {
    case FrameType::kPadding:
      json.member("frame_type", "padding");
      json.member("length", frame.padding.length);
      break;
    case FrameType::kPing: json.member("frame_type", "ping"); break;
    case FrameType::kAck:
    case FrameType::kAckEcn: {
      json.member("frame_type", "ack");
      // ACK Delay is in units of 2^exponent microseconds (RFC 9000 §19.3).
      const uint64_t exponent = ack_delay_exponent > 20 ? 20 : ack_delay_exponent;
      json.member_ms("ack_delay", static_cast<double>(frame.ack.ack_delay) *
                                      static_cast<double>(uint64_t{1} << exponent) / 1000.0);
      json.begin_array("acked_ranges");
      for (const wire::AckRange& range : frame.ack.ranges) {
        json.begin_array();
        json.element(range.smallest);
        json.element(range.largest);
        json.end_array();
      }
      json.end_array();
      if (frame.type == FrameType::kAckEcn) {
        json.member("ect0", frame.ack.ecn.ect0);
        json.member("ect1", frame.ack.ecn.ect1);
        json.member("ce", frame.ack.ecn.ecn_ce);
      }
      break;
    }
    case FrameType::kResetStream:
      json.member("frame_type", "reset_stream");
      json.member("stream_id", frame.reset_stream.stream_id);
      json.member("error_code", frame.reset_stream.application_error_code);
      json.member("final_size", frame.reset_stream.final_size);
      break;
    case FrameType::kStopSending:
      json.member("frame_type", "stop_sending");
      json.member("stream_id", frame.stop_sending.stream_id);
      json.member("error_code", frame.stop_sending.application_error_code);
      break;
    case FrameType::kCrypto:
      json.member("frame_type", "crypto");
      json.member("offset", frame.crypto.offset);
      json.member("length", frame.crypto.data.size());
      break;
    case FrameType::kNewToken:
      json.member("frame_type", "new_token");
      json.begin_object("token");
      json.begin_object("raw");
      json.member("length", frame.new_token.token.size());
      json.end_object();
      json.end_object();
      break;
    case FrameType::kStream:
      json.member("frame_type", "stream");
      json.member("stream_id", frame.stream.stream_id);
      json.member("offset", frame.stream.offset);
      json.member("length", frame.stream.data.size());
      if (frame.stream.fin) json.member_bool("fin", true);
      break;
    case FrameType::kMaxData:
      json.member("frame_type", "max_data");
      json.member("maximum", frame.max_data.maximum_data);
      break;
    case FrameType::kMaxStreamData:
      json.member("frame_type", "max_stream_data");
      json.member("stream_id", frame.max_stream_data.stream_id);
      json.member("maximum", frame.max_stream_data.maximum_stream_data);
      break;
    case FrameType::kMaxStreamsBidi:
    case FrameType::kMaxStreamsUni:
      json.member("frame_type", "max_streams");
      json.member("stream_type",
                  frame.type == FrameType::kMaxStreamsBidi ? "bidirectional" : "unidirectional");
      json.member("maximum", frame.max_streams.maximum_streams);
      break;
    case FrameType::kDataBlocked:
      json.member("frame_type", "data_blocked");
      json.member("limit", frame.data_blocked.maximum_data);
      break;
    case FrameType::kStreamDataBlocked:
      json.member("frame_type", "stream_data_blocked");
      json.member("stream_id", frame.stream_data_blocked.stream_id);
      json.member("limit", frame.stream_data_blocked.maximum_stream_data);
      break;
    case FrameType::kStreamsBlockedBidi:
    case FrameType::kStreamsBlockedUni:
      json.member("frame_type", "streams_blocked");
      json.member("stream_type", frame.type == FrameType::kStreamsBlockedBidi ? "bidirectional"
                                                                              : "unidirectional");
      json.member("limit", frame.streams_blocked.maximum_streams);
      break;
    case FrameType::kNewConnectionId:
      json.member("frame_type", "new_connection_id");
      json.member("sequence_number", frame.new_connection_id.sequence_number);
      json.member("retire_prior_to", frame.new_connection_id.retire_prior_to);
      json.member("connection_id_length", frame.new_connection_id.connection_id.size());
      json.member_hex("connection_id", frame.new_connection_id.connection_id);
      json.member_hex("stateless_reset_token", frame.new_connection_id.stateless_reset_token);
      break;
    case FrameType::kRetireConnectionId:
      json.member("frame_type", "retire_connection_id");
      json.member("sequence_number", frame.retire_connection_id.sequence_number);
      break;
    case FrameType::kPathChallenge:
      json.member("frame_type", "path_challenge");
      json.member_hex("data", frame.path_challenge.data);
      break;
    case FrameType::kPathResponse:
      json.member("frame_type", "path_response");
      json.member_hex("data", frame.path_response.data);
      break;
    case FrameType::kConnectionCloseTransport:
    case FrameType::kConnectionCloseApplication: {
      const bool application = frame.type == FrameType::kConnectionCloseApplication;
      json.member("frame_type", "connection_close");
      json.member("error_space", application ? "application" : "transport");
      json.member("error_code", frame.connection_close.error_code);
      json.member("raw_error_code", frame.connection_close.error_code);
      json.member("reason", bytes_as_text(frame.connection_close.reason_phrase));
      if (!application) json.member("trigger_frame_type", frame.connection_close.frame_type);
      break;
    }
    case FrameType::kHandshakeDone: json.member("frame_type", "handshake_done"); break;
    case FrameType::kDatagram:
      json.member("frame_type", "datagram");
      json.member("length", frame.datagram.data.size());
      break;
    case FrameType::kImmediateAck:
    case FrameType::kAckFrequency:
      // Not in the QUIC event definitions: logged as unknown with its type.
      json.member("frame_type", "unknown");
      json.member("raw_frame_type", static_cast<uint64_t>(frame.type));
      break;
  }
  json.end_object();
}

}  // namespace

void write_qlog_frames(JsonWriter& json, std::span<const uint8_t> payload,
                       uint64_t ack_delay_exponent) {
  json.begin_array("frames");
  wire::FrameDecoder decoder(payload);
  wire::Frame frame;
  while (!decoder.done()) {
    if (decoder.next(frame) != wire::WireError::kOk) {
      json.begin_object();
      json.member("frame_type", "unknown");
      json.end_object();
      break;
    }
    write_frame(json, frame, ack_delay_exponent);
  }
  json.end_array();
}

}  // namespace dpquic::dataplane
