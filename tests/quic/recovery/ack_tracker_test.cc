// AckTracker scenarios, one per rule of RFC 9000 §13.2 and §13.4.1. Every
// ACK written is checked byte for byte and decoded with the wire decoder
// (ranges, ACK Delay, ECN counts).
#include "quic/recovery/ack_tracker.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "quic/wire/frame_codec.h"
#include "tests/util/hex.h"

namespace dpquic::recovery {
namespace {

using ::dpquic::testing::to_hex;
using wire::AckRange;
using wire::EcnCounts;
using wire::FrameType;
using wire::PacketNumberSpace;

constexpr uint8_t kNotEct = 0;
constexpr uint8_t kEct1 = 1;
constexpr uint8_t kEct0 = 2;
constexpr uint8_t kCe = 3;

constexpr Instant kStart = 1000 * kSecond;

struct DecodedAck {
  FrameType type = FrameType::kPadding;
  uint64_t ack_delay = 0;
  std::vector<AckRange> ranges;
  EcnCounts ecn;
};

DecodedAck decode(const std::vector<uint8_t>& bytes) {
  DecodedAck out;
  wire::ByteReader reader(bytes);
  wire::Frame frame;
  EXPECT_EQ(wire::decode_frame(reader, frame), wire::WireError::kOk);
  EXPECT_TRUE(reader.empty()) << "bytes after the frame";
  out.type = frame.type;
  if (frame.type != FrameType::kAck && frame.type != FrameType::kAckEcn) {
    ADD_FAILURE() << "not an ACK frame";
    return out;
  }
  out.ack_delay = frame.ack.ack_delay;
  for (const AckRange& range : frame.ack.ranges) out.ranges.push_back(range);
  out.ecn = frame.ack.ecn;
  return out;
}

// Writes the tracker's ACK into a buffer of `capacity` bytes.
std::vector<uint8_t> write_ack(AckTracker& tracker, Instant now, size_t capacity = 1500) {
  std::vector<uint8_t> buffer(capacity);
  wire::ByteWriter writer(buffer);
  const size_t written = tracker.write_ack_frame(writer, now);
  EXPECT_EQ(written, writer.position());
  buffer.resize(written);
  return buffer;
}

AckTracker make(PacketNumberSpace space, uint64_t threshold = 2,
                Duration max_ack_delay = 25 * kMillisecond) {
  AckTrackerConfig config;
  config.space = space;
  config.ack_eliciting_threshold = threshold;
  config.max_ack_delay = max_ack_delay;
  return AckTracker(config);
}

void receive(AckTracker& tracker, Instant now, uint64_t pn, bool ack_eliciting,
             uint8_t ecn = kNotEct) {
  EXPECT_FALSE(tracker.on_packet_received(now, pn, ack_eliciting, ecn)) << "pn " << pn;
}

TEST(AckTrackerTest, RejectsBadConfig) {
  AckTrackerConfig config;
  config.ack_delay_exponent = 21;
  EXPECT_THROW(AckTracker{config}, std::invalid_argument);
  config.ack_delay_exponent = 20;
  config.max_ranges = 0;
  EXPECT_THROW(AckTracker{config}, std::invalid_argument);
  config.max_ranges = 4;
  EXPECT_EQ(AckTracker(config).received().capacity(), 4u);
}

TEST(AckTrackerTest, NothingReceivedNothingToSend) {
  AckTracker tracker;
  EXPECT_FALSE(tracker.ack_required(kStart));
  EXPECT_EQ(tracker.ack_deadline(), kNever);
  EXPECT_FALSE(tracker.has_ack_to_send());
  EXPECT_FALSE(tracker.has_received());
  EXPECT_TRUE(write_ack(tracker, kStart).empty());
}

TEST(AckTrackerTest, InitialAndHandshakeAckElicitingAreAcknowledgedAtOnce) {
  for (PacketNumberSpace space : {PacketNumberSpace::kInitial, PacketNumberSpace::kHandshake}) {
    AckTracker tracker = make(space);
    receive(tracker, kStart, 0, true);
    EXPECT_TRUE(tracker.ack_required(kStart));
    EXPECT_EQ(tracker.ack_deadline(), kStart);
    EXPECT_TRUE(tracker.has_ack_to_send());
    // ACK, Largest 0, Delay 0, Range Count 0, First Range 0.
    const std::vector<uint8_t> ack = write_ack(tracker, kStart);
    EXPECT_EQ(to_hex(ack), "0200000000");
    EXPECT_EQ(decode(ack).ranges, (std::vector<AckRange>{{0, 0}}));
    EXPECT_EQ(tracker.on_ack_sent(kStart), 0u);
    EXPECT_FALSE(tracker.ack_required(kStart + kSecond));
    EXPECT_EQ(tracker.ack_deadline(), kNever);
    EXPECT_FALSE(tracker.has_ack_to_send());
    EXPECT_EQ(tracker.last_ack_sent_time(), kStart);

    // The next one too, even though it is the first since the last ACK.
    receive(tracker, kStart + kMillisecond, 1, true);
    EXPECT_TRUE(tracker.ack_required(kStart + kMillisecond));
    EXPECT_EQ(tracker.ack_deadline(), kStart + kMillisecond);
  }
}

TEST(AckTrackerTest, ApplicationAcknowledgesAfterTheSecondAckElicitingPacket) {
  AckTracker tracker = make(PacketNumberSpace::kApplication);
  receive(tracker, kStart, 0, true);
  EXPECT_FALSE(tracker.ack_required(kStart));
  EXPECT_TRUE(tracker.has_ack_to_send());
  receive(tracker, kStart + kMillisecond, 1, true);
  EXPECT_TRUE(tracker.ack_required(kStart + kMillisecond));
  EXPECT_EQ(tracker.ack_deadline(), kStart + kMillisecond);
  // Written 1 ms after pn 1 arrived: 1000 us >> 3 = 125 (0x407d).
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + 2 * kMillisecond);
  EXPECT_EQ(to_hex(ack), "0201407d0001");
  const DecodedAck decoded = decode(ack);
  EXPECT_EQ(decoded.type, FrameType::kAck);
  EXPECT_EQ(decoded.ack_delay, 125u);
  EXPECT_EQ(decoded.ranges, (std::vector<AckRange>{{0, 1}}));
  EXPECT_EQ(tracker.on_ack_sent(kStart + 2 * kMillisecond), 1u);
  EXPECT_FALSE(tracker.ack_required(kStart + kSecond));

