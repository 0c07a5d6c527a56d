#include "quic/conn/cid_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

#include "quic/conn/random.h"

namespace dpquic::conn {
namespace {

TEST(RandomSource, FillsAcrossBatchBoundaries) {
  RandomSource random;
  // Three draws straddling the 4 KiB batch; each must be random-looking
  // (an all-zero 1000-byte draw has probability 2^-8000).
  std::vector<uint8_t> first(3000), second(3000), third(RandomSource::kBatchSize * 2 + 7);
  random.fill(first);
  random.fill(second);
  random.fill(third);
  for (const auto* draw : {&first, &second, &third}) {
    EXPECT_NE(std::count(draw->begin(), draw->end(), 0), static_cast<long>(draw->size()));
  }
  EXPECT_NE(first, second);
  EXPECT_FALSE(std::equal(second.begin(), second.end(), third.begin()));
}

TEST(RandomSource, NextU64Distinct) {
  RandomSource random;
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(random.next_u64());
  EXPECT_EQ(seen.size(), 10000u);  // a 64-bit collision in 10k draws: ~2^-37
}

TEST(RandomSource, TwoSourcesDiffer) {
  RandomSource a, b;
  EXPECT_NE(a.next_u64(), b.next_u64());
}

TEST(CidGenerator, ExactLayout) {
  RandomSource random;
  CidLayout layout;
  layout.server_id = {0xaa, 0xbb, 0xcc};
  layout.config_rotation = 2;
  layout.cid_length = 12;
  CidGenerator generator(layout, 0x5e, random);
  EXPECT_EQ(generator.cid_length(), 12u);

  const wire::ConnectionId a = generator.generate();
  const wire::ConnectionId b = generator.generate();
  ASSERT_EQ(a.size(), 12u);
  // Config rotation 2 in the top 3 bits, 12 - 1 = 11 in the low 5.
  EXPECT_EQ(a.data()[0], 0x4b);
  EXPECT_EQ(a.data()[1], 0xaa);
  EXPECT_EQ(a.data()[2], 0xbb);
  EXPECT_EQ(a.data()[3], 0xcc);
  EXPECT_EQ(a.data()[4], 0x5e);
  // The remaining 7 bytes are the nonce: the only part that differs.
  EXPECT_TRUE(std::equal(a.data(), a.data() + 5, b.data()));
  EXPECT_FALSE(std::equal(a.data() + 5, a.data() + 12, b.data() + 5));
  EXPECT_EQ(CidGenerator::first_octet(layout), 0x4b);
}

TEST(CidGenerator, EmptyServerIdAndLongest) {
  RandomSource random;
  CidLayout layout;
  layout.config_rotation = 6;
  layout.cid_length = 20;
  CidGenerator generator(layout, 3, random);
  const wire::ConnectionId cid = generator.generate();
  ASSERT_EQ(cid.size(), 20u);
  EXPECT_EQ(cid.data()[0], 0xd3);  // 110 10011
  EXPECT_EQ(cid.data()[1], 3);

  layout.config_rotation = 0;
  layout.cid_length = 8;
  layout.server_id = {0x01, 0x02};  // 1 + 2 + 1 + 4 = 8
  CidGenerator shortest(layout, 200, random);
  const wire::ConnectionId small = shortest.generate();
  ASSERT_EQ(small.size(), 8u);
  EXPECT_EQ(small.data()[0], 0x07);
  EXPECT_EQ(small.data()[1], 0x01);
  EXPECT_EQ(small.data()[2], 0x02);
  EXPECT_EQ(small.data()[3], 200);
}

TEST(CidGenerator, CoreOfRoundTripsEveryCore) {
  RandomSource random;
  for (const size_t sid_length : {0u, 1u, 4u, 14u}) {
    CidLayout layout;
    for (size_t i = 0; i < sid_length; ++i) layout.server_id.push_back(static_cast<uint8_t>(i * 7));
    layout.config_rotation = 1;
    layout.cid_length = 20;
    for (int core = 0; core < 256; ++core) {
      CidGenerator generator(layout, static_cast<uint8_t>(core), random);
      for (int i = 0; i < 4; ++i) {
        const wire::ConnectionId cid = generator.generate();
        const std::optional<uint8_t> owner = CidGenerator::core_of(cid.span(), layout);
        ASSERT_TRUE(owner.has_value()) << "sid " << sid_length << " core " << core;
        EXPECT_EQ(*owner, core);
      }
    }
  }
}

TEST(CidGenerator, CoreOfRejectsForeignCids) {
  RandomSource random;
  CidLayout layout;
  layout.server_id = {0x10, 0x20};
  layout.config_rotation = 3;
  layout.cid_length = 16;
  CidGenerator generator(layout, 9, random);
  const wire::ConnectionId cid = generator.generate();
  ASSERT_EQ(CidGenerator::core_of(cid.span(), layout), std::optional<uint8_t>(9));

  std::array<uint8_t, 20> bytes{};
  std::copy(cid.data(), cid.data() + 16, bytes.begin());
  // Wrong length (a client's 8-byte Initial DCID, or one byte more).
  EXPECT_EQ(CidGenerator::core_of(std::span(bytes.data(), 8), layout), std::nullopt);
  EXPECT_EQ(CidGenerator::core_of(std::span(bytes.data(), 17), layout), std::nullopt);
  EXPECT_EQ(CidGenerator::core_of({}, layout), std::nullopt);
  // Another config rotation.
  auto modified = bytes;
  modified[0] = static_cast<uint8_t>((4 << 5) | 15);
  EXPECT_EQ(CidGenerator::core_of(std::span(modified.data(), 16), layout), std::nullopt);
  // Unroutable (0b111).
  modified[0] = static_cast<uint8_t>((7 << 5) | 15);
  EXPECT_EQ(CidGenerator::core_of(std::span(modified.data(), 16), layout), std::nullopt);
  // Length self-description does not match.
  modified[0] = static_cast<uint8_t>((3 << 5) | 14);
  EXPECT_EQ(CidGenerator::core_of(std::span(modified.data(), 16), layout), std::nullopt);
  // Another server's ID.
  modified = bytes;
  modified[2] ^= 1;
  EXPECT_EQ(CidGenerator::core_of(std::span(modified.data(), 16), layout), std::nullopt);
  // The same CID under a layout with another server ID.
  CidLayout other = layout;
  other.server_id = {0x10, 0x21};
  EXPECT_EQ(CidGenerator::core_of(cid.span(), other), std::nullopt);
}

TEST(CidGenerator, RejectsInvalidLayouts) {
  RandomSource random;
  auto make = [&random](std::vector<uint8_t> sid, uint8_t rotation, size_t length) {
    CidLayout layout;
    layout.server_id = std::move(sid);
    layout.config_rotation = rotation;
    layout.cid_length = length;
    CidGenerator generator(layout, 0, random);
  };
  EXPECT_NO_THROW(make({}, 0, 8));
  EXPECT_NO_THROW(make(std::vector<uint8_t>(14, 1), 6, 20));  // 1 + 14 + 1 + 4 = 20
  EXPECT_THROW(make(std::vector<uint8_t>(15, 1), 0, 20), std::invalid_argument);  // 21 > 20
  EXPECT_THROW(make(std::vector<uint8_t>(16, 1), 0, 20), std::invalid_argument);
  EXPECT_THROW(make({}, 7, 16), std::invalid_argument);
  EXPECT_THROW(make({}, 8, 16), std::invalid_argument);
  EXPECT_THROW(make({}, 0, 7), std::invalid_argument);
  EXPECT_THROW(make({}, 0, 21), std::invalid_argument);
  EXPECT_THROW(make({1, 2, 3}, 0, 8), std::invalid_argument);  // 1 + 3 + 1 + 4 = 9
  EXPECT_NO_THROW(make({1, 2, 3}, 0, 9));
}

}  // namespace
}  // namespace dpquic::conn
