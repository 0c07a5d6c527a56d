#include "quic/wire/ack_ranges.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dpquic::wire {
namespace {

std::vector<AckRange> collect(const AckRangeView& view) {
  return std::vector<AckRange>(view.begin(), view.end());
}

// Exactly-sized heap copies of test inputs, kept alive for the whole test
// because parsed views point into them; AddressSanitizer reports any read
// past the end of one.
class ExactBuffers {
 public:
  std::span<const uint8_t> copy(const std::vector<uint8_t>& bytes) {
    buffers_.push_back(std::make_unique<uint8_t[]>(bytes.size()));
    std::copy(bytes.begin(), bytes.end(), buffers_.back().get());
    return {buffers_.back().get(), bytes.size()};
  }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
};

// Parses `bytes` (the fields after ACK Delay) from an exact heap copy that
// lives until the end of the test.
WireError parse_exact(const std::vector<uint8_t>& bytes, uint64_t largest, AckRangeView& view,
                      size_t* consumed = nullptr) {
  static ExactBuffers* buffers = new ExactBuffers;  // views may outlive any one test scope
  ByteReader reader(buffers->copy(bytes));
  const WireError error = AckRangeView::parse(reader, largest, view);
  if (consumed != nullptr) *consumed = reader.position();
  return error;
}

TEST(AckRangeViewTest, SingleRange) {
  const std::vector<uint8_t> bytes = {0x00, 0x00};  // count 0, first range 0
  ByteReader reader(bytes);
  AckRangeView view;
  ASSERT_EQ(AckRangeView::parse(reader, 10, view), WireError::kOk);
  EXPECT_TRUE(reader.empty());
  EXPECT_EQ(view.size(), 1u);
  EXPECT_EQ(view.largest(), 10u);
  EXPECT_EQ(view.smallest(), 10u);
  EXPECT_EQ(collect(view), (std::vector<AckRange>{{10, 10}}));
  EXPECT_TRUE(view.encoded_pairs().empty());
}

TEST(AckRangeViewTest, SeveralRangesDescend) {
  // Largest 100, first range 5 -> [95,100]; gap 3, length 4 -> largest
  // 95-3-2 = 90 -> [86,90]; gap 0, length 0 -> [84,84].
  const std::vector<uint8_t> bytes = {0x02, 0x05, 0x03, 0x04, 0x00, 0x00, 0xff};
  AckRangeView view;
  size_t consumed = 0;
  ASSERT_EQ(parse_exact(bytes, 100, view, &consumed), WireError::kOk);
  EXPECT_EQ(consumed, 6u);  // the trailing 0xff belongs to whatever follows
  EXPECT_EQ(view.size(), 3u);
  EXPECT_EQ(view.largest(), 100u);
  EXPECT_EQ(view.smallest(), 84u);
  EXPECT_EQ(collect(view), (std::vector<AckRange>{{95, 100}, {86, 90}, {84, 84}}));
  EXPECT_EQ(view.encoded_pairs().size(), 4u);

  // Post-increment returns the position before the step.
  auto it = view.begin();
  const auto before = it++;
  EXPECT_EQ(*before, (AckRange{95, 100}));
  EXPECT_EQ(it->largest, 90u);
}

TEST(AckRangeViewTest, NonMinimalVarintsInRangesDecode) {
  // Count 1 (2-byte form), first range 1 (4-byte form), gap 0 and length 2
  // (2-byte forms): [9,10], then largest 9-0-2 = 7 -> [5,7].
  const std::vector<uint8_t> bytes = {0x40, 0x01, 0x80, 0x00, 0x00, 0x01, 0x40, 0x00, 0x40, 0x02};
  AckRangeView view;
  ASSERT_EQ(parse_exact(bytes, 10, view), WireError::kOk);
  EXPECT_EQ(collect(view), (std::vector<AckRange>{{9, 10}, {5, 7}}));
}

TEST(AckRangeViewTest, FirstRangeMayReachZeroButNotBelow) {
  AckRangeView view;
  ASSERT_EQ(parse_exact({0x00, 0x07}, 7, view), WireError::kOk);
  EXPECT_EQ(view.smallest(), 0u);
  EXPECT_EQ(parse_exact({0x00, 0x08}, 7, view), WireError::kFrameEncodingError);
}

TEST(AckRangeViewTest, GapUnderflowIsFrameEncodingError) {
  AckRangeView view;
  // [2,2] then gap 0: largest = 2-0-2 = 0 -> [0,0] is fine.
  ASSERT_EQ(parse_exact({0x01, 0x00, 0x00, 0x00}, 2, view), WireError::kOk);
  EXPECT_EQ(collect(view), (std::vector<AckRange>{{2, 2}, {0, 0}}));
  // [1,1] then gap 0: largest = 1-0-2 < 0.
  EXPECT_EQ(parse_exact({0x01, 0x00, 0x00, 0x00}, 1, view), WireError::kFrameEncodingError);
  // A gap of 2^62-1 from near the top of the packet-number space.
  EXPECT_EQ(parse_exact({0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00},
                        kVarintMax, view),
            WireError::kFrameEncodingError);
}

TEST(AckRangeViewTest, RangeLengthUnderflowIsFrameEncodingError) {
  AckRangeView view;
  // [10,10], gap 5 -> largest 3; length 3 reaches 0, length 4 would be -1.
  ASSERT_EQ(parse_exact({0x01, 0x00, 0x05, 0x03}, 10, view), WireError::kOk);
  EXPECT_EQ(view.smallest(), 0u);
  EXPECT_EQ(parse_exact({0x01, 0x00, 0x05, 0x04}, 10, view), WireError::kFrameEncodingError);
}

TEST(AckRangeViewTest, UnderflowInLaterRangeIsCaughtUpFront) {
  // Valid first pairs, the fourth underflows: parse rejects the whole ACK.
  const std::vector<uint8_t> bytes = {0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00};
  AckRangeView view;
  EXPECT_EQ(parse_exact(bytes, 10, view), WireError::kFrameEncodingError);
}

TEST(AckRangeViewTest, EveryTruncationFails) {
  const std::vector<uint8_t> bytes = {0x02, 0x45, 0x00, 0x03, 0x04, 0x00, 0x40, 0x00};
  AckRangeView view;
  ASSERT_EQ(parse_exact(bytes, 5000, view), WireError::kOk);
  for (size_t length = 0; length < bytes.size(); ++length) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + length);
    EXPECT_EQ(parse_exact(prefix, 5000, view), WireError::kFrameEncodingError) << length;
  }
}

