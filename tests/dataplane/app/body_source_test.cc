// Request-path safety, document-root resolution, the buffer pool and body
// streaming, on their own.

#include "dataplane/app/body_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/app/synthetic_body.h"
#include "tests/util/descriptor_limit.h"
#include "tests/util/temp_dir.h"

namespace dpquic::dataplane {
namespace {

using ::dpquic::testing::TempDir;

// --- decode_request_path ---

TEST(DecodeRequestPathTest, AcceptsPlainAndEscapedPaths) {
  EXPECT_EQ(decode_request_path("/"), "/");
  EXPECT_EQ(decode_request_path("/a/b.html"), "/a/b.html");
  EXPECT_EQ(decode_request_path("/a%20b"), "/a b");
  EXPECT_EQ(decode_request_path("/%41%62"), "/Ab");
  EXPECT_EQ(decode_request_path("/file?x=../../etc"), "/file");
  EXPECT_EQ(decode_request_path("/file#frag"), "/file");
  EXPECT_EQ(decode_request_path("//double//slash"), "//double//slash");
  EXPECT_EQ(decode_request_path("/...."), "/....");
  EXPECT_EQ(decode_request_path("/.hidden"), "/.hidden");
  EXPECT_EQ(decode_request_path("/a..b"), "/a..b");
  // Decoded once only: %252e stays a literal "%2e" name.
  EXPECT_EQ(decode_request_path("/%252e%252e/x"), "/%2e%2e/x");
}

TEST(DecodeRequestPathTest, RefusesTraversalInEverySpelling) {
  for (const char* path :
       {"/..", "/../etc/passwd", "/a/../../b", "/a/..", "/%2e%2e/x", "/%2E%2E/x", "/.%2e/x",
        "/%2e./x", "/..%2f..%2fetc", "/a%2f..%2fb", "/.", "/./a", "/a/./b"}) {
    EXPECT_EQ(decode_request_path(path), std::nullopt) << path;
  }
}

TEST(DecodeRequestPathTest, RefusesMalformedTargets) {
  for (const char* path :
       {"", "relative", "*", "http://host/x", "/%", "/%4", "/%zz", "/%g1", "/a%00b", "/%00"}) {
    EXPECT_EQ(decode_request_path(path), std::nullopt) << path;
  }
}

// --- parse_synthetic_length ---

TEST(ParseSyntheticLengthTest, DecimalDigitsOnlyWithinTheLimit) {
  EXPECT_EQ(parse_synthetic_length("/0", 100), 0u);
  EXPECT_EQ(parse_synthetic_length("/100", 100), 100u);
  EXPECT_EQ(parse_synthetic_length("/007", 100), 7u);
  EXPECT_EQ(parse_synthetic_length("/1000000", UINT64_MAX), 1000000u);
  EXPECT_EQ(parse_synthetic_length("/18446744073709551615", UINT64_MAX), UINT64_MAX);
  for (const char* path :
       {"/101", "/", "", "/-1", "/+1", "/1a", "/ 1", "/1 ", "/1/2", "1", "/0x10"}) {
    EXPECT_EQ(parse_synthetic_length(path, 100), std::nullopt) << path;
  }
  EXPECT_EQ(parse_synthetic_length("/18446744073709551616", UINT64_MAX), std::nullopt);
  EXPECT_EQ(parse_synthetic_length("/123456789012345678901", UINT64_MAX), std::nullopt);
}

// --- DocumentRoot ---

class DocumentRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir((root_.path() + "/sub").c_str(), 0755);
    ::mkdir((root_.path() + "/empty").c_str(), 0755);
    root_.write("file.bin", "0123456789");
    root_.write("index.html", "<html></html>");
    root_.write("sub/page.html", "page");
    outside_.write("secret.txt", "secret");
    ASSERT_EQ(
        ::symlink((outside_.path() + "/secret.txt").c_str(), (root_.path() + "/escape").c_str()),
        0);
    ASSERT_EQ(::symlink(outside_.path().c_str(), (root_.path() + "/escape_dir").c_str()), 0);
    ASSERT_EQ(::symlink("sub/page.html", (root_.path() + "/inner").c_str()), 0);
    ASSERT_EQ(::symlink((root_.path() + "/file.bin").c_str(), (root_.path() + "/absolute").c_str()),
              0);
    ASSERT_EQ(::mkfifo((root_.path() + "/fifo").c_str(), 0644), 0);
  }

