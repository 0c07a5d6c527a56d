#pragma once
// How a supervisor steers running shards, whatever their backend. Phases
// only move forward:
//   kServe: serve;
//   kDrain: a graceful stop. New connections are refused, the applications
//           finish what they accepted and close connections as they go
//           idle (HTTP/3: GOAWAY first); at the drain timeout whatever is
//           left is closed;
//   kStop:  close every connection now, flush the closes briefly, leave.

#include <cstdint>

namespace dpquic::dataplane {

enum class RunPhase : uint8_t { kServe, kDrain, kStop };

}  // namespace dpquic::dataplane
