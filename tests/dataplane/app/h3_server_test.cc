// H3Server and H3Client end to end over the in-memory network: synthetic
// bodies byte for byte, concurrency, HEAD, 404/405 (425 in early data), loss,
// and connection close failing open requests.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/app/body_source.h"
#include "dataplane/app/h3_response.h"
#include "dataplane/app/synthetic_body.h"
#include "tests/dataplane/app/h3_test_pair.h"

namespace dpquic::dataplane::testing {
namespace {

TEST(H3ServerTest, GetsOneMegabyteSyntheticBodyByteExact) {
  H3Pair h3;
  const auto handle = h3.connect();
  EXPECT_EQ(h3.pair.client_connection(handle)->tls()->alpn(), "h3");
  ResponseRecorder recorder;
  const uint64_t id = h3.get(handle, "/1000000", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, 1));

  const RecordedResponse& response = recorder[id];
  EXPECT_EQ(response.outcome.result, H3Result::kOk);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers_calls, 1);
  EXPECT_EQ(response.content_length, 1000000u);
  EXPECT_EQ(response.header("content-type"), "application/octet-stream");
  EXPECT_EQ(response.header("server"), "dpquic");
  EXPECT_EQ(response.received, 1000000u);
  EXPECT_TRUE(response.synthetic_matches);

  EXPECT_EQ(h3.server.stats().requests, 1u);
  EXPECT_EQ(h3.server.stats().responses_2xx, 1u);
  EXPECT_EQ(h3.server.stats().body_bytes_sent, 1000000u);
  EXPECT_EQ(h3.client.stats().body_bytes_received, 1000000u);
  // The stream state is released once the response is out.
  ASSERT_TRUE(h3.pair.run_until([&] { return h3.server.open_request_count() == 0; }));
  EXPECT_EQ(h3.client.open_requests(), 0u);
}

TEST(H3ServerTest, TwentyConcurrentRequestsOnOneConnectionAreByteExact) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  std::vector<std::pair<uint64_t, uint64_t>> requests;  // id, size
  for (uint64_t i = 0; i < 20; ++i) {
    const uint64_t size = 1 + i * 37'501 + (i % 3) * 65'536;  // odd sizes, several > 64 KiB
    requests.emplace_back(h3.get(handle, "/" + std::to_string(size), recorder), size);
  }
  ASSERT_TRUE(h3.run_until_completed(recorder, requests.size()));
  uint64_t total = 0;
  for (const auto& [id, size] : requests) {
    const RecordedResponse& response = recorder[id];
    EXPECT_EQ(response.outcome.result, H3Result::kOk) << id;
    EXPECT_EQ(response.status, 200) << id;
    EXPECT_EQ(response.content_length, size) << id;
    EXPECT_EQ(response.received, size) << id;
    EXPECT_TRUE(response.synthetic_matches) << id;
    total += size;
  }
  EXPECT_EQ(h3.server.stats().requests, 20u);
  EXPECT_EQ(h3.server.stats().body_bytes_sent, total);
  EXPECT_EQ(h3.server.connection_count(), 1u);
}

TEST(H3ServerTest, HeadHasContentLengthAndNoBody) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t id = h3.get(handle, "/123456", recorder, "HEAD");
  ASSERT_TRUE(h3.run_until_completed(recorder, 1));
  const RecordedResponse& response = recorder[id];
  EXPECT_EQ(response.outcome.result, H3Result::kOk);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_length, 123456u);
  EXPECT_EQ(response.header("content-length"), "123456");
  EXPECT_EQ(response.received, 0u);
  EXPECT_EQ(h3.server.stats().body_bytes_sent, 0u);
}

TEST(H3ServerTest, OtherMethodsGet405WithAllow) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t post = h3.get(handle, "/1000", recorder, "POST");
  const uint64_t del = h3.get(handle, "/1000", recorder, "DELETE");
  ASSERT_TRUE(h3.run_until_completed(recorder, 2));
  for (uint64_t id : {post, del}) {
    const RecordedResponse& response = recorder[id];
    EXPECT_EQ(response.outcome.result, H3Result::kOk);
    EXPECT_EQ(response.status, 405);
    EXPECT_EQ(response.header("allow"), "GET, HEAD");
    EXPECT_EQ(response.content_length, 0u);
    EXPECT_EQ(response.received, 0u);
  }
  EXPECT_EQ(h3.server.stats().responses_4xx, 2u);
}

// A request on a stream opened in 0-RTT may be a replay that another host of
// the fleet cannot catch (docs/fleet.md): a method that is not safe gets 425
// Too Early (RFC 8470) and no Allow field; the same method outside early
// data gets 405; a GET in early data is served.
TEST(H3ResponderTest, UnsafeMethodsInEarlyDataGet425) {
  BufferPool pool(4096, 4);
  const H3Responder responder(H3ResponderConfig{}, pool.adopt_static(synthetic_block()));
  auto respond = [&](const std::string& method, bool early) {
    H3RequestHead head;
    head.method = method;
    head.path = "/1000";
    head.early_data = early;
    auto response = std::make_unique<H3Response>();
    responder.respond(head, 0, true, *response, nullptr, nullptr);
    return response;
  };
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    const auto early = respond(method, true);
    EXPECT_EQ(early->headers.status(), 425) << method;
    EXPECT_FALSE(early->with_body) << method;
    const auto late = respond(method, false);
    EXPECT_EQ(late->headers.status(), 405) << method;
  }
  const auto get = respond("GET", true);
  EXPECT_EQ(get->headers.status(), 200);
  EXPECT_TRUE(get->with_body);
  EXPECT_EQ(respond("HEAD", true)->headers.status(), 200);
}

