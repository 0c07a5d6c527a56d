// RFC 9218 priorities end to end through H3Server and the transport's stream
// scheduler, counting bytes in the server's built packets (no timing):
// PRIORITY_UPDATE accepted for every stream the client may open (also past
// the initial limit once MAX_STREAMS raised it) and refused with H3_ID_ERROR
// beyond; a more urgent response overtakes a less urgent one in flight;
// non-incremental responses of equal urgency go one after another;
// incremental ones share; PRIORITY_UPDATE reorders responses in flight.

#include <gtest/gtest.h>
#include <nghttp3/nghttp3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quic/conn/connection_trace.h"
#include "quic/wire/frame_codec.h"
#include "tests/dataplane/app/h3_test_pair.h"

namespace dpquic::dataplane::testing {
namespace {

constexpr uint64_t kH3IdError = 0x108;

// The STREAM frames a connection builds, in order (headers only: the data
// is not in place yet, see connection_trace.h).
class StreamFrameLog final : public conn::ConnectionTracer {
 public:
  struct Sent {
    uint64_t stream_id;
    uint64_t offset;
    uint64_t length;
    bool fin;
  };
  void on_packet_built(Instant, wire::PacketType, uint64_t,
                       std::span<const uint8_t> frames) override {
    wire::FrameDecoder decoder(frames);
    wire::Frame frame;
    while (!decoder.done() && decoder.next(frame) == wire::WireError::kOk) {
      if (frame.type != wire::FrameType::kStream) continue;
      sent.push_back({frame.stream.stream_id, frame.stream.offset, frame.stream.data.size(),
                      frame.stream.fin});
    }
  }
  // Bytes of `stream` in sent[from, to).
  uint64_t bytes_of(uint64_t stream, size_t from, size_t to) const {
    uint64_t total = 0;
    for (size_t i = from; i < to && i < sent.size(); ++i) {
      if (sent[i].stream_id == stream) total += sent[i].length;
    }
    return total;
  }
  // Index one past the frame carrying `stream`'s FIN, or nullopt.
  std::optional<size_t> end_of(uint64_t stream) const {
    for (size_t i = 0; i < sent.size(); ++i) {
      if (sent[i].stream_id == stream && sent[i].fin) return i + 1;
    }
    return std::nullopt;
  }
  std::vector<Sent> sent;
};

H3Request get(const std::string& path, const std::string& priority = {}) {
  H3Request request;
  request.authority = "localhost";
  request.path = path;
  if (!priority.empty()) request.fields.emplace_back("priority", priority);
  return request;
}

// Client receive windows large enough that flow control never blocks a
// response here: the priority order is then the only order.
harness::PairOptions wide_windows() {
  harness::PairOptions options = h3_pair_options();
  conn::TransportConfig& client = options.client.connection.transport;
  client.initial_max_data = 256 << 20;
  client.max_connection_window = 256 << 20;
  client.initial_max_stream_data = 64 << 20;
  client.max_stream_window = 64 << 20;
  // A 100 Mbit/s path: the server's sending follows the link, so a response
  // is still being sent when a later request or update arrives.
  options.server_to_client.bandwidth_bps = 100'000'000;
  options.server_to_client.queue_bytes = 512 * 1024;
  return options;
}

// An H3 pair whose server connection logs its STREAM frames and notes when
// the server has taken `arrival_after_` requests (index into the log).
class H3PriorityTest : public ::testing::Test {
 protected:
  H3PriorityTest() : h3_({}, wide_windows()) {}
  void SetUp() override {
    handle_ = h3_.connect();
    server_ = h3_.pair.server_connection();
    ASSERT_NE(server_, nullptr);
    server_->set_tracer(&log_);
    h3_.pair.server_node->set_application([this](Instant now) {
      run_application(*h3_.pair.server, h3_.server, now);
      if (!arrival_ && h3_.server.stats().requests >= arrival_after_) arrival_ = log_.sent.size();
    });
  }
  void TearDown() override {
    if (h3_.pair.server_connection() == server_) server_->set_tracer(nullptr);
  }
  uint64_t request(const H3Request& request) {
    return h3_.client.request(handle_, request, &recorder_);
  }
  uint64_t stream_of(uint64_t request_index) const { return 4 * request_index; }
  // Runs until the client received `bytes` of the response to `id`.
  bool run_until_received(uint64_t id, uint64_t bytes) {
    return h3_.pair.run_until([&] { return recorder_[id].received >= bytes; });
  }

