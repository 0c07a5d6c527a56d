#include "quic/conn/path_validation.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::conn {
namespace {

using Data = std::array<uint8_t, 8>;

PathAddresses addresses(uint8_t last_octet, uint16_t port) {
  PathAddresses out;
  out.local = SocketAddress::ipv4(192, 0, 2, 1, 443);
  out.remote = SocketAddress::ipv4(198, 51, 100, last_octet, port);
  return out;
}

Data data_of(uint64_t value) {
  Data data;
  for (size_t i = 0; i < 8; ++i) data[i] = static_cast<uint8_t>(value >> (8 * (7 - i)));
  return data;
}

// Writes the path's PATH_CHALLENGE and returns its data, checking the bytes.
Data written_challenge(PathTable& paths, uint32_t id) {
  std::array<uint8_t, 9> buffer{};
  wire::ByteWriter writer(buffer);
  EXPECT_TRUE(paths.write_path_challenge(id, writer));
  EXPECT_EQ(writer.position(), 9u);
  EXPECT_EQ(buffer[0], 0x1a);
  Data data;
  std::copy(buffer.begin() + 1, buffer.end(), data.begin());
  EXPECT_EQ(data, paths.path(id).challenge);
  return data;
}

std::optional<Data> written_response(PathTable& paths, uint32_t id) {
  std::array<uint8_t, 9> buffer{};
  wire::ByteWriter writer(buffer);
  if (!paths.write_path_response(id, writer)) return std::nullopt;
  EXPECT_EQ(writer.position(), 9u);
  EXPECT_EQ(buffer[0], 0x1b);
  wire::ByteReader reader(writer.written());
  wire::Frame frame;
  EXPECT_EQ(wire::decode_frame(reader, frame), wire::WireError::kOk);
  EXPECT_EQ(frame.type, wire::FrameType::kPathResponse);
  return frame.path_response.data;
}

class PathTableTest : public ::testing::Test {
 protected:
  PathTableTest() : paths_(random_) { paths_.add_initial(addresses(1, 5000), true); }
  RandomSource random_;
  PathTable paths_;
};

TEST_F(PathTableTest, InitialPath) {
  EXPECT_EQ(paths_.find(addresses(1, 5000)), std::optional<uint32_t>(0));
  EXPECT_EQ(paths_.find(addresses(1, 5001)), std::nullopt);
  EXPECT_TRUE(paths_.path(0).validated);
  EXPECT_TRUE(paths_.path(0).in_use);
  EXPECT_FALSE(paths_.challenge_due(0));
  EXPECT_EQ(paths_.next_deadline(), kNever);
  EXPECT_EQ(paths_.amplification_budget(0), UINT64_MAX);
}

TEST_F(PathTableTest, ValidationSucceeds) {
  const Instant now = 10 * kSecond;
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), now, 100 * kMillisecond);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(paths_.find(addresses(2, 6000)), std::optional<uint32_t>(id));
  EXPECT_FALSE(paths_.path(id).validated);
  // max(3 * 100 ms, 6 * 333 ms) = 1998 ms.
  EXPECT_EQ(paths_.path(id).validation_deadline, now + 1998 * kMillisecond);
  EXPECT_EQ(paths_.next_deadline(), now + 1998 * kMillisecond);
  ASSERT_TRUE(paths_.challenge_due(id));
  const Data sent = written_challenge(paths_, id);
  EXPECT_TRUE(paths_.challenge_due(id));  // until the connection says it went out
  paths_.on_challenge_sent(id);
  EXPECT_FALSE(paths_.challenge_due(id));

  Data wrong = sent;
  wrong[7] ^= 1;
  EXPECT_EQ(paths_.on_path_response(wrong), std::nullopt);
  EXPECT_FALSE(paths_.path(id).validated);
  EXPECT_EQ(paths_.on_path_response(sent), std::optional<uint32_t>(id));
  EXPECT_TRUE(paths_.path(id).validated);
  EXPECT_EQ(paths_.path(id).validation_deadline, kNever);
  EXPECT_EQ(paths_.next_deadline(), kNever);
  // A duplicate response validates nothing more.
  EXPECT_EQ(paths_.on_path_response(sent), std::nullopt);
}