  std::optional<OpenedFile> open(const std::string& target) {
    const std::optional<std::string> path = decode_request_path(target);
    if (!path) return std::nullopt;
    return DocumentRoot(root_.path(), types_).open(*path);
  }

  std::shared_ptr<const MimeTypes> types_ =
      std::make_shared<const MimeTypes>(MimeTypes::parse("text/html html htm\ntext/plain txt\n"));

  TempDir root_{"h3root"};
  TempDir outside_{"h3outside"};
};

TEST_F(DocumentRootTest, OpensRegularFilesInside) {
  struct timespec times[2] = {{1600000000, 123456789}, {1600000000, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (root_.path() + "/file.bin").c_str(), times, 0), 0);
  std::optional<OpenedFile> file = open("/file.bin");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->size, 10u);
  EXPECT_EQ(file->mtime_ns, 1600000000123456789);
  EXPECT_EQ(file->content_type, "application/octet-stream");
  std::array<char, 16> bytes{};
  ASSERT_EQ(::pread(file->fd.get(), bytes.data(), bytes.size(), 0), 10);
  EXPECT_EQ(std::string(bytes.data(), 10), "0123456789");

  std::optional<OpenedFile> page = open("/sub/page.html");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->size, 4u);
  EXPECT_EQ(page->content_type, "text/html");
}

TEST_F(DocumentRootTest, TypesComeFromTheMap) {
  root_.write("LOUD.HTM", "x");
  std::optional<OpenedFile> loud = open("/LOUD.HTM");
  ASSERT_TRUE(loud);
  EXPECT_EQ(loud->content_type, "text/html");
  // Without a map, every file is application/octet-stream.
  std::optional<OpenedFile> untyped = DocumentRoot(root_.path()).open("/index.html");
  ASSERT_TRUE(untyped);
  EXPECT_EQ(untyped->content_type, "application/octet-stream");
}

TEST_F(DocumentRootTest, DirectoriesMapToIndexHtml) {
  std::optional<OpenedFile> index = open("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->size, 13u);
  EXPECT_EQ(index->content_type, "text/html");
  EXPECT_FALSE(open("/empty"));
  EXPECT_FALSE(open("/empty/"));
  EXPECT_FALSE(open("/sub"));  // no index.html there
}

TEST_F(DocumentRootTest, SymlinksInsideAreFollowed) {
  std::optional<OpenedFile> inner = open("/inner");
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->size, 4u);
  EXPECT_EQ(inner->content_type, "text/html");  // the target's name decides
  std::optional<OpenedFile> absolute = open("/absolute");
  ASSERT_TRUE(absolute);
  EXPECT_EQ(absolute->size, 10u);
}

TEST_F(DocumentRootTest, RefusesEverythingOutsideOrIrregular) {
  EXPECT_FALSE(open("/escape"));
  EXPECT_FALSE(open("/escape_dir/secret.txt"));
  EXPECT_FALSE(
      open("/../" + outside_.path().substr(outside_.path().rfind('/') + 1) + "/secret.txt"));
  EXPECT_FALSE(open("/%2e%2e/secret.txt"));
  EXPECT_FALSE(open("/missing"));
  EXPECT_FALSE(open("/file.bin/"));
  EXPECT_FALSE(open("/fifo"));  // and without blocking
  // Straight to DocumentRoot, bypassing the decoder's checks: realpath()
  // resolution still keeps it inside.
  DocumentRoot root(root_.path());
  const std::string outside_name = outside_.path().substr(outside_.path().rfind('/') + 1);
  EXPECT_FALSE(root.open("/../" + outside_name + "/secret.txt"));
  EXPECT_FALSE(root.open("/sub/../../" + outside_name + "/secret.txt"));
  EXPECT_TRUE(root.open("/sub/../file.bin"));
}

TEST_F(DocumentRootTest, RootPrefixIsNotEnough) {
  // "<root>-evil" starts with the root's path but is not inside it.
  const std::string sibling = root_.path() + "-evil";
  ::mkdir(sibling.c_str(), 0755);
  std::ofstream(sibling + "/x") << "x";
  ASSERT_EQ(::symlink((sibling + "/x").c_str(), (root_.path() + "/sibling").c_str()), 0);
  EXPECT_FALSE(open("/sibling"));
  std::error_code ignored;
  std::filesystem::remove_all(sibling, ignored);
}

