// QPACK as H3Server lets clients use it: a dynamic table that shrinks
// repeated request headers, and a bound on what a request blocked on the
// table may make nghttp3 buffer (it keeps such a stream's bytes itself).

#include <gtest/gtest.h>
#include <nghttp3/nghttp3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/dataplane/app/h3_test_pair.h"

namespace dpquic::dataplane::testing {
namespace {

TEST(H3QpackTest, RepeatedRequestHeadersTravelAsTableReferences) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const std::string value(600, 'v');  // a long accept header, as browsers send
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    H3Request request;
    request.authority = "localhost";
    request.path = "/100";
    request.fields.emplace_back("accept", value);
    h3.client.request(handle, request, &recorder);
    // One at a time, so that each later request can refer to the entry.
    ASSERT_TRUE(h3.run_until_completed(recorder, static_cast<size_t>(i + 1)));
  }
  const conn::Connection* server = h3.pair.server_connection();
  ASSERT_NE(server, nullptr);
  // Literal each time, the value alone would be 12,000 bytes.
  EXPECT_LT(server->stats().stream_bytes_received, 5000u);
  EXPECT_EQ(h3.client.stats().completed_ok, static_cast<uint64_t>(kRequests));
}

// A client by hand: a request stream whose HEADERS frame needs a dynamic
// table entry that never comes (Required Insert Count 1), then DATA frames.
struct BlockedRequest {
  std::optional<uint64_t> reset_code;
  std::optional<uint64_t> stop_code;
  bool closed = false;
};

BlockedRequest send_blocked_request(size_t data_bytes) {
  harness::QuicPair pair(h3_pair_options());
  H3Server server(*pair.server, {});
  BlockedRequest seen;
  uint64_t request_stream = UINT64_MAX;
  pair.server_node->set_application(
      [&](Instant now) { run_application(*pair.server, server, now); });
  pair.client_node->set_application([&](Instant) {
    endpoint::EndpointEvent event;
    while (pair.client->poll_event(event)) {
      const conn::ConnectionEvent& e = event.event;
      if (e.type == conn::ConnectionEventType::kClosed) seen.closed = true;
      if (e.stream_id != request_stream) continue;
      if (e.type == conn::ConnectionEventType::kStreamReset) seen.reset_code = e.error_code;
      if (e.type == conn::ConnectionEventType::kStreamStopped) seen.stop_code = e.error_code;
    }
  });
  const auto handle = pair.connect();
  EXPECT_TRUE(pair.run_until([&] {
    const conn::Connection* c = pair.client_connection(handle);
    return c != nullptr && c->handshake_confirmed();
  }));
  // HEADERS: Required Insert Count 1 (encoded 2 with a 4096-byte table),
  // base 0, then an indexed static field (:method GET).
  std::vector<uint8_t> bytes = {0x01, 0x03, 0x02, 0x00, 0xd1};
  while (bytes.size() < data_bytes) {
    const std::vector<uint8_t> frame = {0x00, 0x7f, 0xff};  // DATA, 16383 bytes
    bytes.insert(bytes.end(), frame.begin(), frame.end());
    bytes.resize(bytes.size() + 16383, 'd');
  }
  request_stream = *pair.client->open_stream(handle, conn::StreamDirection::kBidirectional);
  transmit::ChunkPool chunks(1, 0, 4);
  pair.client->send(handle, request_stream,
                    chunks.adopt(bytes.data(), bytes.size(), nullptr, nullptr), false);
  pair.run_until([&] { return seen.reset_code.has_value() || seen.closed; }, 2 * kSecond);
  pair.server->reset_connections();
  pair.client->reset_connections();
  return seen;
}

TEST(H3QpackTest, ABlockedRequestThatKeepsSendingIsResetWithExcessiveLoad) {
  const BlockedRequest seen = send_blocked_request(256 * 1024);
  ASSERT_TRUE(seen.reset_code.has_value());
  EXPECT_EQ(*seen.reset_code, NGHTTP3_H3_EXCESSIVE_LOAD);
  EXPECT_EQ(seen.stop_code, NGHTTP3_H3_EXCESSIVE_LOAD);
  EXPECT_FALSE(seen.closed);
}

TEST(H3QpackTest, ABlockedRequestWithinTheBudgetWaits) {
  const BlockedRequest seen = send_blocked_request(16 * 1024);
  EXPECT_FALSE(seen.reset_code.has_value());
  EXPECT_FALSE(seen.closed);
}

}  // namespace
}  // namespace dpquic::dataplane::testing