TEST_F(PathTableTest, DeadlineUsesLargerOfPtoAndInitialRtt) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), 0, 1 * kSecond);
  EXPECT_EQ(paths_.path(id).validation_deadline, 3 * kSecond);
}

TEST_F(PathTableTest, ValidationTimesOut) {
  const Instant now = 5 * kSecond;
  const uint32_t a = paths_.add_and_validate(addresses(2, 6000), now, 1 * kSecond);
  const uint32_t b = paths_.add_and_validate(addresses(3, 6000), now + kSecond, 1 * kSecond);
  std::array<uint32_t, 4> failed{};
  size_t count = 99;
  paths_.on_timeout(now + 3 * kSecond - 1, failed, count);
  EXPECT_EQ(count, 0u);
  paths_.on_timeout(now + 3 * kSecond, failed, count);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(failed[0], a);
  EXPECT_FALSE(paths_.path(a).validated);
  EXPECT_FALSE(paths_.challenge_due(a));
  EXPECT_EQ(paths_.next_deadline(), now + 4 * kSecond);
  // A response after failure no longer validates.
  const Data late = paths_.path(b).challenge;
  paths_.on_timeout(now + 10 * kSecond, failed, count);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(failed[0], b);
  EXPECT_EQ(paths_.on_path_response(late), std::nullopt);
  EXPECT_EQ(paths_.next_deadline(), kNever);
}

TEST_F(PathTableTest, TimeoutOutputTooSmallKeepsTheRest) {
  paths_.add_and_validate(addresses(2, 1), 0, kSecond);
  paths_.add_and_validate(addresses(3, 1), 0, kSecond);
  std::array<uint32_t, 1> failed{};
  size_t count = 0;
  paths_.on_timeout(10 * kSecond, failed, count);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(failed[0], 1u);
  paths_.on_timeout(10 * kSecond, failed, count);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(failed[0], 2u);
  paths_.on_timeout(10 * kSecond, failed, count);
  EXPECT_EQ(count, 0u);
}

TEST_F(PathTableTest, LostChallengeResentWithFreshData) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), 0, kSecond);
  const Data first = written_challenge(paths_, id);
  paths_.on_challenge_sent(id);
  paths_.on_challenge_lost(id);
  ASSERT_TRUE(paths_.challenge_due(id));
  const Data second = written_challenge(paths_, id);
  EXPECT_NE(first, second);  // §13.3: a different payload each time
  paths_.on_challenge_sent(id);
  // The "lost" packet was only late: its response still validates.
  EXPECT_EQ(paths_.on_path_response(first), std::optional<uint32_t>(id));
  EXPECT_TRUE(paths_.path(id).validated);
  // Once validated, a loss report resends nothing.
  paths_.on_challenge_lost(id);
  EXPECT_FALSE(paths_.challenge_due(id));
}

TEST_F(PathTableTest, LostChallengesAreResentAtMostUpToTheHistoryAndStayAnswerable) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), 0, kSecond);
  std::vector<Data> sent;
  for (size_t i = 0; i < PathTable::kChallengeHistory; ++i) {
    ASSERT_TRUE(paths_.challenge_due(id));
    sent.push_back(written_challenge(paths_, id));
    paths_.on_challenge_sent(id);
    paths_.on_challenge_lost(id);
  }
  // The third loss re-arms nothing: a dead address is not flooded.
  EXPECT_FALSE(paths_.challenge_due(id));
  EXPECT_NE(sent[0], sent[1]);
  EXPECT_NE(sent[1], sent[2]);
  // Every challenge sent is still answerable, the first one included.
  EXPECT_EQ(paths_.on_path_response(sent[0]), std::optional<uint32_t>(id));
}