TEST_F(DocumentRootTest, OutOfDescriptorsIsNotNotFound) {
  DocumentRoot root(root_.path());
  DocumentRoot::Refusal present = DocumentRoot::Refusal::kNotFound;
  DocumentRoot::Refusal missing = DocumentRoot::Refusal::kOutOfResources;
  bool opened = true;
  bool limited = false;
  {
    ::dpquic::testing::NoFreeDescriptors no_descriptors;
    limited = no_descriptors.ok();
    opened = root.open("/file.bin", &present).has_value();
    (void)root.open("/missing", &missing);
  }
  ASSERT_TRUE(limited);
  EXPECT_FALSE(opened);
  EXPECT_EQ(present, DocumentRoot::Refusal::kOutOfResources);  // there, but no descriptor
  EXPECT_EQ(missing, DocumentRoot::Refusal::kNotFound);
  DocumentRoot::Refusal after = DocumentRoot::Refusal::kOutOfResources;
  EXPECT_FALSE(root.open("/missing", &after));
  EXPECT_EQ(after, DocumentRoot::Refusal::kNotFound);
  EXPECT_TRUE(root.open("/file.bin"));
}

TEST(DocumentRootConstructionTest, ThrowsForMissingOrNonDirectoryRoot) {
  EXPECT_THROW(DocumentRoot("/nonexistent/dpquic/root"), std::runtime_error);
  TempDir dir;
  dir.write("plain", "x");
  EXPECT_THROW(DocumentRoot(dir.path() + "/plain"), std::runtime_error);
  EXPECT_NO_THROW(DocumentRoot(dir.path() + "/"));
}

// --- BufferPool and ResponseBody ---

TEST(BufferPoolTest, BuffersComeBackWhenTheLastSliceGoes) {
  BufferPool pool(1024, 2);
  BufferFlight* flight = new BufferFlight;
  int returns = 0;
  flight->on_return = [](void* context) { ++*static_cast<int*>(context); };
  flight->context = &returns;
  BufferPool::Lease a, b, c;
  ASSERT_TRUE(pool.acquire(a, flight));
  ASSERT_TRUE(pool.acquire(b));
  EXPECT_FALSE(pool.acquire(c));
  EXPECT_EQ(pool.free_buffers(), 0u);
  EXPECT_EQ(flight->in_flight, 1u);
  transmit::Chunk slice = a.chunk.slice(10, 20);
  a = BufferPool::Lease();
  EXPECT_EQ(pool.free_buffers(), 0u);  // the slice keeps it
  slice.reset();
  EXPECT_EQ(pool.free_buffers(), 1u);
  EXPECT_EQ(flight->in_flight, 0u);
  EXPECT_EQ(returns, 1);
  b = BufferPool::Lease();
  EXPECT_EQ(pool.free_buffers(), 2u);
  EXPECT_EQ(returns, 1);
  BufferPool::release_flight(flight);  // the last reference: freed
}

TEST(ResponseBodyTest, SyntheticBodyIsExactViewsOfTheBlock) {
  BufferPool pool(1024, 4);
  const transmit::Chunk block = pool.adopt_static(synthetic_block());
  const uint64_t length = 3 * kSyntheticBlockSize + 12345;
  ResponseBody body = ResponseBody::synthetic(length, block);
  uint64_t offset = 0;
  std::array<transmit::Chunk, 2> out;
  size_t count = 0;
  while (body.fill(pool, 0, out, count) == BodyFill::kOk) {
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(out[i].shares_owner_with(block));
      ASSERT_TRUE(matches_synthetic(offset, out[i].bytes())) << offset;
      offset += out[i].size();
    }
  }
  EXPECT_EQ(offset, length);
  EXPECT_EQ(body.remaining(), 0u);
  EXPECT_EQ(pool.free_buffers(), 4u);  // no buffer used
}

// A file's bytes: 10 KiB and 7, none repeating every few bytes.
std::string patterned_contents() {
  std::string contents(10 * 1024 + 7, '\0');
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i * 131 + 7);
  return contents;
}

