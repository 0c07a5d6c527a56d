// H3Server serving a document root end to end: a 3 MB random file byte for
// byte (also through a pool far smaller than the file), traversal and
// symlinks pointing outside refused, a symlink inside allowed, "/" mapped to
// index.html; a file that exists but cannot be opened for want of
// descriptors is a 503, not a 404.

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/dataplane/app/h3_test_pair.h"
#include "tests/util/descriptor_limit.h"
#include "tests/util/temp_dir.h"

namespace dpquic::dataplane::testing {
namespace {

using ::dpquic::testing::TempDir;

std::vector<uint8_t> random_bytes(size_t size, uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return bytes;
}

std::vector<uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

class H3FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    big_ = random_bytes(3 * 1024 * 1024 + 123, 7);
    root_.write("big.bin", big_);
    root_.write("index.html", text("<html>hi</html>"));
    ::mkdir((root_.path() + "/sub").c_str(), 0755);
    root_.write("sub/page.txt", text("page"));
    outside_.write("secret.txt", text("secret"));
    ASSERT_EQ(
        ::symlink((outside_.path() + "/secret.txt").c_str(), (root_.path() + "/escape").c_str()),
        0);
    ASSERT_EQ(::symlink("sub/page.txt", (root_.path() + "/inner").c_str()), 0);
  }

  H3ServerConfig config(size_t chunk_count = 4096, uint32_t per_response = 64) const {
    H3ServerConfig server_config;
    server_config.root = root_.path();
    server_config.mime_types = mime_types_;
    server_config.chunk_count = chunk_count;
    server_config.max_buffers_per_response = per_response;
    return server_config;
  }

  TempDir root_{"h3root"};
  TempDir outside_{"h3outside"};
  std::vector<uint8_t> big_;
  std::shared_ptr<const MimeTypes> mime_types_ =
      std::make_shared<const MimeTypes>(MimeTypes::load());
};

TEST_F(H3FileTest, ServesFilesByteExactAndRefusesEscapes) {
  H3Pair h3(config());
  const auto handle = h3.connect();
  ResponseRecorder recorder(/*keep_bodies=*/true);
  const uint64_t big = h3.get(handle, "/big.bin", recorder);
  const uint64_t index = h3.get(handle, "/", recorder);
  const uint64_t inner = h3.get(handle, "/inner", recorder);
  const uint64_t head = h3.get(handle, "/big.bin", recorder, "HEAD");
  const std::vector<std::string> refused = {
      "/../" + outside_.name() + "/secret.txt",
      "/%2e%2e/" + outside_.name() + "/secret.txt",
      "/sub/..%2f..%2f" + outside_.name() + "/secret.txt",
      "/escape",
      "/sub",  // a directory without index.html
      "/missing.bin",
  };
  std::vector<uint64_t> refused_ids;
  for (const std::string& path : refused) refused_ids.push_back(h3.get(handle, path, recorder));
  ASSERT_TRUE(h3.run_until_completed(recorder, 4 + refused.size()));

  const RecordedResponse& big_response = recorder[big];
  EXPECT_EQ(big_response.outcome.result, H3Result::kOk);
  EXPECT_EQ(big_response.status, 200);
  EXPECT_EQ(big_response.content_length, big_.size());
  EXPECT_EQ(big_response.header("content-type"), "application/octet-stream");
  ASSERT_EQ(big_response.body.size(), big_.size());
  EXPECT_TRUE(big_response.body == big_);

  EXPECT_EQ(recorder[index].status, 200);
  EXPECT_EQ(recorder[index].header("content-type"), "text/html");
  EXPECT_EQ(recorder[index].body, text("<html>hi</html>"));

  EXPECT_EQ(recorder[inner].status, 200);
  EXPECT_EQ(recorder[inner].body, text("page"));
  EXPECT_EQ(recorder[inner].header("content-type"), "text/plain");

  EXPECT_EQ(recorder[head].status, 200);
  EXPECT_EQ(recorder[head].content_length, big_.size());
  EXPECT_TRUE(recorder[head].body.empty());

  for (size_t i = 0; i < refused.size(); ++i) {
    const RecordedResponse& response = recorder[refused_ids[i]];
    EXPECT_EQ(response.outcome.result, H3Result::kOk) << refused[i];
    EXPECT_EQ(response.status, 404) << refused[i];
    EXPECT_TRUE(response.body.empty()) << refused[i];
  }
}

