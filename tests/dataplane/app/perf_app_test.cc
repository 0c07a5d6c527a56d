// The dataplane perf server and client end to end over the in-memory pair
// (real TLS, ALPN "perf"): byte-exact downloads, concurrent streams,
// uploads, requests without a size, and resets.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/app/synthetic_body.h"
#include "tests/dataplane/app/perf_test_pair.h"

namespace dpquic::dataplane {
namespace {

using testing::PerfPair;
using testing::RecordingHandler;

constexpr uint64_t kMegabyte = 1 << 20;

TEST(PerfAppTest, TenMegabyteDownloadIsByteExact) {
  PerfPair perf;
  const auto handle = perf.connect();
  EXPECT_EQ(perf.pair->client_connection(handle)->tls()->alpn(), "perf");
  RecordingHandler handler;
  const uint64_t id = perf.client->request(handle, 10 * kMegabyte, 0, &handler);
  EXPECT_NE(id, 0u);
  // Opened at once on an established connection: the first bidi stream.
  ASSERT_EQ(handler.streams.count(id), 1u);
  EXPECT_EQ(handler.streams[id], 0u);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(id) == 1; }));

  const PerfOutcome& outcome = handler.outcomes[id];
  EXPECT_EQ(outcome.result, PerfResult::kOk);
  EXPECT_EQ(outcome.bytes_received, 10 * kMegabyte);
  EXPECT_EQ(perf.client->counters().response_bytes_received, 10 * kMegabyte);
  EXPECT_EQ(perf.client->counters().requests_ok, 1u);
  EXPECT_EQ(perf.client->counters().requests_failed, 0u);
  EXPECT_EQ(perf.client->progress(id), std::nullopt);
  EXPECT_EQ(perf.client->live_requests(), 0u);
  EXPECT_EQ(perf.server->streams_completed(), 1u);
  EXPECT_EQ(perf.server->bytes_sent(), 10 * kMegabyte);
  EXPECT_EQ(perf.server->uploads_bytes_received(), 0u);
  EXPECT_EQ(perf.server->ignored_streams(), 0u);
  EXPECT_EQ(perf.server->live_streams(), 0u);
  // The client's request was the 8-byte size and nothing else.
  const conn::Connection* server = perf.pair->server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->stats().stream_bytes_received, 8u);
}

TEST(PerfAppTest, ContentIsCheckedAgainstTheSyntheticBody) {
  // The pattern the server sends is what the client checks: spot checks of
  // the block against synthetic_byte at offsets that are not multiples of
  // the period (the server's views start at offset % 64).
  const auto block = synthetic_block();
  for (uint64_t offset : {0ull, 1ull, 63ull, 64ull, 65535ull, 10'000'001ull}) {
    const size_t start = offset % kSyntheticPeriod;
    EXPECT_EQ(block[start], synthetic_byte(offset));
    EXPECT_EQ(block[start + 1000], synthetic_byte(offset + 1000));
  }
  EXPECT_TRUE(matches_synthetic(130, block.subspan(130 % kSyntheticPeriod, 5000)));
  EXPECT_FALSE(matches_synthetic(131, block.subspan(130 % kSyntheticPeriod, 5000)));
}

TEST(PerfAppTest, LongSpansAreCheckedByteForByteAcrossBlockSteps) {
  // Longer than one memcmp step of the block, at an odd offset: every byte
  // position, the last included, must be checked.
  constexpr uint64_t kOffset = 1'000'003;
  std::vector<uint8_t> body(3 * kSyntheticBlockSize + 17);
  for (size_t i = 0; i < body.size(); ++i) body[i] = synthetic_byte(kOffset + i);
  EXPECT_TRUE(matches_synthetic(kOffset, body));
  EXPECT_TRUE(matches_synthetic(kOffset, std::span<const uint8_t>()));
  for (size_t position : {size_t{0}, kSyntheticBlockSize - kSyntheticPeriod - 1,
                          kSyntheticBlockSize - kSyntheticPeriod, body.size() - 1}) {
    body[position] ^= 1;
    EXPECT_FALSE(matches_synthetic(kOffset, body)) << position;
    body[position] ^= 1;
  }
  EXPECT_FALSE(matches_synthetic(kOffset + 1, body));
}