TEST(ResponseBodyTest, FileBodyStreamsWithinCapAndReserve) {
  TempDir dir;
  const std::string contents = patterned_contents();
  dir.write("f", contents);
  DocumentRoot root(dir.path());
  std::optional<OpenedFile> file = root.open("/f");
  ASSERT_TRUE(file);

  BufferPool pool(1024, 8);
  int returns = 0;
  ResponseBody body = ResponseBody::file(
      std::move(*file), 0, contents.size(), 3, [](void* context) { ++*static_cast<int*>(context); },
      &returns);
  EXPECT_TRUE(body.is_file());
  EXPECT_EQ(body.length(), contents.size());

  std::array<transmit::Chunk, 4> out;
  size_t count = 0;
  // At most 3 in flight.
  ASSERT_EQ(body.fill(pool, 2, out, count), BodyFill::kOk);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(body.in_flight(), 3u);
  std::array<transmit::Chunk, 4> more;
  size_t more_count = 0;
  EXPECT_EQ(body.fill(pool, 2, more, more_count), BodyFill::kCapped);
  EXPECT_EQ(more_count, 0u);

  std::string received;
  for (size_t i = 0; i < count; ++i) {
    received.append(reinterpret_cast<const char*>(out[i].data()), out[i].size());
    out[i].reset();
  }
  EXPECT_EQ(returns, 3);
  EXPECT_EQ(body.in_flight(), 0u);

  // The reserve: with 8 buffers and reserve 7, one at a time.
  while (true) {
    const BodyFill fill = body.fill(pool, 7, out, count);
    if (fill == BodyFill::kEnd) break;
    ASSERT_EQ(fill, BodyFill::kOk);
    ASSERT_EQ(count, 1u);
    received.append(reinterpret_cast<const char*>(out[0].data()), out[0].size());
    out[0].reset();
  }
  EXPECT_EQ(received, contents);
  EXPECT_EQ(pool.free_buffers(), 8u);

  // With no buffer beyond the reserve, nothing is read.
  ResponseBody other =
      ResponseBody::file(*root.open("/f"), 0, contents.size(), 4, nullptr, nullptr);
  EXPECT_EQ(other.fill(pool, 8, out, count), BodyFill::kNoBuffers);
}

TEST(ResponseBodyTest, FileBodyIsExactlyItsByteRange) {
  TempDir dir;
  const std::string contents = patterned_contents();
  dir.write("f", contents);
  DocumentRoot root(dir.path());
  BufferPool pool(1024, 16);
  const auto read_all = [&](ResponseBody body) {
    std::string received;
    std::array<transmit::Chunk, 4> out;
    size_t count = 0;
    while (body.fill(pool, 0, out, count) == BodyFill::kOk) {
      for (size_t i = 0; i < count; ++i) {
        received.append(reinterpret_cast<const char*>(out[i].data()), out[i].size());
        out[i].reset();
      }
    }
    return received;
  };
  // Across buffer boundaries, at an unaligned offset.
  ResponseBody middle = ResponseBody::file(*root.open("/f"), 1000, 5000, 8, nullptr, nullptr);
  EXPECT_EQ(middle.length(), 5000u);
  EXPECT_EQ(read_all(std::move(middle)), contents.substr(1000, 5000));
  EXPECT_EQ(
      read_all(ResponseBody::file(*root.open("/f"), contents.size() - 1, 1, 8, nullptr, nullptr)),
      contents.substr(contents.size() - 1));
  // A length past the end is clamped to the file.
  ResponseBody tail = ResponseBody::file(*root.open("/f"), 10000, 5000, 8, nullptr, nullptr);
  EXPECT_EQ(tail.length(), contents.size() - 10000);
  EXPECT_EQ(read_all(std::move(tail)), contents.substr(10000));
  EXPECT_EQ(pool.free_buffers(), 16u);
}

TEST(ResponseBodyTest, ShrunkFileIsAnIoError) {
  TempDir dir;
  dir.write("f", std::string(5000, 'x'));
  DocumentRoot root(dir.path());
  std::optional<OpenedFile> file = root.open("/f");
  ASSERT_TRUE(file);
  ASSERT_EQ(::truncate((dir.path() + "/f").c_str(), 0), 0);
  BufferPool pool(1024, 8);
  ResponseBody body = ResponseBody::file(std::move(*file), 0, 5000, 8, nullptr, nullptr);
  std::array<transmit::Chunk, 4> out;
  size_t count = 0;
  EXPECT_EQ(body.fill(pool, 0, out, count), BodyFill::kIoError);
  EXPECT_EQ(pool.free_buffers(), 8u);
}