  // The count restarts after an ACK: pn 2 alone waits, pn 3 triggers.
  receive(tracker, kStart + 3 * kMillisecond, 2, true);
  EXPECT_FALSE(tracker.ack_required(kStart + 3 * kMillisecond));
  receive(tracker, kStart + 4 * kMillisecond, 3, true);
  EXPECT_TRUE(tracker.ack_required(kStart + 4 * kMillisecond));
}

TEST(AckTrackerTest, DelayTimerExpiresMaxAckDelayAfterTheFirstUnacknowledgedPacket) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 2, 20 * kMillisecond);
  receive(tracker, kStart, 0, true);
  EXPECT_EQ(tracker.ack_deadline(), kStart + 20 * kMillisecond);
  // Later non-ack-eliciting packets move nothing.
  receive(tracker, kStart + 5 * kMillisecond, 1, false);
  EXPECT_EQ(tracker.ack_deadline(), kStart + 20 * kMillisecond);
  EXPECT_FALSE(tracker.ack_required(kStart + 20 * kMillisecond - 1));
  EXPECT_TRUE(tracker.ack_required(kStart + 20 * kMillisecond));
  // pn 1 (the largest) arrived 15 ms earlier: 15000 us >> 3 = 1875 (0x4753).
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + 20 * kMillisecond);
  EXPECT_EQ(to_hex(ack), "020147530001");
  EXPECT_EQ(decode(ack).ack_delay, 1875u);
  EXPECT_EQ(tracker.on_ack_sent(kStart + 20 * kMillisecond), 1u);
  EXPECT_EQ(tracker.ack_deadline(), kNever);

  // The timer starts again from the next ack-eliciting packet.
  receive(tracker, kStart + 50 * kMillisecond, 2, true);
  EXPECT_EQ(tracker.ack_deadline(), kStart + 70 * kMillisecond);
}

TEST(AckTrackerTest, GapBelowANewAckElicitingPacketIsAcknowledgedAtOnce) {
  // A high threshold, so only the gap rule can fire.
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  receive(tracker, kStart, 0, true);
  EXPECT_FALSE(tracker.ack_required(kStart));
  receive(tracker, kStart + kMillisecond, 2, true);  // pn 1 missing
  EXPECT_TRUE(tracker.ack_required(kStart + kMillisecond));
  EXPECT_EQ(tracker.ack_deadline(), kStart + kMillisecond);
  // Largest 2, Delay 0, 1 more range, First Range 0, Gap 0, Length 0.
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + kMillisecond);
  EXPECT_EQ(to_hex(ack), "02020001000000");
  EXPECT_EQ(decode(ack).ranges, (std::vector<AckRange>{{2, 2}, {0, 0}}));
  tracker.on_ack_sent(kStart + kMillisecond);

  // The first packet of the space leaving numbers below it missing.
  AckTracker fresh = make(PacketNumberSpace::kApplication, 100);
  receive(fresh, kStart, 3, true);
  EXPECT_TRUE(fresh.ack_required(kStart));
}