TEST(PerfAppTest, FiftyConcurrentStreams) {
  constexpr uint64_t kStreams = 50;
  PerfPair perf;
  const auto handle = perf.connect();
  RecordingHandler handler;
  std::vector<uint64_t> ids;
  uint64_t expected_bytes = 0;
  for (uint64_t i = 0; i < kStreams; ++i) {
    const uint64_t size = 20'000 + i * 7'919;  // not multiples of the chunk or period
    expected_bytes += size;
    ids.push_back(perf.client->request(handle, size, 0, &handler));
  }
  // All 50 are on their own streams before any response arrived.
  ASSERT_EQ(handler.streams.size(), kStreams);
  std::set<uint64_t> streams;
  for (const auto& [id, stream] : handler.streams) streams.insert(stream);
  EXPECT_EQ(streams.size(), kStreams);
  EXPECT_EQ(*streams.rbegin(), 4 * (kStreams - 1));
  size_t in_progress_at_first_completion = 0;
  ASSERT_TRUE(perf.pair->run_until([&] {
    if (in_progress_at_first_completion == 0 && !handler.outcomes.empty()) {
      in_progress_at_first_completion = perf.client->live_requests();
    }
    return handler.outcomes.size() == kStreams;
  }));
  // They were answered together, not one after another.
  EXPECT_GE(in_progress_at_first_completion, kStreams / 2);
  for (uint64_t i = 0; i < kStreams; ++i) {
    const PerfOutcome& outcome = handler.outcomes[ids[i]];
    EXPECT_EQ(outcome.result, PerfResult::kOk) << "request " << i;
    EXPECT_EQ(outcome.bytes_received, 20'000 + i * 7'919) << "request " << i;
  }
  EXPECT_EQ(perf.client->counters().response_bytes_received, expected_bytes);
  EXPECT_EQ(perf.server->streams_completed(), kStreams);
  EXPECT_EQ(perf.server->bytes_sent(), expected_bytes);
  EXPECT_EQ(perf.server->live_streams(), 0u);
}

TEST(PerfAppTest, OneMegabyteUploadThenOneKilobyteResponse) {
  PerfPair perf;
  const auto handle = perf.connect();
  RecordingHandler handler;
  const uint64_t id = perf.client->request(handle, 1024, kMegabyte, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(id) == 1; }));
  EXPECT_EQ(handler.outcomes[id].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[id].bytes_received, 1024u);
  EXPECT_EQ(perf.client->counters().upload_bytes_sent, kMegabyte);
  EXPECT_EQ(perf.server->uploads_bytes_received(), kMegabyte);
  EXPECT_EQ(perf.server->bytes_sent(), 1024u);
  const conn::Connection* server = perf.pair->server_connection();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->stats().stream_bytes_received, kMegabyte + 8);
  // A zero-size response to an upload: FIN alone.
  const uint64_t empty = perf.client->request(handle, 0, 5000, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(empty) == 1; }));
  EXPECT_EQ(handler.outcomes[empty].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[empty].bytes_received, 0u);
  EXPECT_EQ(perf.server->uploads_bytes_received(), kMegabyte + 5000);
  EXPECT_EQ(perf.server->streams_completed(), 2u);
}

