#pragma once
// How many of a bounded run's requests the connections under way will still
// take, so that a slot opens a new connection only when work is left that
// none of them will carry. With --per-connection every connection carries
// exactly that many (the last one fewer), so the run makes
// ceil(requests / per-connection) handshakes: a connection still in its
// handshake will take a full share, not one request.

#include <cstdint>

namespace dpquic::tools {

// A live connection: `issued` requests sent on it so far, `in_flight` of
// them unanswered; `connecting` while its handshake is under way.
struct LiveConnection {
  bool connecting = false;
  uint32_t in_flight = 0;
  uint64_t issued = 0;
};

// Requests `c` will still issue before it closes. `per_connection` 0 means
// no limit: a connection runs until the budget is spent, so only one still
// in its handshake with nothing sent is counted, for its first request.
inline uint64_t requests_promised(const LiveConnection& c, uint64_t per_connection) {
  if (per_connection == 0) return c.connecting && c.in_flight == 0 ? 1 : 0;
  return c.issued < per_connection ? per_connection - c.issued : 0;
}

}  // namespace dpquic::tools