TEST(AckTrackerTest, GapFilledByNonAckElicitingPacketsIsNoGap) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  receive(tracker, kStart, 0, true);
  receive(tracker, kStart, 1, false);
  receive(tracker, kStart, 2, false);
  receive(tracker, kStart, 3, true);
  EXPECT_FALSE(tracker.ack_required(kStart));
  EXPECT_EQ(tracker.ack_deadline(), kStart + 25 * kMillisecond);
  // A gap right after the largest ack-eliciting packet still counts, even if
  // the missing packet would have been non-ack-eliciting.
  receive(tracker, kStart, 5, true);
  EXPECT_TRUE(tracker.ack_required(kStart));
}

TEST(AckTrackerTest, ReorderedAckElicitingPacketIsAcknowledgedAtOnce) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  for (uint64_t pn : {0, 1, 2}) receive(tracker, kStart, pn, true);
  EXPECT_FALSE(tracker.ack_required(kStart));
  receive(tracker, kStart + kMillisecond, 4, true);  // gap: at once
  EXPECT_EQ(to_hex(write_ack(tracker, kStart + kMillisecond)), "02040001000002");
  EXPECT_EQ(tracker.on_ack_sent(kStart + kMillisecond), 4u);
  EXPECT_FALSE(tracker.ack_required(kStart + kMillisecond));

  // pn 3 arrives late: below the largest ack-eliciting packet.
  receive(tracker, kStart + 2 * kMillisecond, 3, true);
  EXPECT_TRUE(tracker.ack_required(kStart + 2 * kMillisecond));
  EXPECT_EQ(tracker.unacked_ack_eliciting(), 1u);
  // Delay counts from pn 4, the largest: 2000 us >> 3 = 250 (0x40fa).
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + 3 * kMillisecond);
  EXPECT_EQ(to_hex(ack), "020440fa0004");
  EXPECT_EQ(decode(ack).ranges, (std::vector<AckRange>{{0, 4}}));
}

TEST(AckTrackerTest, ReorderedNonAckElicitingPacketDoesNotTrigger) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  receive(tracker, kStart, 0, true);
  receive(tracker, kStart, 2, false);  // gap, but not ack-eliciting
  EXPECT_FALSE(tracker.ack_required(kStart));
  receive(tracker, kStart, 1, false);  // reordered, not ack-eliciting
  EXPECT_FALSE(tracker.ack_required(kStart));
  EXPECT_EQ(tracker.ack_deadline(), kStart + 25 * kMillisecond);
}

TEST(AckTrackerTest, CongestionExperiencedIsAcknowledgedAtOnce) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  receive(tracker, kStart, 0, true, kEct0);
  EXPECT_FALSE(tracker.ack_required(kStart));
  receive(tracker, kStart + kMillisecond, 1, true, kCe);
  EXPECT_TRUE(tracker.ack_required(kStart + kMillisecond));
  // ACK_ECN: Largest 1, Delay 0, Count 0, First Range 1, ECT0 1, ECT1 0, CE 1.
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + kMillisecond);
  EXPECT_EQ(to_hex(ack), "0301000001010001");
  const DecodedAck decoded = decode(ack);
  EXPECT_EQ(decoded.type, FrameType::kAckEcn);
  EXPECT_EQ(decoded.ecn, (EcnCounts{.ect0 = 1, .ect1 = 0, .ecn_ce = 1}));
}

TEST(AckTrackerTest, CongestionExperiencedOnNonAckElicitingPacket) {
  // Alone it never calls for an ACK.
  AckTracker alone = make(PacketNumberSpace::kApplication, 100);
  receive(alone, kStart, 0, false, kCe);
  EXPECT_FALSE(alone.ack_required(kStart + kSecond));
  EXPECT_EQ(alone.ack_deadline(), kNever);
  EXPECT_EQ(alone.ecn_counts().ecn_ce, 1u);

  // With an ack-eliciting packet already owed an ACK, that ACK goes now.
  AckTracker owed = make(PacketNumberSpace::kApplication, 100);
  receive(owed, kStart, 0, true);
  EXPECT_FALSE(owed.ack_required(kStart + kMillisecond));
  receive(owed, kStart + kMillisecond, 1, false, kCe);
  EXPECT_TRUE(owed.ack_required(kStart + kMillisecond));
  EXPECT_EQ(owed.ack_deadline(), kStart + kMillisecond);
}

