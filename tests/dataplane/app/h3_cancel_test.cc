// A browser cancels a download with STOP_SENDING and RESET_STREAM
// (H3_REQUEST_CANCELLED). The server must then let go of everything the
// response held, at once rather than at connection close: the request's
// state, the file's descriptor and the pool buffers of its body. The
// connection goes on serving.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dataplane/app/mime_types.h"
#include "tests/dataplane/app/h3_test_pair.h"
#include "tests/util/descriptor_limit.h"
#include "tests/util/temp_dir.h"

namespace dpquic::dataplane::testing {
namespace {

using ::dpquic::testing::open_descriptors;
using ::dpquic::testing::TempDir;

// The in-memory pair's links: 10 ms each way.
constexpr Duration kRoundTrip = 20 * kMillisecond;

class H3CancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 generator(5);
    big_.resize(8 * 1024 * 1024 + 3);
    for (uint8_t& byte : big_) byte = static_cast<uint8_t>(generator());
    root_.write("big.bin", big_);
    root_.write("small.txt", "small");
    H3ServerConfig config;
    config.root = root_.path();
    config.mime_types = std::make_shared<const MimeTypes>(MimeTypes::load());
    h3_ = std::make_unique<H3Pair>(config);
    handle_ = h3_->connect();

    // One request first, so that what a connection keeps for itself (QPACK
    // and control streams, the stager's current buffer) is in the baseline.
    const uint64_t warm = h3_->get(handle_, "/small.txt", recorder_);
    ASSERT_TRUE(h3_->run_until_completed(recorder_, 1));
    ASSERT_EQ(recorder_[warm].status, 200);
    ASSERT_TRUE(h3_->pair.run_until([&] { return h3_->server.open_request_count() == 0; }));
    h3_->pair.run_until([] { return false; }, 5 * kRoundTrip);  // every ACK in
    free_buffers_ = h3_->server.pool().free_buffers();
    descriptors_ = open_descriptors();
  }

  bool everything_freed() const {
    return h3_->server.open_request_count() == 0 && open_descriptors() == descriptors_ &&
           h3_->server.pool().free_buffers() >= free_buffers_;
  }

  // Cancels `id`, a download under way, and expects the server to have
  // freed everything within two round trips.
  void cancel_and_expect_freed(uint64_t id) {
    EXPECT_EQ(h3_->server.open_request_count(), 1u);
    EXPECT_EQ(open_descriptors(), descriptors_ + 1);  // the file
    EXPECT_LT(h3_->server.pool().free_buffers(), free_buffers_);
    const uint64_t resets = h3_->server.stats().streams_reset;

    ASSERT_TRUE(h3_->client.cancel(handle_, id));
    EXPECT_FALSE(h3_->client.cancel(handle_, id));  // already complete
    EXPECT_EQ(h3_->client.stats().cancelled, 1u);
    const Instant cancelled_at = h3_->pair.simulator->now();
    ASSERT_TRUE(h3_->pair.run_until([&] { return everything_freed(); }, 2 * kRoundTrip))
        << "requests " << h3_->server.open_request_count() << ", descriptors " << open_descriptors()
        << " (" << descriptors_ << " before), free buffers " << h3_->server.pool().free_buffers()
        << " (" << free_buffers_ << " before)";
    EXPECT_LE(h3_->pair.simulator->now() - cancelled_at, 2 * kRoundTrip);
    EXPECT_EQ(h3_->server.stats().streams_reset, resets + 1);  // the response was cut short
    EXPECT_EQ(h3_->server.connection_count(), 1u);
    EXPECT_FALSE(recorder_[id].done);  // the handler is not called after a cancel
    EXPECT_EQ(h3_->client.open_requests(), 0u);
  }

  void expect_next_request_served() {
    const size_t before = recorder_.completed();
    const uint64_t next =
        h3_->get(handle_, "/big.bin", recorder_, "GET", {{"range", "bytes=-70000"}});
    ASSERT_TRUE(h3_->run_until_completed(recorder_, before + 1));
    const RecordedResponse& response = recorder_[next];
    EXPECT_EQ(response.outcome.result, H3Result::kOk) << response.outcome.error_code;
    EXPECT_EQ(response.status, 206);
    EXPECT_TRUE(response.body == std::vector<uint8_t>(big_.end() - 70000, big_.end()));
    EXPECT_TRUE(h3_->pair.run_until([&] { return everything_freed(); }));
  }

  TempDir root_{"h3cancel"};
  std::vector<uint8_t> big_;
  std::unique_ptr<H3Pair> h3_;
  endpoint::ConnectionHandle handle_ = 0;
  ResponseRecorder recorder_{/*keep_bodies=*/true};
  size_t free_buffers_ = 0;
  size_t descriptors_ = 0;
};

TEST_F(H3CancelTest, CancelMidwayFreesRequestDescriptorAndBuffers) {
  const uint64_t id = h3_->get(handle_, "/big.bin", recorder_);
  ASSERT_TRUE(h3_->pair.run_until([&] { return recorder_[id].received >= 2 * 1024 * 1024; }));
  ASSERT_LT(recorder_[id].received, big_.size());
  cancel_and_expect_freed(id);
  expect_next_request_served();
}

TEST_F(H3CancelTest, CancelAsTheResponseStartsFreesEverything) {
  // Before the request's FIN is acknowledged: RESET_STREAM really leaves too.
  const uint64_t id = h3_->get(handle_, "/big.bin", recorder_);
  ASSERT_TRUE(h3_->pair.run_until([&] { return h3_->server.open_request_count() == 1; }));
  cancel_and_expect_freed(id);
  expect_next_request_served();
}

}  // namespace
}  // namespace dpquic::dataplane::testing
