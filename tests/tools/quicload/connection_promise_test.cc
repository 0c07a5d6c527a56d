#include "tools/quicload/connection_promise.h"

#include <gtest/gtest.h>

namespace dpquic::tools {
namespace {

// 12 requests, 2 slots, --per-connection=3. One slot finishes a connection
// with 3 requests left in the run while the other slot's new connection is
// still in its handshake. That connection will carry all 3, so no
// replacement opens: it would split them and make a fifth handshake.
TEST(ConnectionPromise, ConnectingConnectionTakesAFullShare) {
  EXPECT_EQ(requests_promised({.connecting = true}, 3), 3u);
  // One sending 0-RTT requests has already used some of its share.
  EXPECT_EQ(requests_promised({.connecting = true, .in_flight = 1, .issued = 1}, 3), 2u);
}

TEST(ConnectionPromise, EstablishedConnectionTakesWhatItHasLeft) {
  EXPECT_EQ(requests_promised({.in_flight = 1, .issued = 1}, 3), 2u);
  EXPECT_EQ(requests_promised({.in_flight = 1, .issued = 3}, 3), 0u);
}

TEST(ConnectionPromise, WithoutALimitOnlyAnUnstartedHandshakeCounts) {
  EXPECT_EQ(requests_promised({.connecting = true}, 0), 1u);
  EXPECT_EQ(requests_promised({.connecting = true, .in_flight = 2, .issued = 2}, 0), 0u);
  EXPECT_EQ(requests_promised({.in_flight = 4, .issued = 9}, 0), 0u);
}

}  // namespace
}  // namespace dpquic::tools