  H3Pair h3_;
  endpoint::ConnectionHandle handle_ = 0;
  conn::Connection* server_ = nullptr;
  StreamFrameLog log_;
  ResponseRecorder recorder_;
  uint64_t arrival_after_ = UINT64_MAX;  // the request count that marks an arrival
  std::optional<size_t> arrival_;
};

TEST_F(H3PriorityTest, UrgentResponseOvertakesALessUrgentOneInFlight) {
  const uint64_t background = request(get("/50000000", "u=7"));
  ASSERT_TRUE(run_until_received(background, 2'000'000));
  arrival_after_ = 2;
  const uint64_t urgent = request(get("/100000", "u=0"));
  ASSERT_TRUE(h3_.run_until_completed(recorder_, 1));
  EXPECT_EQ(recorder_[urgent].outcome.result, H3Result::kOk);
  EXPECT_EQ(recorder_[urgent].received, 100'000u);
  EXPECT_TRUE(recorder_[urgent].synthetic_matches);
  EXPECT_FALSE(recorder_[background].done);

  ASSERT_TRUE(arrival_.has_value());
  const std::optional<size_t> urgent_end = log_.end_of(stream_of(1));
  ASSERT_TRUE(urgent_end.has_value());
  // The body and its HEADERS and DATA frame headers.
  EXPECT_GT(log_.bytes_of(stream_of(1), *arrival_, *urgent_end), 100'000u);
  // The documented depth: a less urgent response sends nothing while a
  // more urgent one has bytes and flow-control credit.
  EXPECT_EQ(log_.bytes_of(stream_of(0), *arrival_, *urgent_end), 0u);
  EXPECT_EQ(server_->stream_priority(stream_of(0))->urgency, 7);
  EXPECT_FALSE(server_->stream_priority(stream_of(0))->incremental);
}

TEST_F(H3PriorityTest, NonIncrementalResponsesOfEqualUrgencyGoOneAfterAnother) {
  // No priority header: RFC 9218's default, u=3 and not incremental.
  const uint64_t first = request(get("/3000000"));
  const uint64_t second = request(get("/3000000"));
  ASSERT_TRUE(h3_.run_until_completed(recorder_, 2));
  EXPECT_EQ(recorder_[first].received, 3'000'000u);
  EXPECT_EQ(recorder_[second].received, 3'000'000u);
  const std::optional<size_t> first_end = log_.end_of(stream_of(0));
  ASSERT_TRUE(first_end.has_value());
  EXPECT_EQ(log_.bytes_of(stream_of(1), 0, *first_end), 0u);
}

TEST_F(H3PriorityTest, IncrementalResponsesOfEqualUrgencyShare) {
  request(get("/3000000", "u=3, i"));
  request(get("/3000000", "u=3, i"));
  ASSERT_TRUE(h3_.run_until_completed(recorder_, 2));
  const size_t first_end = std::min(*log_.end_of(stream_of(0)), *log_.end_of(stream_of(1)));
  const uint64_t a = log_.bytes_of(stream_of(0), 0, first_end);
  const uint64_t b = log_.bytes_of(stream_of(1), 0, first_end);
  // Round-robin a packet at a time: both well under way before either ends.
  EXPECT_GT(a, 2'500'000u);
  EXPECT_GT(b, 2'500'000u);
}

TEST_F(H3PriorityTest, PriorityUpdateReordersResponsesInFlight) {
  // The second body fits in the transport's send buffer per stream (4 MiB),
  // so that once more urgent it never runs dry before its end.
  const uint64_t first = request(get("/40000000", "u=3"));
  const uint64_t second = request(get("/3000000", "u=5"));
  ASSERT_TRUE(run_until_received(first, 500'000));
  EXPECT_EQ(recorder_[second].received, 0u);
  EXPECT_FALSE(recorder_[first].done);
  ASSERT_TRUE(h3_.client.update_priority(handle_, second, 0, false));
  const size_t before = log_.sent.size();
  ASSERT_TRUE(h3_.pair.run_until([&] {
    const std::optional<conn::StreamPriority> priority = server_->stream_priority(stream_of(1));
    return priority && priority->urgency == 0;
  }));
  const size_t updated = log_.sent.size();
  ASSERT_TRUE(h3_.run_until_completed(recorder_, 2));
  const std::optional<size_t> second_end = log_.end_of(stream_of(1));
  const std::optional<size_t> first_end = log_.end_of(stream_of(0));
  ASSERT_TRUE(second_end && first_end);
  EXPECT_LT(*second_end, *first_end);
  EXPECT_EQ(log_.bytes_of(stream_of(0), updated, *second_end), 0u);
  EXPECT_GT(log_.bytes_of(stream_of(0), before, *first_end), 0u);
}

// PRIORITY_UPDATE for request streams within the limit, including streams
// beyond the initial one once MAX_STREAMS raised it: accepted, applied.
TEST(H3PriorityLimitTest, PriorityUpdateAcceptedUpToTheRaisedStreamLimit) {
  harness::PairOptions options = h3_pair_options();
  options.server.connection.transport.initial_max_streams_bidi = 8;
  H3Pair h3({}, options);
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  // Eight requests use the initial limit; the server raises it as they end.
  for (int i = 0; i < 8; ++i) h3.get(handle, "/1000", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, 8));
  ASSERT_TRUE(h3.pair.run_until([&] {
    const conn::Connection* server = h3.pair.server_connection();
    return server->stream_limits().advertised_max_streams(conn::StreamDirection::kBidirectional) >
           10;
  }));
  // Request index 10 (stream 40): past the initial limit of 8.
  h3.get(handle, "/1000", recorder);
  h3.get(handle, "/1000", recorder);
  H3Request big;
  big.authority = "localhost";
  big.path = "/20000000";
  const uint64_t id = h3.client.request(handle, big, &recorder);
  ASSERT_TRUE(h3.pair.run_until([&] { return recorder[id].received > 0; }));
  ASSERT_TRUE(h3.client.update_priority(handle, id, 1, true));
  ASSERT_TRUE(h3.pair.run_until([&] {
    const auto priority = h3.pair.server_connection()->stream_priority(40);
    return priority && priority->urgency == 1;
  }));
  EXPECT_TRUE(h3.pair.server_connection()->stream_priority(40)->incremental);
  ASSERT_TRUE(h3.run_until_completed(recorder, 11));
  EXPECT_EQ(recorder[id].outcome.result, H3Result::kOk);
  EXPECT_EQ(recorder[id].received, 20'000'000u);
  EXPECT_EQ(h3.server.stats().connection_errors, 0u);
}

// A client that speaks HTTP/3 by hand: its control stream carries SETTINGS
// and one PRIORITY_UPDATE (RFC 9218 §7.1, frame type 0xF0700) naming
// `element_id`.
std::vector<uint8_t> control_stream_with_priority_update(uint8_t element_id) {
  return {0x00,                          // stream type: control
          0x04,       0x00,              // SETTINGS, empty
          0x80,       0x0f, 0x07, 0x00,  // PRIORITY_UPDATE (request stream), a 4-byte varint
          0x04,                          // length
          element_id, 'u',  '=',  '1'};
}

// Returns the application error the server closed with, or nullopt if the
// connection is still open after a second. With `hide_limit_events` the
// server application never sees kPeerStreamLimit (as when they come before
// the ALPN is known and reach no application).
std::optional<uint64_t> send_priority_update(uint8_t element_id, bool hide_limit_events = false) {
  harness::PairOptions options = h3_pair_options();
  options.server.connection.transport.initial_max_streams_bidi = 8;
  harness::QuicPair pair(options);
  H3Server server(*pair.server, {});
  std::optional<uint64_t> closed_with;
  pair.server_node->set_application([&](Instant now) {
    endpoint::EndpointEvent event;
    while (pair.server->poll_event(event)) {
      if (hide_limit_events && event.event.type == conn::ConnectionEventType::kPeerStreamLimit) {
        continue;
      }
      server.on_event(now, event);
    }
    server.pump(now);
  });
  pair.client_node->set_application([&](Instant) {
    endpoint::EndpointEvent event;
    while (pair.client->poll_event(event)) {
      if (event.event.type == conn::ConnectionEventType::kClosed) {
        closed_with = event.event.error_code;
      }
    }
  });
  const auto handle = pair.connect();
  EXPECT_TRUE(pair.run_until([&] {
    const conn::Connection* c = pair.client_connection(handle);
    return c != nullptr && c->handshake_confirmed();
  }));
  const auto stream = pair.client->open_stream(handle, conn::StreamDirection::kUnidirectional);
  EXPECT_TRUE(stream.has_value());
  const std::vector<uint8_t> bytes = control_stream_with_priority_update(element_id);
  transmit::ChunkPool chunks(bytes.size(), 0, 4);
  pair.client->send(handle, *stream, chunks.adopt(bytes.data(), bytes.size(), nullptr, nullptr),
                    false);
  pair.run_until([&] { return closed_with.has_value(); }, kSecond);
  pair.server->reset_connections();
  pair.client->reset_connections();
  return closed_with;
}

TEST(H3PriorityLimitTest, PriorityUpdateWithinTheLimitKeepsTheConnection) {
  // Stream 28 is the eighth request stream: within the initial limit.
  EXPECT_EQ(send_priority_update(28), std::nullopt);
}

TEST(H3PriorityLimitTest, TheLimitIsReadNotOnlyReported) {
  EXPECT_EQ(send_priority_update(28, /*hide_limit_events=*/true), std::nullopt);
}

TEST(H3PriorityLimitTest, PriorityUpdateBeyondTheLimitIsAnIdError) {
  // Stream 32 would be the ninth: the client cannot have opened it.
  EXPECT_EQ(send_priority_update(32), kH3IdError);
}

}  // namespace
}  // namespace dpquic::dataplane::testing