TEST(ResponseBodyTest, BuffersOutliveTheirBody) {
  BufferPool pool(1024, 4);
  TempDir dir;
  dir.write("f", std::string(3000, 'y'));
  int returns = 0;
  std::array<transmit::Chunk, 4> out;
  size_t count = 0;
  {
    ResponseBody body = ResponseBody::file(
        *DocumentRoot(dir.path()).open("/f"), 0, 3000, 4,
        [](void* context) { ++*static_cast<int*>(context); }, &returns);
    ASSERT_EQ(body.fill(pool, 0, out, count), BodyFill::kOk);
    EXPECT_EQ(count, 3u);
  }
  // The body is gone; its buffers come back without calling it.
  for (auto& chunk : out) chunk.reset();
  EXPECT_EQ(returns, 0);
  EXPECT_EQ(pool.free_buffers(), 4u);
}

TEST(ResponseBodyTest, FileBodyReadsWholeBuffersUpToItsLimit) {
  TempDir dir;
  const std::string contents = patterned_contents();
  dir.write("f", contents);
  DocumentRoot root(dir.path());
  BufferPool pool(1024, 16);
  ResponseBody body = ResponseBody::file(*root.open("/f"), 0, contents.size(), 8, nullptr, nullptr);
  std::array<std::array<transmit::Chunk, 4>, 3> out;
  size_t count = 0;
  ASSERT_EQ(body.fill(pool, 0, out[0], count, 1), BodyFill::kOk);
  EXPECT_EQ(count, 1u);  // one byte allowed: one whole buffer
  EXPECT_EQ(out[0][0].size(), 1024u);
  ASSERT_EQ(body.fill(pool, 0, out[1], count, 2048), BodyFill::kOk);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(body.fill(pool, 0, out[2], count, 2049), BodyFill::kOk);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(body.in_flight(), 6u);
  EXPECT_EQ(body.remaining(), contents.size() - 6 * 1024);
}

TEST(ResponseBodyTest, AGroupCapsItsBodiesTogether) {
  TempDir dir;
  const std::string contents = patterned_contents();
  dir.write("f", contents);
  DocumentRoot root(dir.path());
  BufferPool pool(1024, 16);
  auto* group = new BufferFlight;
  int group_returns = 0;
  group->on_return = [](void* context) { ++*static_cast<int*>(context); };
  group->context = &group_returns;
  ResponseBody first =
      ResponseBody::file(*root.open("/f"), 0, contents.size(), 8, nullptr, nullptr);
  ResponseBody second =
      ResponseBody::file(*root.open("/f"), 0, contents.size(), 8, nullptr, nullptr);
  first.join_group(group, 3);
  second.join_group(group, 3);
  EXPECT_EQ(group->references, 3u);  // its owner and two members

  std::array<transmit::Chunk, 4> a;
  std::array<transmit::Chunk, 4> b;
  size_t count = 0;
  ASSERT_EQ(first.fill(pool, 0, a, count, 2 * 1024), BodyFill::kOk);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(second.fill(pool, 0, b, count), BodyFill::kOk);
  EXPECT_EQ(count, 1u);  // the group's third and last
  EXPECT_EQ(group->in_flight, 3u);
  EXPECT_EQ(second.fill(pool, 0, b, count), BodyFill::kGroupCapped);
  EXPECT_EQ(first.fill(pool, 0, a, count), BodyFill::kGroupCapped);

  a[0].reset();
  EXPECT_EQ(group_returns, 1);
  EXPECT_EQ(group->in_flight, 2u);
  ASSERT_EQ(second.fill(pool, 0, b, count), BodyFill::kOk);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(second.in_flight(), 1u);  // b[0] was overwritten: its buffer came back

  // Owner and bodies go first; buffers still out keep the group counted and
  // alive, and come back without calling anyone.
  group->on_return = nullptr;
  BufferPool::release_flight(group);
  first = ResponseBody();
  second = ResponseBody();
  EXPECT_EQ(group->in_flight, 2u);
  a[1].reset();
  b[0].reset();
  EXPECT_EQ(pool.free_buffers(), 16u);
  EXPECT_EQ(group_returns, 2);
}

}  // namespace
}  // namespace dpquic::dataplane
