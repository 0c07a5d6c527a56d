#pragma once
// A connection error as a value: what the connection closes with
// (RFC 9000 §10.2, §20). Hot-path code returns this instead of throwing.

#include <cstdint>

#include "quic/wire/errors.h"

namespace dpquic::conn {

struct TransportError {
  wire::TransportErrorCode code = wire::TransportErrorCode::kNoError;
  // The frame type that caused it (0 when unknown or not frame-related).
  uint64_t frame_type = 0;
  // A static string; sent as the reason phrase.
  const char* reason = "";

  bool ok() const { return code == wire::TransportErrorCode::kNoError; }
  explicit operator bool() const { return !ok(); }  // true: an error
};

inline TransportError transport_error(wire::TransportErrorCode code, const char* reason,
                                      uint64_t frame_type = 0) {
  return TransportError{code, frame_type, reason};
}

}  // namespace dpquic::conn
