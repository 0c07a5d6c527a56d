#include "quic/wire/errors.h"

namespace dpquic::wire {

const char* to_string(WireError error) {
  switch (error) {
    case WireError::kOk: return "ok";
    case WireError::kDrop: return "drop";
    case WireError::kFrameEncodingError: return "FRAME_ENCODING_ERROR";
    case WireError::kProtocolViolation: return "PROTOCOL_VIOLATION";
    case WireError::kTransportParameterError: return "TRANSPORT_PARAMETER_ERROR";
    case WireError::kFlowControlError: return "FLOW_CONTROL_ERROR";
    case WireError::kStreamLimitError: return "STREAM_LIMIT_ERROR";
  }
  return "unknown";
}

}  // namespace dpquic::wire
