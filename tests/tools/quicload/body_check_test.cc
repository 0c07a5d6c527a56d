#include "tools/quicload/body_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/app/synthetic_body.h"

namespace dpquic::tools {
namespace {

std::vector<uint8_t> synthetic(uint64_t offset, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = dataplane::synthetic_byte(offset + i);
  return bytes;
}

TEST(BodyCheckTest, SyntheticBytesAtAnyOffsetAndLength) {
  for (uint64_t offset : {0ull, 1ull, 63ull, 64ull, 65535ull, 1000003ull}) {
    for (size_t n : {0ul, 1ul, 64ul, 65471ul, 65472ul, 65473ul, 300000ul}) {
      const std::vector<uint8_t> bytes = synthetic(offset, n);
      EXPECT_TRUE(dataplane::matches_synthetic(offset, bytes)) << offset << " " << n;
      if (n == 0) continue;
      EXPECT_FALSE(dataplane::matches_synthetic(offset + 1, bytes)) << offset << " " << n;
      std::vector<uint8_t> wrong = bytes;
      wrong[n - 1] ^= 1;  // the last byte: past the first block window too
      EXPECT_FALSE(dataplane::matches_synthetic(offset, wrong)) << offset << " " << n;
      EXPECT_EQ(dataplane::matches_synthetic(offset, wrong),
                dataplane::matches_synthetic(offset, wrong));
    }
  }
}

class MappedFileTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(testing::TempDir()) + "/body_check_test.bin";
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < 1000; ++i) std::fputc(i * 7 % 251, f);
    std::fclose(f);
  }
  std::string path_;
};

TEST_F(MappedFileTest, ComparesRangesAndRefusesRunningPastTheEnd) {
  MappedFile file(path_);
  ASSERT_EQ(file.size(), 1000u);
  std::vector<uint8_t> bytes(file.bytes().begin() + 100, file.bytes().begin() + 300);
  EXPECT_TRUE(file.matches(100, bytes));
  EXPECT_FALSE(file.matches(101, bytes));
  bytes[150] ^= 0x80;
  EXPECT_FALSE(file.matches(100, bytes));
  const std::vector<uint8_t> tail(file.bytes().begin() + 990, file.bytes().end());
  EXPECT_TRUE(file.matches(990, tail));
  EXPECT_FALSE(file.matches(991, tail));  // one byte past the end
  EXPECT_TRUE(file.matches(1000, {}));    // nothing at the very end
  EXPECT_FALSE(file.matches(1001, {}));
  EXPECT_EQ(file.bytes()[3], 21);
}

TEST_F(MappedFileTest, MissingFileThrowsNamingIt) {
  try {
    MappedFile file(path_ + ".missing");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("body_check_test.bin.missing"), std::string::npos);
  }
}

TEST_F(MappedFileTest, EmptyFileHasNoBytes) {
  const std::string empty = std::string(testing::TempDir()) + "/empty.bin";
  std::fclose(std::fopen(empty.c_str(), "wb"));
  MappedFile file(empty);
  EXPECT_EQ(file.size(), 0u);
  EXPECT_TRUE(file.matches(0, {}));
  const uint8_t one = 'A';
  EXPECT_FALSE(file.matches(0, std::span<const uint8_t>(&one, 1)));
}

}  // namespace
}  // namespace dpquic::tools