TEST_F(H3FileTest, NoDescriptorLeftIsA503AndTheNextRequestIsServed) {
  H3Pair h3(config());
  const auto handle = h3.connect();
  ResponseRecorder recorder(/*keep_bodies=*/true);
  const uint64_t starved = h3.get(handle, "/index.html", recorder);
  const uint64_t missing = h3.get(handle, "/missing.bin", recorder);
  bool limited = false;
  bool hard_lowered = false;
  bool completed = false;
  rlimit before{};
  rlimit during{};
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  {
    ::dpquic::testing::NoFreeDescriptors no_descriptors;
    limited = no_descriptors.ok();
    hard_lowered = no_descriptors.hard_lowered();
    ::getrlimit(RLIMIT_NOFILE, &during);
    completed = h3.run_until_completed(recorder, 2);
  }
  ASSERT_TRUE(limited);
  ASSERT_TRUE(completed);
  // Where the process may raise it back, the hard limit went down too, so
  // nothing could have raised the soft one out of the way; both came back.
  EXPECT_EQ(hard_lowered, ::dpquic::testing::may_raise_hard_limits());
  if (hard_lowered) {
    EXPECT_EQ(during.rlim_max, during.rlim_cur);
  }
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_cur);
  EXPECT_EQ(after.rlim_max, before.rlim_max);
  EXPECT_EQ(recorder[starved].outcome.result, H3Result::kOk);
  EXPECT_EQ(recorder[starved].status, 503);
  EXPECT_TRUE(recorder[starved].body.empty());
  EXPECT_EQ(recorder[missing].status, 404);
  EXPECT_EQ(h3.server.stats().responses_5xx, 1u);

  const uint64_t served = h3.get(handle, "/index.html", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, 3));
  EXPECT_EQ(recorder[served].status, 200);
  EXPECT_EQ(recorder[served].body, text("<html>hi</html>"));
}

TEST_F(H3FileTest, SyntheticPathsStillWorkWithARoot) {
  H3Pair h3(config());
  const auto handle = h3.connect();
  ResponseRecorder recorder;
  const uint64_t id = h3.get(handle, "/4097", recorder);
  ASSERT_TRUE(h3.run_until_completed(recorder, 1));
  EXPECT_EQ(recorder[id].status, 200);
  EXPECT_EQ(recorder[id].received, 4097u);
  EXPECT_TRUE(recorder[id].synthetic_matches);
}

TEST_F(H3FileTest, StreamsThroughAPoolMuchSmallerThanTheFile) {
  // 32 buffers of 16 KiB (512 KiB) for three concurrent 3 MB downloads: the
  // file is never buffered whole; reads wait for buffers to come back.
  H3Pair h3(config(/*chunk_count=*/32, /*per_response=*/8));
  const auto handle = h3.connect();
  ResponseRecorder recorder(/*keep_bodies=*/true);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(h3.get(handle, "/big.bin", recorder));
  ASSERT_TRUE(h3.run_until_completed(recorder, ids.size()));
  for (uint64_t id : ids) {
    EXPECT_EQ(recorder[id].outcome.result, H3Result::kOk);
    EXPECT_TRUE(recorder[id].body == big_) << id;
  }
  EXPECT_EQ(h3.server.stats().body_bytes_sent, 3 * big_.size());
  EXPECT_GT(h3.server.stats().body_waits, 0u);
  // Every buffer returns once QUIC has the acknowledgments (the stager may
  // keep the one it is filling).
  ASSERT_TRUE(h3.pair.run_until([&] { return h3.server.pool().free_buffers() >= 31; }));
}

}  // namespace
}  // namespace dpquic::dataplane::testing
