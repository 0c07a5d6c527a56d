// Zero-copy reading through the endpoint (Endpoint::peek and consume): the
// bytes come out in order and exact, partial consumes keep the rest, the FIN
// is announced by the piece that ends the stream, flow-control credit
// follows what was consumed (the download is 16 times the windows), and the
// stream is freed once read to its end.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

constexpr uint64_t kDownload = 1 << 20;
constexpr uint64_t kWindow = 64 * 1024;

TEST(ZeroCopyReadTest, PartialConsumesReadAWindowLimitedDownloadExactly) {
  PairOptions options;
  options.client.connection.transport.initial_max_data = kWindow;
  options.client.connection.transport.max_connection_window = kWindow;
  options.client.connection.transport.initial_max_stream_data = kWindow;
  options.client.connection.transport.max_stream_window = kWindow;
  transmit::ChunkPool request_pool(64, 1);  // outlives the connections
  QuicPair pair(options);
  PerfServer server_app(*pair.server);
  pair.server_node->set_application([&](Instant now) { server_app.run(now); });
  const auto handle = pair.connect();

  std::optional<uint64_t> stream;
  uint64_t offset = 0, mismatches = 0, fin_pieces = 0;
  bool done = false;
  pair.client_node->set_application([&](Instant) {
    if (!stream) {
      stream = pair.client->open_stream(handle, conn::StreamDirection::kBidirectional);
      if (!stream) return;
      std::array<uint8_t, 8> request{};
      for (int i = 0; i < 8; ++i) request[7 - i] = static_cast<uint8_t>(kDownload >> (8 * i));
      (void)pair.client->send(handle, *stream, request_pool.copy_from(request), true);
    }
    endpoint::EndpointEvent event;
    while (pair.client->poll_event(event)) {
    }
    for (;;) {
      bool fin = false;
      const auto piece = pair.client->peek(handle, *stream, fin);
      if (piece.empty() && !fin) break;
      if (fin) ++fin_pieces;
      // Half of each piece (at least one byte): the rest must stay.
      const size_t take = piece.size() > 1 ? piece.size() / 2 : piece.size();
      for (size_t i = 0; i < take; ++i) mismatches += piece[i] != perf_byte(offset + i);
      bool end = false;
      const size_t consumed = pair.client->consume(handle, *stream, take, end);
      ASSERT_EQ(consumed, take);
      offset += consumed;
      if (end) {
        done = true;
        break;
      }
    }
  });
  ASSERT_TRUE(pair.run_until([&] { return done; }));
  EXPECT_EQ(offset, kDownload);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GE(fin_pieces, 1u);
  // Read to its end, the stream is gone: nothing more to peek or consume.
  bool fin = true;
  EXPECT_TRUE(pair.client->peek(handle, *stream, fin).empty());
  EXPECT_FALSE(fin);
  EXPECT_EQ(pair.client->consume(handle, *stream, 10, fin), 0u);
  EXPECT_FALSE(fin);
}

TEST(ZeroCopyReadTest, UnknownConnectionsAndStreamsGiveNothing) {
  QuicPair pair;
  const auto handle = pair.connect();
  bool fin = true;
  EXPECT_TRUE(pair.client->peek(handle, 400, fin).empty());
  EXPECT_FALSE(fin);
  fin = true;
  EXPECT_EQ(pair.client->consume(handle, 400, 5, fin), 0u);
  EXPECT_FALSE(fin);
  fin = true;
  EXPECT_TRUE(pair.client->peek(handle + 1000, 0, fin).empty());
  EXPECT_FALSE(fin);
  EXPECT_EQ(pair.client->consume(handle + 1000, 0, 5, fin), 0u);
}

}  // namespace
}  // namespace dpquic::harness