TEST(AckRangeViewTest, HugeRangeCountWithFewBytesFails) {
  AckRangeView view;
  EXPECT_EQ(parse_exact({0xbf, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00}, 1000, view),
            WireError::kFrameEncodingError);
}

TEST(AckRangesEncodeTest, ExactBytes) {
  const AckRange ranges[] = {{95, 100}, {86, 90}, {84, 84}};
  uint8_t buffer[16];
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_ack_ranges(writer, ranges));
  EXPECT_EQ(std::vector<uint8_t>(writer.written().begin(), writer.written().end()),
            (std::vector<uint8_t>{0x02, 0x05, 0x03, 0x04, 0x00, 0x00}));
}

TEST(AckRangesEncodeTest, RejectsInvalidRangesAndWritesNothing) {
  uint8_t buffer[64];
  const std::vector<std::vector<AckRange>> invalid = {
      {},                          // empty
      {{5, 4}},                    // smallest > largest
      {{10, 12}, {12, 14}},        // ascending
      {{10, 12}, {8, 9}},          // adjacent: gap would be -1
      {{10, 12}, {8, 10}},         // overlapping
      {{10, 12}, {5, 7}, {3, 6}},  // later overlap
      {{0, kVarintMax + 1}},       // beyond the varint range
  };
  for (const auto& ranges : invalid) {
    ByteWriter writer(buffer);
    EXPECT_FALSE(encode_ack_ranges(writer, ranges));
    EXPECT_EQ(writer.position(), 0u);
  }
}

TEST(AckRangesEncodeTest, DoesNotFitWritesNothing) {
  const AckRange ranges[] = {{1000, 2000}, {10, 20}};  // 1 + 2 + 2 + 1 bytes
  for (size_t size = 0; size < 6; ++size) {
    std::vector<uint8_t> buffer(size);
    ByteWriter writer(buffer);
    EXPECT_FALSE(encode_ack_ranges(writer, ranges)) << size;
    EXPECT_EQ(writer.position(), 0u);
  }
  std::vector<uint8_t> buffer(6);
  ByteWriter writer(buffer);
  EXPECT_TRUE(encode_ack_ranges(writer, ranges));
  EXPECT_EQ(writer.position(), 6u);
}

TEST(AckRangesEncodeTest, ManyRangesRoundTrip) {
  // 500 ranges of growing size and gaps, down to packet number 0.
  std::vector<AckRange> ranges;
  uint64_t next_largest = 2'000'000;
  for (uint64_t i = 0; ranges.size() < 500; ++i) {
    const uint64_t length = i % 7;
    ranges.push_back({next_largest - length, next_largest});
    next_largest = next_largest - length - 2 - (i * 37) % 1000;
  }
  ranges.back().smallest = 0;  // let the last one reach packet number 0
  std::vector<uint8_t> buffer(8 * 1024);
  ByteWriter writer(buffer);
  ASSERT_TRUE(encode_ack_ranges(writer, ranges));
  const std::vector<uint8_t> bytes(writer.written().begin(), writer.written().end());

  AckRangeView view;
  size_t consumed = 0;
  ASSERT_EQ(parse_exact(bytes, ranges[0].largest, view, &consumed), WireError::kOk);
  EXPECT_EQ(consumed, bytes.size());
  EXPECT_EQ(view.size(), 500u);
  EXPECT_EQ(view.smallest(), 0u);
  EXPECT_EQ(collect(view), ranges);

  // Re-encoding the view gives the same bytes, and an equal view.
  std::vector<uint8_t> again(bytes.size());
  ByteWriter again_writer(again);
  ASSERT_TRUE(encode_ack_ranges(again_writer, view));
  EXPECT_EQ(again, bytes);
  AckRangeView reparsed;
  ASSERT_EQ(parse_exact(again, ranges[0].largest, reparsed), WireError::kOk);
  EXPECT_TRUE(same_ranges(view, reparsed));
}

TEST(AckRangesEncodeTest, SameRangesNoticesDifferences) {
  AckRangeView a, b, c;
  ASSERT_EQ(parse_exact({0x01, 0x05, 0x03, 0x04}, 100, a), WireError::kOk);
  ASSERT_EQ(parse_exact({0x01, 0x05, 0x03, 0x03}, 100, b), WireError::kOk);
  ASSERT_EQ(parse_exact({0x01, 0x05, 0x03, 0x04}, 101, c), WireError::kOk);
  EXPECT_TRUE(same_ranges(a, a));
  EXPECT_FALSE(same_ranges(a, b));
  EXPECT_FALSE(same_ranges(a, c));
}

}  // namespace
}  // namespace dpquic::wire