TEST_F(PathTableTest, ANewValidationMaySendChallengesAgain) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), 0, kSecond);
  for (size_t i = 0; i < PathTable::kChallengeHistory; ++i) {
    written_challenge(paths_, id);
    paths_.on_challenge_sent(id);
    paths_.on_challenge_lost(id);
  }
  ASSERT_FALSE(paths_.challenge_due(id));
  paths_.start_validation(id, 10 * kSecond, kSecond);
  EXPECT_TRUE(paths_.challenge_due(id));
}

TEST_F(PathTableTest, ResponseValidatesWhicheverPathItArrivesOn) {
  // §8.2.3: the connection passes the data only; the challenge's path wins.
  const uint32_t a = paths_.add_and_validate(addresses(2, 1), 0, kSecond);
  const uint32_t b = paths_.add_and_validate(addresses(3, 1), 0, kSecond);
  EXPECT_EQ(paths_.on_path_response(paths_.path(b).challenge), std::optional<uint32_t>(b));
  EXPECT_FALSE(paths_.path(a).validated);
}

TEST_F(PathTableTest, AmplificationBudget) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 6000), 0, kSecond);
  EXPECT_EQ(paths_.amplification_budget(id), 0u);
  paths_.on_datagram_received(id, 100);
  EXPECT_EQ(paths_.amplification_budget(id), 300u);
  paths_.on_datagram_sent(id, 250);
  EXPECT_EQ(paths_.amplification_budget(id), 50u);
  paths_.on_datagram_sent(id, 50);
  EXPECT_EQ(paths_.amplification_budget(id), 0u);
  paths_.path(id).bytes_sent = 1000;  // overshoot (e.g. a probe): no wrap
  EXPECT_EQ(paths_.amplification_budget(id), 0u);
  paths_.on_datagram_received(id, 1200);
  EXPECT_EQ(paths_.amplification_budget(id), 3 * 1300u - 1000u);
  paths_.path(id).bytes_received = UINT64_MAX / 2;  // 3x saturates
  EXPECT_EQ(paths_.amplification_budget(id), UINT64_MAX - 1000);
  paths_.path(id).validated = true;
  EXPECT_EQ(paths_.amplification_budget(id), UINT64_MAX);
}

// quiche CVE-2023-6193: PATH_CHALLENGE floods must not queue responses
// without bound.
TEST_F(PathTableTest, ChallengeFloodKeepsAtMostFourResponses) {
  const uint32_t other = paths_.add_and_validate(addresses(2, 6000), 0, kSecond);
  for (uint64_t i = 0; i < 10'000; ++i) {
    paths_.on_path_challenge(i % 2 == 0 ? 0 : other, data_of(i));
    ASSERT_LE(paths_.pending_response_count(), PathTable::kMaxPendingResponses);
  }
  EXPECT_EQ(paths_.pending_response_count(), 4u);
  // The newest four survive, each answered once on its own path, oldest first.
  EXPECT_EQ(written_response(paths_, 0), data_of(9996));
  EXPECT_EQ(written_response(paths_, 0), data_of(9998));
  EXPECT_EQ(written_response(paths_, 0), std::nullopt);
  EXPECT_FALSE(paths_.response_due(0));
  EXPECT_TRUE(paths_.response_due(other));
  EXPECT_EQ(written_response(paths_, other), data_of(9997));
  EXPECT_EQ(written_response(paths_, other), data_of(9999));
  EXPECT_FALSE(paths_.response_due(other));
  EXPECT_EQ(paths_.pending_response_count(), 0u);
}

TEST_F(PathTableTest, ResponseThatDoesNotFitStaysQueued) {
  paths_.on_path_challenge(0, data_of(7));
  std::array<uint8_t, 8> small{};
  wire::ByteWriter writer(small);
  EXPECT_FALSE(paths_.write_path_response(0, writer));
  EXPECT_EQ(writer.position(), 0u);
  EXPECT_TRUE(paths_.response_due(0));
  const std::array<uint8_t, 9> expected = {0x1b, 0, 0, 0, 0, 0, 0, 0, 7};
  std::array<uint8_t, 9> buffer{};
  wire::ByteWriter fits(buffer);
  EXPECT_TRUE(paths_.write_path_response(0, fits));
  EXPECT_EQ(buffer, expected);
}