TEST(H3ServerTest, UnknownAndMalformedPathsGet404) {
  H3ServerConfig config;
  config.max_synthetic_bytes = 5000;
  H3Pair h3(config);
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const std::vector<std::string> paths = {
      "/nope", "/",  "/12x", "/-5",     "/+5",
      "/5001", "/%", "/1/2", "/../100", "/99999999999999999999999"};
  std::vector<uint64_t> ids;
  for (const std::string& path : paths) ids.push_back(h3.get(handle, path, recorder));
  const uint64_t limit = h3.get(handle, "/5000?query=1", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, ids.size() + 1));
  for (size_t i = 0; i < ids.size(); ++i) {
    const RecordedResponse& response = recorder[ids[i]];
    EXPECT_EQ(response.outcome.result, H3Result::kOk) << paths[i];
    EXPECT_EQ(response.status, 404) << paths[i];
    EXPECT_EQ(response.content_length, 0u) << paths[i];
  }
  EXPECT_EQ(recorder[limit].status, 200);
  EXPECT_EQ(recorder[limit].received, 5000u);
  EXPECT_TRUE(recorder[limit].synthetic_matches);
  EXPECT_EQ(h3.server.stats().responses_4xx, paths.size());
}

TEST(H3ServerTest, LossyLinkStillDeliversByteExact) {
  harness::PairOptions options = h3_pair_options();
  options.client_to_server.loss = 0.05;
  options.client_to_server.seed = 71;
  options.server_to_client.loss = 0.05;
  options.server_to_client.seed = 72;
  for (endpoint::EndpointConfig* config : {&options.client, &options.server}) {
    config->connection.handshake_timeout = 60 * kSecond;
  }
  H3Pair h3({}, options);
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  std::vector<std::pair<uint64_t, uint64_t>> requests;
  for (uint64_t size : {2'000'000u, 300'001u, 77'777u, 1u}) {
    requests.emplace_back(h3.get(handle, "/" + std::to_string(size), recorder), size);
  }
  ASSERT_TRUE(h3.run_until_completed(recorder, requests.size(), 120 * kSecond));
  for (const auto& [id, size] : requests) {
    EXPECT_EQ(recorder[id].outcome.result, H3Result::kOk);
    EXPECT_EQ(recorder[id].received, size);
    EXPECT_TRUE(recorder[id].synthetic_matches);
  }
  EXPECT_GT(h3.pair.client_connection(handle)->stats().packets_lost +
                h3.pair.server_connection()->stats().packets_lost,
            0u);
}

TEST(H3ServerTest, ConnectionCloseFailsOpenRequests) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t big = h3.get(handle, "/1000000000", recorder);
  ASSERT_TRUE(h3.pair.run_until([&] { return recorder[big].received > 200'000; }));
  // Queued behind it: never answered either.
  const uint64_t second = h3.get(handle, "/1000000000", recorder);
  std::optional<endpoint::ConnectionHandle> server_handle;
  for (endpoint::ConnectionHandle h = 0; h < 64 && !server_handle; ++h) {
    if (h3.pair.server->connection(h) != nullptr) server_handle = h;
  }
  ASSERT_TRUE(server_handle.has_value());
  h3.pair.server->close(h3.pair.simulator->now(), *server_handle, NGHTTP3_H3_NO_ERROR,
                        "going away");
  ASSERT_TRUE(h3.run_until_completed(recorder, 2));
  for (uint64_t id : {big, second}) {
    EXPECT_EQ(recorder[id].outcome.result, H3Result::kConnectionClosed) << id;
    EXPECT_EQ(recorder[id].outcome.error_code, static_cast<uint64_t>(NGHTTP3_H3_NO_ERROR)) << id;
  }
  EXPECT_LT(recorder[big].received, 1'000'000'000u);
  EXPECT_TRUE(recorder[big].synthetic_matches);
  EXPECT_EQ(h3.client.open_requests(), 0u);
  ASSERT_TRUE(h3.pair.run_until([&] { return h3.server.connection_count() == 0; }));
  EXPECT_EQ(h3.client.stats().failed, 2u);
}

TEST(H3ServerTest, PeerStopSendingAbortsOnlyThatResponse) {
  H3Pair h3;
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t big = h3.get(handle, "/1000000000", recorder);
  ASSERT_TRUE(h3.pair.run_until([&] { return recorder[big].received > 100'000; }));
  // The client cancels its first request (stream 0) at the QUIC level.
  ASSERT_TRUE(h3.pair.client_connection(handle)->stop_sending(0, NGHTTP3_H3_REQUEST_CANCELLED));
  h3.pair.client->wake(handle);
  ASSERT_TRUE(h3.run_until_completed(recorder, 1));
  EXPECT_EQ(recorder[big].outcome.result, H3Result::kReset);
  EXPECT_EQ(recorder[big].outcome.error_code, static_cast<uint64_t>(NGHTTP3_H3_REQUEST_CANCELLED));
  EXPECT_TRUE(recorder[big].synthetic_matches);
  ASSERT_TRUE(h3.pair.run_until([&] { return h3.server.open_request_count() == 0; }));
  EXPECT_EQ(h3.server.stats().streams_reset, 1u);
  // The connection carries on.
  const uint64_t next = h3.get(handle, "/1000", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, 2));
  EXPECT_EQ(recorder[next].outcome.result, H3Result::kOk);
  EXPECT_EQ(recorder[next].received, 1000u);
  EXPECT_EQ(h3.client.open_requests(), 0u);
}

TEST(H3ServerTest, RequestOnUnknownHandleIsRefused) {
  H3Pair h3;
  ResponseRecorder recorder;
  H3Request request;
  request.authority = "localhost";
  EXPECT_EQ(h3.client.request(12345, request, &recorder), 0u);
}

}  // namespace
}  // namespace dpquic::dataplane::testing
