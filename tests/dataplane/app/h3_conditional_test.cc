// What H3Server owes a browser for files under its root, end to end through
// H3Client: content-type from /etc/mime.types, etag, last-modified and
// accept-ranges; 304 for if-none-match and if-modified-since (GET and
// HEAD); 206 with the exact bytes of the file; 416; whole files for several
// ranges or an if-range that does not match.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/app/mime_types.h"
#include "tests/dataplane/app/h3_test_pair.h"
#include "tests/util/temp_dir.h"

namespace dpquic::dataplane::testing {
namespace {

using ::dpquic::testing::TempDir;
using Fields = std::vector<std::pair<std::string, std::string>>;

// 2020-09-13 12:26:40.123456789 UTC.
constexpr int64_t kMtimeSeconds = 1600000000;
constexpr long kMtimeNanoseconds = 123456789;
constexpr const char* kLastModified = "Sun, 13 Sep 2020 12:26:40 GMT";

class H3ConditionalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 generator(11);
    big_.resize(300 * 1024 + 77);
    for (uint8_t& byte : big_) byte = static_cast<uint8_t>(generator());
    root_.write("big.bin", big_);
    root_.write("page.html", "<html>hello</html>");
    root_.write("style.css", "body {}");
    root_.write("app.js", "let x;");
    root_.write("movie.mp4", "not really a movie");
    for (const char* name : {"big.bin", "page.html", "style.css", "app.js", "movie.mp4"}) {
      const struct timespec times[2] = {{kMtimeSeconds, kMtimeNanoseconds},
                                        {kMtimeSeconds, kMtimeNanoseconds}};
      ASSERT_EQ(::utimensat(AT_FDCWD, (root_.path() + "/" + name).c_str(), times, 0), 0);
    }
    H3ServerConfig config;
    config.root = root_.path();
    config.mime_types = mime_types_;
    h3_ = std::make_unique<H3Pair>(config);
    handle_ = h3_->connect();
  }

  // The entity tag of a file of `size` bytes with the mtime above, spelled
  // out here: mtime in nanoseconds and size, in hex.
  static std::string etag(uint64_t size) {
    char text[64];
    std::snprintf(
        text, sizeof(text), "\"%llx-%llx\"",
        static_cast<unsigned long long>(kMtimeSeconds * 1'000'000'000 + kMtimeNanoseconds),
        static_cast<unsigned long long>(size));
    return text;
  }

  // One request, run to completion.
  const RecordedResponse& fetch(const std::string& path, Fields fields = {},
                                const std::string& method = "GET") {
    const uint64_t id = h3_->get(handle_, path, recorder_, method, std::move(fields));
    EXPECT_TRUE(h3_->run_until_completed(recorder_, ++requests_));
    const RecordedResponse& response = recorder_[id];
    EXPECT_EQ(response.outcome.result, H3Result::kOk) << path;
    return response;
  }

  std::vector<uint8_t> slice(size_t offset, size_t length) const {
    return {big_.begin() + static_cast<std::ptrdiff_t>(offset),
            big_.begin() + static_cast<std::ptrdiff_t>(offset + length)};
  }

  TempDir root_{"h3cond"};
  std::vector<uint8_t> big_;
  std::shared_ptr<const MimeTypes> mime_types_ =
      std::make_shared<const MimeTypes>(MimeTypes::load());
  std::unique_ptr<H3Pair> h3_;
  endpoint::ConnectionHandle handle_ = 0;
  ResponseRecorder recorder_{/*keep_bodies=*/true};
  size_t requests_ = 0;
};

TEST_F(H3ConditionalTest, FileResponsesCarryTypeValidatorsAndAcceptRanges) {
  const RecordedResponse& page = fetch("/page.html");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("content-type"), "text/html");
  EXPECT_EQ(page.header("content-length"), "18");
  EXPECT_EQ(page.header("etag"), etag(18));
  EXPECT_EQ(page.header("last-modified"), kLastModified);
  EXPECT_EQ(page.header("accept-ranges"), "bytes");
  EXPECT_FALSE(page.header("content-range"));