TEST(AckTrackerTest, NonAckElicitingPacketsNeverRequireAnAck) {
  for (PacketNumberSpace space : {PacketNumberSpace::kInitial, PacketNumberSpace::kHandshake,
                                  PacketNumberSpace::kApplication}) {
    AckTracker tracker = make(space);
    // Gaps, reordering, CE marks: all non-ack-eliciting.
    const std::array<uint64_t, 8> numbers = {0, 1, 5, 3, 9, 2, 20, 4};
    Instant now = kStart;
    for (uint64_t pn : numbers) {
      receive(tracker, now, pn, false, pn % 2 == 0 ? kCe : kEct0);
      EXPECT_FALSE(tracker.ack_required(now));
      EXPECT_FALSE(tracker.ack_required(now + 3600 * kSecond));
      EXPECT_EQ(tracker.ack_deadline(), kNever);
      now += kMillisecond;
    }
    // They are reported when an ACK goes out for another reason.
    EXPECT_TRUE(tracker.has_ack_to_send());
    const DecodedAck decoded = decode(write_ack(tracker, now));
    EXPECT_EQ(decoded.ranges, (std::vector<AckRange>{{20, 20}, {9, 9}, {0, 5}}));
    EXPECT_EQ(decoded.ecn, (EcnCounts{.ect0 = 4, .ect1 = 0, .ecn_ce = 4}));
    tracker.on_ack_sent(now);
    EXPECT_FALSE(tracker.has_ack_to_send());
  }
}

TEST(AckTrackerTest, AckDelayFieldIsMicrosecondsShiftedByTheExponent) {
  struct Case {
    uint8_t exponent;
    Duration delay;
    const char* hex;
  };
  const Case cases[] = {
      {3, 8000 * kMicrosecond, "020a43e80000"},  // 8000 >> 3 = 1000
      {3, 7 * kMicrosecond, "020a000000"},       // below one unit: 0
      {3, 7999 * kNanosecond, "020a000000"},     // 7 us, nanoseconds dropped
      {0, 8000 * kMicrosecond, "020a5f400000"},  // 8000
      {20, 5 * kSecond, "020a040000"},           // 5000000 >> 20 = 4
  };
  for (const Case& c : cases) {
    AckTrackerConfig config;
    config.space = PacketNumberSpace::kInitial;
    config.ack_delay_exponent = c.exponent;
    AckTracker tracker(config);
    receive(tracker, kStart, 10, true);
    const std::vector<uint8_t> ack = write_ack(tracker, kStart + c.delay);
    EXPECT_EQ(to_hex(ack), c.hex) << "exponent " << int{c.exponent};
    EXPECT_EQ(decode(ack).ack_delay, (c.delay / kMicrosecond) >> c.exponent);
  }
}

TEST(AckTrackerTest, AckDelayCountsFromTheLargestPacketNotALaterSmallerOne) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  receive(tracker, kStart, 5, true);
  receive(tracker, kStart + 4 * kMillisecond, 4, true);  // reordered, later
  // 8 ms since pn 5: 8000 >> 3 = 1000 (0x43e8).
  EXPECT_EQ(to_hex(write_ack(tracker, kStart + 8 * kMillisecond)), "020543e80001");
}

