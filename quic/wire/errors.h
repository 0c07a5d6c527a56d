#pragma once
// Errors the wire layer reports. Parsing never throws: it returns one of these
// and the caller decides whether to drop the packet or close the connection.

#include <cstdint>
#include <optional>

namespace dpquic::wire {

// RFC 9000 §20.1 transport error codes. CRYPTO_ERROR is a range:
// kCryptoErrorBase + TLS alert.
enum class TransportErrorCode : uint64_t {
  kNoError = 0x00,
  kInternalError = 0x01,
  kConnectionRefused = 0x02,
  kFlowControlError = 0x03,
  kStreamLimitError = 0x04,
  kStreamStateError = 0x05,
  kFinalSizeError = 0x06,
  kFrameEncodingError = 0x07,
  kTransportParameterError = 0x08,
  kConnectionIdLimitError = 0x09,
  kProtocolViolation = 0x0a,
  kInvalidToken = 0x0b,
  kApplicationError = 0x0c,
  kCryptoBufferExceeded = 0x0d,
  kKeyUpdateError = 0x0e,
  kAeadLimitReached = 0x0f,
  kNoViablePath = 0x10,
  kVersionNegotiationError = 0x11,  // RFC 9368 §4
  kCryptoErrorBase = 0x0100,
};

constexpr TransportErrorCode crypto_error(uint8_t tls_alert) {
  return static_cast<TransportErrorCode>(0x0100u + tls_alert);
}

// What went wrong while parsing. kDrop means "discard this packet silently"
// (RFC 9000 §5.2, §12.2); every other value closes the connection with the
// transport error of the same name.
enum class WireError : uint8_t {
  kOk = 0,
  kDrop,
  kFrameEncodingError,
  kProtocolViolation,
  kTransportParameterError,
  kFlowControlError,
  kStreamLimitError,
};

constexpr std::optional<TransportErrorCode> transport_error_code(WireError error) {
  switch (error) {
    case WireError::kFrameEncodingError: return TransportErrorCode::kFrameEncodingError;
    case WireError::kProtocolViolation: return TransportErrorCode::kProtocolViolation;
    case WireError::kTransportParameterError: return TransportErrorCode::kTransportParameterError;
    case WireError::kFlowControlError: return TransportErrorCode::kFlowControlError;
    case WireError::kStreamLimitError: return TransportErrorCode::kStreamLimitError;
    case WireError::kOk:
    case WireError::kDrop: break;
  }
  return std::nullopt;
}

const char* to_string(WireError error);

}  // namespace dpquic::wire
