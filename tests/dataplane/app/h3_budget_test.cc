// What one HTTP/3 connection can make the file server hold, and that the
// others are served meanwhile:
// - a client that grants no flow-control credit (initial_max_stream_data 0)
//   pins two pool buffers per file response, not the response's 64;
// - one making 100 such requests holds max_files_per_connection (32)
//   descriptors and twice as many buffers; the rest of its requests wait
//   (not fail), and another connection's download is served byte for byte;
//   when it cancels, the waiting requests take the freed slots, and when it
//   cancels everything, everything comes back;
// - a client that does read has its requests beyond the file cap answered
//   as slots free, the most urgent first, and every body is byte-exact;
// - a connection's file responses together have at most
//   max_buffers_per_connection (128) pool buffers in flight.
// Descriptors are counted in /proc/self/fd, buffers in the pool.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dataplane/app/mime_types.h"
#include "tests/dataplane/app/h3_two_clients.h"
#include "tests/util/descriptor_limit.h"
#include "tests/util/temp_dir.h"

namespace dpquic::dataplane::testing {
namespace {

using ::dpquic::testing::open_descriptors;
using ::dpquic::testing::TempDir;

std::vector<uint8_t> random_bytes(size_t size, uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return bytes;
}

// A client endpoint that grants no credit on any stream, ever (it never
// receives a byte, so its windows never move).
conn::TransportConfig no_credit() {
  conn::TransportConfig transport;
  transport.initial_max_stream_data = 0;
  return transport;
}

// Buffers taken from the server's pool (the stager's current one included).
size_t pool_in_use(const H3Server& server) {
  return server.pool().buffer_count() - server.pool().free_buffers();
}

class H3BudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    big_ = random_bytes(3 * 1024 * 1024 + 17, 11);
    mid_ = random_bytes(1024 * 1024 + 5, 12);
    root_.write("big.bin", big_);
    root_.write("mid.bin", mid_);
  }

  H3ServerConfig config() const {
    H3ServerConfig server_config;
    server_config.root = root_.path();
    server_config.mime_types = std::make_shared<const MimeTypes>(MimeTypes::load());
    return server_config;
  }

  // The second client downloads big.bin: it must be whole and byte-exact.
  void expect_served(H3TwoClients& rig) {
    ResponseRecorder recorder(/*keep_bodies=*/true);
    const uint64_t id = rig.get(*rig.second, "/big.bin", recorder);
    ASSERT_TRUE(rig.run_until([&] { return recorder.completed() == 1; }));
    EXPECT_EQ(recorder[id].outcome.result, H3Result::kOk);
    EXPECT_EQ(recorder[id].status, 200);
    ASSERT_EQ(recorder[id].body.size(), big_.size());
    EXPECT_TRUE(recorder[id].body == big_);
  }

  TempDir root_{"h3budget"};
  std::vector<uint8_t> big_;
  std::vector<uint8_t> mid_;
};

TEST_F(H3BudgetTest, ReadAheadStopsAtTheClientsCredit) {
  H3TwoClients rig(config(), no_credit(), conn::TransportConfig{});
  rig.connect();
  const auto stingy = rig.server_handle(*rig.first);
  ASSERT_TRUE(stingy);
  ResponseRecorder stuck;
  const uint64_t id = rig.get(*rig.first, "/big.bin", stuck);
  rig.run_for(2 * kSecond);
  // Not even the response's HEADERS got through.
  EXPECT_EQ(stuck.completed(), 0u);
  EXPECT_EQ(stuck[id].headers_calls, 0);
  // What the transport takes beyond zero credit (kSendAheadOfCredit, one
  // buffer) and the one more that makes the wait for credit certain to end:
  // two buffers, where the response may have 64.
  EXPECT_EQ(rig.server->buffers_in_flight(*stingy), 2u);
  EXPECT_LE(pool_in_use(*rig.server), 2u + 1u);  // and the stager's

  expect_served(rig);
  EXPECT_EQ(rig.server->buffers_in_flight(*stingy), 2u);
}