TEST(AckTrackerTest, EcnCountsInAckEcnFrame) {
  AckTracker tracker = make(PacketNumberSpace::kApplication);
  receive(tracker, kStart, 0, true, kEct0);
  receive(tracker, kStart, 1, true, kEct0);
  receive(tracker, kStart, 2, false, kEct0);
  receive(tracker, kStart, 3, true, kEct1);
  receive(tracker, kStart, 4, false, kEct1);
  receive(tracker, kStart, 5, false, kNotEct);
  receive(tracker, kStart, 6, true, kCe);
  // Duplicates are not processed, so they are not counted (§13.4.1).
  EXPECT_TRUE(tracker.on_packet_received(kStart, 6, true, kCe));
  EXPECT_TRUE(tracker.on_packet_received(kStart, 0, true, kEct0));
  // Only the low two bits of the codepoint (e.g. a whole TOS byte) count.
  receive(tracker, kStart, 7, false, 0xb8 | kEct0);
  EXPECT_EQ(tracker.ecn_counts(), (EcnCounts{.ect0 = 4, .ect1 = 2, .ecn_ce = 1}));
  const std::vector<uint8_t> ack = write_ack(tracker, kStart);
  EXPECT_EQ(to_hex(ack), "0307000007040201");
  const DecodedAck decoded = decode(ack);
  EXPECT_EQ(decoded.type, FrameType::kAckEcn);
  EXPECT_EQ(decoded.ranges, (std::vector<AckRange>{{0, 7}}));
  EXPECT_EQ(decoded.ecn, (EcnCounts{.ect0 = 4, .ect1 = 2, .ecn_ce = 1}));
}

TEST(AckTrackerTest, NoEcnMarksMeansPlainAck) {
  AckTracker tracker = make(PacketNumberSpace::kApplication);
  receive(tracker, kStart, 0, true, kNotEct);
  const std::vector<uint8_t> ack = write_ack(tracker, kStart);
  EXPECT_EQ(to_hex(ack), "0200000000");
  EXPECT_EQ(decode(ack).type, FrameType::kAck);
}

TEST(AckTrackerTest, DuplicatePacketsChangeNothing) {
  AckTracker tracker = make(PacketNumberSpace::kApplication);
  receive(tracker, kStart, 0, true);
  receive(tracker, kStart, 1, true);
  tracker.on_ack_sent(kStart);
  EXPECT_TRUE(tracker.is_duplicate(1));
  EXPECT_TRUE(tracker.on_packet_received(kStart + kMillisecond, 1, true, kCe));
  EXPECT_TRUE(tracker.on_packet_received(kStart + kMillisecond, 0, true, kNotEct));
  EXPECT_FALSE(tracker.ack_required(kStart + kSecond));
  EXPECT_EQ(tracker.ack_deadline(), kNever);
  EXPECT_FALSE(tracker.has_ack_to_send());
  EXPECT_EQ(tracker.ecn_counts(), EcnCounts{});
  EXPECT_EQ(tracker.unacked_ack_eliciting(), 0u);
}

TEST(AckTrackerTest, AcknowledgedAckStopsReportingItsRanges) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  for (uint64_t pn : {0, 1, 2, 4}) receive(tracker, kStart, pn, true);
  EXPECT_EQ(to_hex(write_ack(tracker, kStart)), "02040001000002");
  const uint64_t largest_in_first_ack = tracker.on_ack_sent(kStart);
  EXPECT_EQ(largest_in_first_ack, 4u);

  receive(tracker, kStart + kMillisecond, 6, true);
  receive(tracker, kStart + kMillisecond, 7, false);
  // The peer acknowledged the packet that carried the first ACK.
  tracker.on_ack_frame_acknowledged(largest_in_first_ack);
  EXPECT_EQ(tracker.received().floor(), 5u);
  const std::vector<uint8_t> ack = write_ack(tracker, kStart + kMillisecond);
  EXPECT_EQ(to_hex(ack), "0207000001");
  EXPECT_EQ(decode(ack).ranges, (std::vector<AckRange>{{6, 7}}));
  // pn 3 was never received, but is too old now.
  EXPECT_TRUE(tracker.on_packet_received(kStart + kMillisecond, 3, true, kNotEct));
  // A late 5 is still new and fills the range.
  receive(tracker, kStart + kMillisecond, 5, true);
  EXPECT_EQ(decode(write_ack(tracker, kStart + kMillisecond)).ranges,
            (std::vector<AckRange>{{5, 7}}));
  EXPECT_EQ(tracker.on_ack_sent(kStart + kMillisecond), 7u);

  // Everything acknowledged: nothing left to report, the largest survives.
  tracker.on_ack_frame_acknowledged(7);
  EXPECT_TRUE(tracker.received().empty());
  EXPECT_FALSE(tracker.has_ack_to_send());
  EXPECT_TRUE(write_ack(tracker, kStart + kSecond).empty());
  EXPECT_TRUE(tracker.has_received());
  EXPECT_EQ(tracker.largest_received(), 7u);
  // An old acknowledgment arriving late changes nothing.
  tracker.on_ack_frame_acknowledged(2);
  EXPECT_EQ(tracker.received().floor(), 8u);
  receive(tracker, kStart + kSecond, 8, true);
  EXPECT_EQ(to_hex(write_ack(tracker, kStart + kSecond)), "0208000000");
}