  EXPECT_EQ(fetch("/style.css").header("content-type"), "text/css");
  EXPECT_EQ(fetch("/app.js").header("content-type"), mime_types_->for_extension("js"));
  EXPECT_EQ(fetch("/movie.mp4").header("content-type"), "video/mp4");
  EXPECT_EQ(fetch("/big.bin").header("etag"), etag(big_.size()));

  const RecordedResponse& head = fetch("/big.bin", {}, "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.content_length, big_.size());
  EXPECT_EQ(head.header("etag"), etag(big_.size()));
  EXPECT_EQ(head.header("last-modified"), kLastModified);
  EXPECT_EQ(head.header("accept-ranges"), "bytes");
  EXPECT_TRUE(head.body.empty());

  // Synthetic bodies have no file behind them: no validators.
  const RecordedResponse& synthetic = fetch("/100");
  EXPECT_EQ(synthetic.status, 200);
  EXPECT_FALSE(synthetic.header("etag"));
  EXPECT_FALSE(synthetic.header("accept-ranges"));
}

TEST_F(H3ConditionalTest, IfNoneMatchGives304ForGetAndHead) {
  const std::string tag = etag(big_.size());
  for (const char* method : {"GET", "HEAD"}) {
    for (const std::string& value : {tag, "W/" + tag, "\"stale\", " + tag, std::string("*")}) {
      const RecordedResponse& response = fetch("/big.bin", {{"if-none-match", value}}, method);
      EXPECT_EQ(response.status, 304) << method << " " << value;
      EXPECT_EQ(response.header("etag"), tag);
      EXPECT_EQ(response.header("last-modified"), kLastModified);
      EXPECT_FALSE(response.header("content-length")) << value;
      EXPECT_FALSE(response.header("content-type")) << value;
      EXPECT_TRUE(response.body.empty());
    }
  }
  EXPECT_EQ(h3_->server.stats().responses_3xx, 8u);

  // A stale tag: the file, whole; if-modified-since is not looked at.
  const RecordedResponse& stale =
      fetch("/big.bin", {{"if-none-match", "\"stale\""}, {"if-modified-since", kLastModified}});
  EXPECT_EQ(stale.status, 200);
  EXPECT_TRUE(stale.body == big_);
}

TEST_F(H3ConditionalTest, IfModifiedSinceGives304ForGetAndHead) {
  for (const char* method : {"GET", "HEAD"}) {
    for (const char* since : {kLastModified, "Sunday, 13-Sep-20 12:26:40 GMT",
                              "Sun Sep 13 12:26:40 2020", "Mon, 14 Sep 2020 00:00:00 GMT"}) {
      const RecordedResponse& response =
          fetch("/page.html", {{"if-modified-since", since}}, method);
      EXPECT_EQ(response.status, 304) << method << " " << since;
      EXPECT_EQ(response.header("etag"), etag(18));
      EXPECT_EQ(response.header("last-modified"), kLastModified);
      EXPECT_FALSE(response.header("content-length"));
      EXPECT_TRUE(response.body.empty());
    }
  }
  const RecordedResponse& older =
      fetch("/page.html", {{"if-modified-since", "Sun, 13 Sep 2020 12:26:39 GMT"}});
  EXPECT_EQ(older.status, 200);
  EXPECT_EQ(std::string(older.body.begin(), older.body.end()), "<html>hello</html>");
  EXPECT_EQ(fetch("/page.html", {{"if-modified-since", "not a date"}}).status, 200);
}

TEST_F(H3ConditionalTest, RangesGive206WithExactlyThoseBytes) {
  const uint64_t size = big_.size();
  struct Expected {
    std::string range;
    size_t offset;
    size_t length;
  };
  const std::vector<Expected> cases = {
      {"bytes=0-0", 0, 1},
      {"bytes=12345-212344", 12345, 200000},  // unaligned, across many pool buffers
      {"bytes=300000-", 300000, size - 300000},
      {"bytes=-1000", size - 1000, 1000},
      {"bytes=-999999999", 0, size},  // a suffix longer than the file
      {"bytes=16384-32767", 16384, 16384},
  };
  for (const Expected& c : cases) {
    const RecordedResponse& response = fetch("/big.bin", {{"range", c.range}});
    EXPECT_EQ(response.status, 206) << c.range;
    EXPECT_EQ(response.content_length, c.length) << c.range;
    EXPECT_EQ(response.header("content-range"), "bytes " + std::to_string(c.offset) + "-" +
                                                    std::to_string(c.offset + c.length - 1) + "/" +
                                                    std::to_string(size))
        << c.range;
    EXPECT_EQ(response.header("content-type"), "application/octet-stream");
    EXPECT_EQ(response.header("etag"), etag(size));
    EXPECT_EQ(response.header("accept-ranges"), "bytes");
    ASSERT_EQ(response.body.size(), c.length) << c.range;
    EXPECT_TRUE(response.body == slice(c.offset, c.length)) << c.range;
  }
  // A matching if-range (entity tag or date) keeps the range.
  for (const std::string& validator : {etag(size), std::string(kLastModified)}) {
    const RecordedResponse& response =
        fetch("/big.bin", {{"range", "bytes=100-199"}, {"if-range", validator}});
    EXPECT_EQ(response.status, 206) << validator;
    EXPECT_TRUE(response.body == slice(100, 100));
  }
}

TEST_F(H3ConditionalTest, UnsatisfiableRangeIs416) {
  const std::string size = std::to_string(big_.size());
  for (const std::string& range :
       {"bytes=" + size + "-", std::string("bytes=999999999-999999999")}) {
    const RecordedResponse& response = fetch("/big.bin", {{"range", range}});
    EXPECT_EQ(response.status, 416) << range;
    EXPECT_EQ(response.header("content-range"), "bytes */" + size);
    EXPECT_EQ(response.content_length, 0u);
    EXPECT_TRUE(response.body.empty());
  }
  EXPECT_EQ(h3_->server.stats().responses_4xx, 2u);
}

TEST_F(H3ConditionalTest, WholeFileForSeveralRangesMalformedRangesOrAStaleIfRange) {
  const std::vector<Fields> cases = {
      {{"range", "bytes=0-9,20-29"}},
      {{"range", "bytes=9-0"}},
      {{"range", "pages=1-2"}},
      {{"range", "bytes=0-9"}, {"if-range", "\"stale\""}},
      {{"range", "bytes=0-9"}, {"if-range", "W/" + etag(big_.size())}},
      {{"range", "bytes=0-9"}, {"if-range", "Sat, 12 Sep 2020 12:26:40 GMT"}},
  };
  for (const Fields& fields : cases) {
    const RecordedResponse& response = fetch("/big.bin", fields);
    EXPECT_EQ(response.status, 200) << fields.back().second;
    EXPECT_EQ(response.content_length, big_.size());
    EXPECT_FALSE(response.header("content-range"));
    EXPECT_TRUE(response.body == big_) << fields.back().second;
  }
  // HEAD ignores range.
  const RecordedResponse& head = fetch("/big.bin", {{"range", "bytes=0-9"}}, "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.content_length, big_.size());
}

TEST(H3ServerConfigTest, ARootNeedsAMimeMap) {
  TempDir root("h3nomime");
  harness::QuicPair pair(h3_pair_options());
  H3ServerConfig config;
  config.root = root.path();
  EXPECT_THROW({ H3Server server(*pair.server, config); }, std::runtime_error);
  config.mime_types = std::make_shared<const MimeTypes>(MimeTypes::parse("text/html html\n"));
  EXPECT_NO_THROW({ H3Server server(*pair.server, config); });
}

}  // namespace
}  // namespace dpquic::dataplane::testing