TEST(PerfAppTest, StreamFinishedBeforeEightBytesIsIgnored) {
  transmit::ChunkPool raw_pool(64, 1);  // outlives the connections
  PerfPair perf;
  const auto handle = perf.connect();
  RecordingHandler handler;
  const uint64_t before = perf.client->request(handle, 30'000, 0, &handler);

  // A stream with 5 bytes and FIN, opened outside the perf client.
  const auto raw = perf.pair->client->open_stream(handle, conn::StreamDirection::kBidirectional);
  ASSERT_TRUE(raw.has_value());
  static const std::array<uint8_t, 5> kFiveBytes = {0, 0, 0, 0, 1};
  ASSERT_EQ(perf.pair->client->send(handle, *raw, raw_pool.copy_from(kFiveBytes), true),
            conn::SendResult::kOk);
  const uint64_t after = perf.client->request(handle, 40'000, 100, &handler);

  bool raw_reset = false;
  uint64_t raw_reset_code = 0;
  uint64_t raw_bytes = 0;
  bool raw_fin = false;
  perf.client_observer = [&](const endpoint::EndpointEvent& event) {
    if (event.event.stream_id != *raw) return;
    if (event.event.type == conn::ConnectionEventType::kStreamReset) {
      raw_reset = true;
      raw_reset_code = event.event.error_code;
    }
    std::array<uint8_t, 1024> scratch;
    bool fin = false;
    for (size_t n; !fin && (n = perf.pair->client->read(handle, *raw, scratch, fin)) != 0;) {
      raw_bytes += n;
    }
    raw_fin = raw_fin || fin;
  };
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.size() == 2 && raw_reset; }));
  // The server answered nothing on it and reset its side with the
  // documented code; the requests around it were served.
  EXPECT_EQ(raw_reset_code, kPerfIncompleteRequest);
  EXPECT_EQ(raw_bytes, 0u);
  EXPECT_FALSE(raw_fin);
  EXPECT_EQ(perf.server->ignored_streams(), 1u);
  EXPECT_EQ(perf.server->uploads_bytes_received(), 100u);
  EXPECT_EQ(handler.outcomes[before].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[before].bytes_received, 30'000u);
  EXPECT_EQ(handler.outcomes[after].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[after].bytes_received, 40'000u);
  EXPECT_EQ(perf.server->streams_completed(), 2u);
  EXPECT_EQ(perf.server->live_streams(), 0u);
  // Both sides let the stream go: the server holds no stream of it.
  ASSERT_TRUE(perf.pair->run_until(
      [&] { return perf.pair->server_connection()->open_stream_count() == 0; }));
}

TEST(PerfAppTest, ServerResetMidDownloadGivesResetOutcome) {
  constexpr uint64_t kResetCode = 0x55;
  PerfPair perf;
  const auto handle = perf.connect();
  ASSERT_EQ(perf.server_handles.size(), 1u);
  const auto server_handle = perf.server_handles[0];
  RecordingHandler handler;
  const uint64_t id = perf.client->request(handle, uint64_t{1} << 30, 0, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] {
    const auto progress = perf.client->progress(id);
    return progress && progress->bytes_received >= 200'000;
  }));
  ASSERT_EQ(perf.server->live_streams(), 1u);
  ASSERT_TRUE(perf.server->abort_stream(server_handle, handler.streams[id], kResetCode));
  EXPECT_FALSE(perf.server->abort_stream(server_handle, handler.streams[id], kResetCode));
  EXPECT_EQ(perf.server->live_streams(), 0u);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(id) == 1; }));
  const PerfOutcome& outcome = handler.outcomes[id];
  EXPECT_EQ(outcome.result, PerfResult::kReset);
  EXPECT_EQ(outcome.error_code, kResetCode);
  EXPECT_GE(outcome.bytes_received, 200'000u);
  EXPECT_LT(outcome.bytes_received, uint64_t{1} << 30);
  EXPECT_EQ(perf.client->counters().requests_failed, 1u);

  // The connection serves the next request.
  const uint64_t next = perf.client->request(handle, 100'000, 0, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(next) == 1; }));
  EXPECT_EQ(handler.outcomes[next].result, PerfResult::kOk);
  EXPECT_EQ(handler.outcomes[next].bytes_received, 100'000u);
  EXPECT_EQ(perf.server->live_streams(), 0u);
  EXPECT_EQ(perf.server->counters().abandoned_streams, 1u);
}

TEST(PerfAppTest, ClosedConnectionCompletesItsRequests) {
  PerfPair perf;
  const auto handle = perf.connect();
  RecordingHandler handler;
  const uint64_t id = perf.client->request(handle, uint64_t{1} << 30, 0, &handler);
  ASSERT_TRUE(perf.pair->run_until([&] {
    const auto progress = perf.client->progress(id);
    return progress && progress->bytes_received >= 100'000;
  }));
  perf.pair->server->close(perf.pair->simulator->now(), perf.server_handles[0], 0x33, "bye");
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.count(id) == 1; }));
  EXPECT_EQ(handler.outcomes[id].result, PerfResult::kClosed);
  EXPECT_EQ(handler.outcomes[id].error_code, 0x33u);
  EXPECT_EQ(perf.client->live_requests(), 0u);
  // A request on the closed handle fails from the next pump, not inside
  // request().
  const uint64_t late = perf.client->request(handle, 10, 0, &handler);
  EXPECT_EQ(handler.outcomes.count(late), 0u);
  perf.client->pump(perf.pair->simulator->now());
  ASSERT_EQ(handler.outcomes.count(late), 1u);
  EXPECT_EQ(handler.outcomes[late].result, PerfResult::kClosed);
  ASSERT_TRUE(perf.pair->run_until([&] { return perf.server->live_streams() == 0; }));
}

TEST(PerfAppTest, RequestsBeyondTheStreamLimitWaitForCredit) {
  harness::PairOptions options;
  options.server.connection.transport.initial_max_streams_bidi = 4;
  PerfPair perf(options);
  const auto handle = perf.connect();
  RecordingHandler handler;
  for (int i = 0; i < 40; ++i) perf.client->request(handle, 3000 + i, 0, &handler);
  EXPECT_EQ(handler.streams.size(), 4u);
  ASSERT_TRUE(perf.pair->run_until([&] { return handler.outcomes.size() == 40; }));
  for (const auto& [id, outcome] : handler.outcomes) EXPECT_EQ(outcome.result, PerfResult::kOk);
  EXPECT_EQ(perf.server->streams_completed(), 40u);
}

TEST(PerfAppTest, BadChunkSizeIsRefusedAtConstruction) {
  PerfPair perf;
  PerfServerConfig server_config;
  server_config.chunk_size = kSyntheticBlockSize;
  EXPECT_THROW(PerfServer(*perf.pair->server, server_config), std::invalid_argument);
  PerfClientConfig client_config;
  client_config.chunk_size = 0;
  EXPECT_THROW(PerfClient(*perf.pair->client, client_config), std::invalid_argument);
}

}  // namespace
}  // namespace dpquic::dataplane