TEST(AckTrackerTest, AckThatDoesNotFitOmitsTheOldestRanges) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100);
  for (uint64_t pn : {0, 2, 4, 6, 8}) receive(tracker, kStart, pn, true);
  const std::vector<uint8_t> full = write_ack(tracker, kStart);
  EXPECT_EQ(to_hex(full), "02080004000000000000000000");  // 13 bytes, 5 ranges
  // Each range after the first costs two bytes.
  EXPECT_EQ(to_hex(write_ack(tracker, kStart, 12)), "0208000300000000000000");
  EXPECT_EQ(decode(write_ack(tracker, kStart, 12)).ranges,
            (std::vector<AckRange>{{8, 8}, {6, 6}, {4, 4}, {2, 2}}));
  EXPECT_EQ(to_hex(write_ack(tracker, kStart, 7)), "02080001000000");
  EXPECT_EQ(to_hex(write_ack(tracker, kStart, 5)), "0208000000");
  // Not even the newest range fits: nothing written.
  EXPECT_TRUE(write_ack(tracker, kStart, 4).empty());
  EXPECT_TRUE(write_ack(tracker, kStart, 0).empty());
}

TEST(AckTrackerTest, BoundedRangesDropTheOldest) {
  AckTrackerConfig config;
  config.max_ranges = 3;
  config.ack_eliciting_threshold = 100;
  AckTracker tracker(config);
  for (uint64_t pn = 0; pn < 20; pn += 2) receive(tracker, kStart, pn, true);
  EXPECT_EQ(decode(write_ack(tracker, kStart)).ranges,
            (std::vector<AckRange>{{18, 18}, {16, 16}, {14, 14}}));
  EXPECT_TRUE(tracker.on_packet_received(kStart, 1, true, kNotEct));  // too old
  EXPECT_EQ(tracker.largest_received(), 18u);
}

TEST(AckTrackerTest, ThresholdCanChange) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 4);
  for (uint64_t pn : {0, 1, 2}) receive(tracker, kStart + pn * kMillisecond, pn, true);
  EXPECT_FALSE(tracker.ack_required(kStart + 2 * kMillisecond));
  receive(tracker, kStart + 3 * kMillisecond, 3, true);
  EXPECT_TRUE(tracker.ack_required(kStart + 3 * kMillisecond));
  tracker.on_ack_sent(kStart + 3 * kMillisecond);

  receive(tracker, kStart + 4 * kMillisecond, 4, true);
  EXPECT_FALSE(tracker.ack_required(kStart + 4 * kMillisecond));
  // Lowering the threshold below what is pending makes the ACK due.
  tracker.set_ack_eliciting_threshold(1);
  EXPECT_TRUE(tracker.ack_required(kStart + 4 * kMillisecond));
  tracker.on_ack_sent(kStart + 4 * kMillisecond);
  // Threshold 1: every ack-eliciting packet, at once; 0 acts as 1.
  receive(tracker, kStart + 5 * kMillisecond, 5, true);
  EXPECT_TRUE(tracker.ack_required(kStart + 5 * kMillisecond));
  tracker.on_ack_sent(kStart + 5 * kMillisecond);
  tracker.set_ack_eliciting_threshold(0);
  receive(tracker, kStart + 6 * kMillisecond, 6, true);
  EXPECT_TRUE(tracker.ack_required(kStart + 6 * kMillisecond));
}

TEST(AckTrackerTest, MaxAckDelayCanChange) {
  AckTracker tracker = make(PacketNumberSpace::kApplication, 100, 25 * kMillisecond);
  receive(tracker, kStart, 0, true);
  EXPECT_EQ(tracker.ack_deadline(), kStart + 25 * kMillisecond);
  tracker.set_max_ack_delay(5 * kMillisecond);
  EXPECT_EQ(tracker.ack_deadline(), kStart + 5 * kMillisecond);
}

TEST(AckTrackerTest, WritingWithoutSendingKeepsTheAckPending) {
  AckTracker tracker = make(PacketNumberSpace::kInitial);
  receive(tracker, kStart, 0, true);
  EXPECT_FALSE(write_ack(tracker, kStart).empty());
  // The packet was abandoned: still due.
  EXPECT_TRUE(tracker.ack_required(kStart));
  EXPECT_TRUE(tracker.has_ack_to_send());
}

}  // namespace
}  // namespace dpquic::recovery
