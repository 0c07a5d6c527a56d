// The perf server and client allocate nothing per stream once warm: 2000
// sequential request/response streams (each with a small upload) on one
// connection, every heap allocation of the whole process counted.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>

#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/app/synthetic_body.h"
#include "tests/dataplane/app/perf_test_pair.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::dataplane {
namespace {

// One request at a time, each issued from inside the previous one's
// on_complete, until `count` more have been made.
class SequentialRequests final : public PerfResponseHandler {
 public:
  SequentialRequests(PerfClient& client, endpoint::ConnectionHandle handle)
      : client_(client), handle_(handle) {}
  void start(uint64_t count) {
    remaining_ = count;
    next();
  }
  void on_complete(uint64_t, const PerfOutcome& outcome) override {
    ++completed_;
    if (outcome.result != PerfResult::kOk || outcome.bytes_received != size_) ++failures_;
    if (remaining_ != 0) next();
  }
  uint64_t completed() const { return completed_; }
  uint64_t failures() const { return failures_; }
  bool idle() const { return remaining_ == 0 && client_.live_requests() == 0; }

 private:
  void next() {
    --remaining_;
    size_ = 1000 + (completed_ * 797) % 3000;  // 1000 .. 3999 bytes
    client_.request(handle_, size_, 300, this);
  }

  PerfClient& client_;
  endpoint::ConnectionHandle handle_;
  uint64_t remaining_ = 0;
  uint64_t size_ = 0;
  uint64_t completed_ = 0;
  uint64_t failures_ = 0;
};

// The same exchange without the perf apps, written directly against the
// endpoints: what the QUIC stack itself allocates per stream. (quic/conn
// creates each stream's send and receive state when the stream opens.)
class RawExchange {
 public:
  RawExchange(harness::QuicPair& pair, endpoint::ConnectionHandle handle)
      : pair_(pair), handle_(handle) {}
  void attach() {
    pair_.server_node->set_application([this](Instant) { serve(); });
    pair_.client_node->set_application([this](Instant) { drive(); });
  }
  void start(uint64_t count) {
    remaining_ = count;
    drive();
  }
  bool idle() const { return remaining_ == 0 && !stream_; }
  uint64_t completed() const { return completed_; }
  uint64_t failures() const { return failures_; }

 private:
  // A pool that outlives the endpoints holding its chunks.
  static transmit::ChunkPool& pool() {
    static auto* pool = new transmit::ChunkPool(8, 64, 256);
    return *pool;
  }
  void drive() {
    endpoint::EndpointEvent event;
    while (pair_.client->poll_event(event)) {
      if (event.event.type != conn::ConnectionEventType::kStreamReadable || !stream_ ||
          event.event.stream_id != *stream_) {
        continue;
      }
      bool fin = false;
      for (size_t n; !fin && (n = pair_.client->read(handle_, *stream_, scratch_, fin)) != 0;) {
        if (!matches_synthetic(received_, {scratch_.data(), n})) ++failures_;
        received_ += n;
      }
      if (fin) {
        if (received_ != size_) ++failures_;
        ++completed_;
        stream_.reset();
      }
    }
    if (stream_ || remaining_ == 0) return;
    stream_ = pair_.client->open_stream(handle_, conn::StreamDirection::kBidirectional);
    if (!stream_) return;
    --remaining_;
    size_ = 1000 + (completed_ * 797) % 3000;
    received_ = 0;
    std::array<uint8_t, 8> header;
    for (size_t i = 0; i < 8; ++i) header[i] = static_cast<uint8_t>(size_ >> (56 - 8 * i));
    (void)pair_.client->send(handle_, *stream_, pool().copy_from(header), false);
    (void)pair_.client->send(handle_, *stream_,
                             pool().adopt(synthetic_block().data(), 300, nullptr, nullptr), true);
  }
  void serve() {
    endpoint::EndpointEvent event;
    while (pair_.server->poll_event(event)) {
      if (event.event.type != conn::ConnectionEventType::kStreamReadable) continue;
      bool fin = false;
      while (!fin &&
             pair_.server->read(event.connection, event.event.stream_id, scratch_, fin) != 0) {
      }
      if (!fin) continue;
      (void)pair_.server->send(event.connection, event.event.stream_id,
                               pool().adopt(synthetic_block().data(), size_, nullptr, nullptr),
                               true);
    }
  }

  harness::QuicPair& pair_;
  endpoint::ConnectionHandle handle_;
  std::optional<uint64_t> stream_;
  uint64_t remaining_ = 0;
  uint64_t size_ = 0;
  uint64_t received_ = 0;
  uint64_t completed_ = 0;
  uint64_t failures_ = 0;
  std::array<uint8_t, 8192> scratch_;
};

TEST(PerfAllocationTest, TwoThousandSequentialStreamsAllocateNothingOnceWarm) {
  constexpr uint64_t kStreams = 2000;
  testing::PerfPair perf;
  const auto handle = perf.connect();
  SequentialRequests requests(*perf.client, handle);
  const std::function<bool()> idle = [&] { return requests.idle(); };

  requests.start(500);  // warm-up: pools, tables, rings reach their sizes
  ASSERT_TRUE(perf.pair->run_until(idle));
  ASSERT_EQ(requests.completed(), 500u);

  size_t with_apps = 0;
  bool finished = false;
  {
    dpquic::testing::AllocationWindow window;
    requests.start(kStreams);
    finished = perf.pair->run_until(idle);
    with_apps = window.count();
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(requests.completed(), 500 + kStreams);
  EXPECT_EQ(requests.failures(), 0u);
  EXPECT_EQ(perf.server->streams_completed(), 500 + kStreams);
  EXPECT_EQ(perf.server->uploads_bytes_received(), (500 + kStreams) * 300);
  EXPECT_EQ(perf.server->live_streams(), 0u);
  EXPECT_EQ(perf.client->live_requests(), 0u);

  // The same streams without the apps, on the same connection.
  RawExchange raw(*perf.pair, handle);
  raw.attach();
  const std::function<bool()> raw_idle = [&] { return raw.idle(); };
  raw.start(100);
  ASSERT_TRUE(perf.pair->run_until(raw_idle));
  size_t stack_only = 0;
  {
    dpquic::testing::AllocationWindow window;
    raw.start(kStreams);
    finished = perf.pair->run_until(raw_idle);
    stack_only = window.count();
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(raw.completed(), 100 + kStreams);
  EXPECT_EQ(raw.failures(), 0u);
  const conn::Connection* client = perf.pair->client_connection(handle);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->stream_limits().local_opened_count(conn::StreamDirection::kBidirectional),
            600 + 2 * kStreams);

  std::printf("%zu allocations with the perf apps, %zu by the QUIC stack alone (%.1f per stream)\n",
              with_apps, stack_only, static_cast<double>(stack_only) / kStreams);
  // The apps add nothing to what the stack allocates when a stream opens.
  EXPECT_EQ(with_apps, stack_only);
}

}  // namespace
}  // namespace dpquic::dataplane