TEST_F(PathTableTest, ChallengeOnUnknownPathIgnored) {
  paths_.on_path_challenge(3, data_of(1));
  paths_.on_path_challenge(PathTable::kNoPath, data_of(1));
  EXPECT_EQ(paths_.pending_response_count(), 0u);
}

TEST_F(PathTableTest, EvictsOldestUnvalidatedPathNotInUse) {
  const uint32_t a = paths_.add_and_validate(addresses(2, 1), 0, kSecond);
  const uint32_t b = paths_.add_and_validate(addresses(3, 1), 0, kSecond);
  const uint32_t c = paths_.add_and_validate(addresses(4, 1), 0, kSecond);
  EXPECT_EQ((std::array<uint32_t, 3>{a, b, c}), (std::array<uint32_t, 3>{1, 2, 3}));
  // a validated; b has a queued response. The table is full.
  ASSERT_TRUE(paths_.on_path_response(paths_.path(a).challenge).has_value());
  paths_.on_path_challenge(b, data_of(5));
  const uint32_t d = paths_.add_and_validate(addresses(5, 1), 0, kSecond);
  EXPECT_EQ(d, b);  // oldest unvalidated, not in use
  EXPECT_EQ(paths_.find(addresses(3, 1)), std::nullopt);
  EXPECT_EQ(paths_.find(addresses(5, 1)), std::optional<uint32_t>(d));
  EXPECT_FALSE(paths_.response_due(d));  // b's response went with it
  EXPECT_TRUE(paths_.challenge_due(d));
  // Validated and unvalidated-but-newer: the unvalidated c goes next.
  EXPECT_EQ(paths_.add_and_validate(addresses(6, 1), 0, kSecond), c);
  // Only validated paths left besides in-use 0: the oldest (a) goes.
  ASSERT_TRUE(paths_.on_path_response(paths_.path(d).challenge).has_value());
  ASSERT_TRUE(paths_.on_path_response(paths_.path(c).challenge).has_value());
  EXPECT_EQ(paths_.add_and_validate(addresses(7, 1), 0, kSecond), a);
  EXPECT_TRUE(paths_.find(addresses(1, 5000)).has_value());  // path 0 in use, kept
}

TEST_F(PathTableTest, KnownAddressesRestartValidation) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 1), 0, kSecond);
  const Data first = paths_.path(id).challenge;
  EXPECT_EQ(paths_.add_and_validate(addresses(2, 1), kSecond, kSecond), id);
  EXPECT_NE(paths_.path(id).challenge, first);
  EXPECT_EQ(paths_.path(id).validation_deadline, 4 * kSecond);
}

TEST_F(PathTableTest, RemoveFreesTheSlot) {
  const uint32_t id = paths_.add_and_validate(addresses(2, 1), 0, kSecond);
  paths_.on_path_challenge(id, data_of(1));
  paths_.remove(id);
  EXPECT_FALSE(paths_.exists(id));
  EXPECT_EQ(paths_.find(addresses(2, 1)), std::nullopt);
  EXPECT_EQ(paths_.pending_response_count(), 0u);
  EXPECT_EQ(paths_.next_deadline(), kNever);
  EXPECT_FALSE(paths_.challenge_due(id));
}

TEST_F(PathTableTest, SteadyStateAllocatesNothing) {
  std::array<uint8_t, 64> buffer{};
  std::array<uint32_t, PathTable::kMaxPaths> failed{};
  testing::AllocationWindow window;
  for (uint64_t i = 0; i < 5000; ++i) {
    const uint32_t id = paths_.add_and_validate(addresses(static_cast<uint8_t>(i % 200 + 2), 1),
                                                i * kMillisecond, kSecond);
    paths_.on_path_challenge(id, data_of(i));
    wire::ByteWriter writer(buffer);
    (void)paths_.write_path_challenge(id, writer);
    (void)paths_.write_path_response(id, writer);
    if (i % 2 == 0) (void)paths_.on_path_response(paths_.path(id).challenge);
    size_t count = 0;
    paths_.on_timeout(i * kMillisecond, failed, count);
  }
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace dpquic::conn