TEST_F(H3BudgetTest, AClientWithoutCreditHoldsAtMostItsShareOfFilesAndBuffers) {
  H3TwoClients rig(config(), no_credit(), conn::TransportConfig{});
  rig.connect();
  const auto stingy = rig.server_handle(*rig.first);
  ASSERT_TRUE(stingy);
  const size_t descriptors = open_descriptors();
  const uint32_t files = H3ServerConfig{}.max_files_per_connection;
  // Incremental, as a browser marks images: the responses take turns, so
  // each would read ahead (non-incremental ones go one after another).
  ResponseRecorder stuck;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 100; ++i) {
    ids.push_back(rig.get(*rig.first, "/big.bin", stuck, {{"priority", "i"}}));
  }
  rig.run_for(2 * kSecond);
  EXPECT_EQ(stuck.completed(), 0u);
  EXPECT_EQ(rig.server->open_files(*stingy), files);
  EXPECT_EQ(open_descriptors() - descriptors, files);
  EXPECT_EQ(rig.server->buffers_in_flight(*stingy), 2u * files);
  EXPECT_LE(pool_in_use(*rig.server), 2u * files + 1u);
  EXPECT_EQ(rig.server->stats().file_waits, 100u - files);
  EXPECT_EQ(rig.server->open_request_count(), 100u);  // waiting, not refused

  expect_served(rig);

  // Ten of the responses holding a file are cancelled: ten waiting requests
  // take their slots.
  for (size_t i = 0; i < 10; ++i) EXPECT_TRUE(rig.first->h3.cancel(rig.first->handle, ids[i]));
  rig.run_for(kSecond);
  EXPECT_EQ(rig.server->open_request_count(), 90u);
  EXPECT_EQ(rig.server->open_files(*stingy), files);
  EXPECT_EQ(open_descriptors() - descriptors, files);
  EXPECT_EQ(rig.server->buffers_in_flight(*stingy), 2u * files);

  // Everything cancelled: every descriptor and buffer comes back.
  for (size_t i = 10; i < ids.size(); ++i) {
    EXPECT_TRUE(rig.first->h3.cancel(rig.first->handle, ids[i]));
  }
  rig.run_for(kSecond);
  EXPECT_EQ(rig.server->open_request_count(), 0u);
  EXPECT_EQ(rig.server->open_files(*stingy), 0u);
  EXPECT_EQ(open_descriptors(), descriptors);
  EXPECT_EQ(rig.server->buffers_in_flight(*stingy), 0u);
  EXPECT_EQ(rig.server->stats().responses_5xx, 0u);
}

// Records the order response header sections arrive in.
class OrderRecorder final : public H3ResponseHandler {
 public:
  void on_headers(uint64_t id, int status, std::optional<uint64_t> length) override {
    headers_order.push_back(id);
    recorder.on_headers(id, status, length);
  }
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override {
    recorder.on_body(id, bytes);
  }
  void on_complete(uint64_t id, H3Outcome outcome) override { recorder.on_complete(id, outcome); }

  size_t arrival(uint64_t id) const {
    return static_cast<size_t>(std::find(headers_order.begin(), headers_order.end(), id) -
                               headers_order.begin());
  }

  ResponseRecorder recorder{/*keep_bodies=*/true};
  std::vector<uint64_t> headers_order;
};

TEST_F(H3BudgetTest, RequestsBeyondTheFileCapWaitAndAreServedMostUrgentFirst) {
  H3TwoClients rig(config(), conn::TransportConfig{}, conn::TransportConfig{});
  rig.connect();
  const auto handle = rig.server_handle(*rig.first);
  ASSERT_TRUE(handle);
  const size_t descriptors = open_descriptors();
  const uint32_t files = H3ServerConfig{}.max_files_per_connection;
  // 40 downloads of 1 MiB arrive long before the first one ends: 32 get a
  // file, 8 wait, and the last of those is the most urgent.
  OrderRecorder order;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 40; ++i) {
    H3Request request;
    request.authority = "localhost";
    request.path = "/mid.bin";
    if (i == 39) request.fields = {{"priority", "u=0"}};
    ids.push_back(rig.first->h3.request(rig.first->handle, request, &order));
  }
  size_t most_files = 0;
  size_t most_descriptors = 0;
  ASSERT_TRUE(rig.run_until([&] {
    most_files = std::max(most_files, rig.server->open_files(*handle));
    most_descriptors = std::max(most_descriptors, open_descriptors() - descriptors);
    return order.recorder.completed() == ids.size();
  }));
  EXPECT_EQ(most_files, files);
  EXPECT_EQ(most_descriptors, files);
  EXPECT_EQ(rig.server->stats().file_waits, 40u - files);
  for (uint64_t id : ids) {
    EXPECT_EQ(order.recorder[id].outcome.result, H3Result::kOk) << id;
    EXPECT_EQ(order.recorder[id].status, 200) << id;
    EXPECT_TRUE(order.recorder[id].body == mid_) << id;
  }
  // The urgent request waited like the seven before it, and was answered
  // before them.
  for (size_t i = files; i < 39; ++i) {
    EXPECT_LT(order.arrival(ids[39]), order.arrival(ids[i])) << "request " << i;
  }
  EXPECT_EQ(open_descriptors(), descriptors);
}

TEST_F(H3BudgetTest, AConnectionsFileResponsesShareItsBufferCap) {
  H3TwoClients rig(config(), conn::TransportConfig{}, conn::TransportConfig{});
  rig.connect();
  const auto handle = rig.server_handle(*rig.first);
  ASSERT_TRUE(handle);
  ResponseRecorder recorder(/*keep_bodies=*/true);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(rig.get(*rig.first, "/big.bin", recorder, {{"priority", "i"}}));
  }
  size_t most = 0;
  ASSERT_TRUE(rig.run_until([&] {
    most = std::max(most, rig.server->buffers_in_flight(*handle));
    return recorder.completed() == ids.size();
  }));
  // Eight incremental responses would take 64 each; together they reach
  // the cap.
  EXPECT_EQ(most, H3ServerConfig{}.max_buffers_per_connection);
  for (uint64_t id : ids) {
    EXPECT_EQ(recorder[id].outcome.result, H3Result::kOk);
    ASSERT_EQ(recorder[id].body.size(), big_.size()) << id;
    EXPECT_TRUE(recorder[id].body == big_) << id;
  }
}

}  // namespace
}  // namespace dpquic::dataplane::testing
