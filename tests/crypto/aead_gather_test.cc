// Gather protection against contiguous protection: for every suite, a packet
// sealed from 1..N segments (in place, out of place, empty) must equal the
// packet `protect` makes from the same plaintext, byte for byte; anything that
// does not tile the payload exactly is rejected.
#include "crypto/aead_gather.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"

namespace dpquic::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kHeaderLength = 13;  // short header: flags, 8-byte DCID, 4-byte pn

Bytes make_header(uint64_t packet_number) {
  Bytes header(kHeaderLength);
  header[0] = 0x43;  // short header, fixed bit, 4-byte packet number
  for (size_t i = 1; i < 9; ++i) header[i] = static_cast<uint8_t>(0x30 + i);
  for (size_t b = 0; b < 4; ++b) {
    header[kHeaderLength - 1 - b] = static_cast<uint8_t>(packet_number >> (8 * b));
  }
  return header;
}

Bytes random_bytes(std::mt19937& rng, size_t length) {
  Bytes out(length);
  for (uint8_t& byte : out) byte = static_cast<uint8_t>(rng());
  return out;
}

// The reference: the whole payload protected contiguously.
Bytes protect_contiguous(const MbManager& mb, const PacketKeys& keys, uint64_t packet_number,
                         const Bytes& payload) {
  Bytes packet = make_header(packet_number);
  packet.resize(kHeaderLength + payload.size() + kAeadTagLength);
  EXPECT_EQ(protect(mb, ProtectOp{&keys, packet_number, packet, kHeaderLength, payload}),
            PacketStatus::kOk);
  return packet;
}

// A packet laid out for gather protection: the payload cut at `cuts`; even
// pieces are copied into the packet (in place), odd ones read from `source`
// (out of place); an empty segment goes between every two pieces.
struct GatherPacket {
  Bytes packet;
  Bytes source;
  std::vector<GatherSegment> segments;
};

GatherPacket lay_out(uint64_t packet_number, const Bytes& payload, std::vector<size_t> cuts) {
  GatherPacket out;
  out.packet = make_header(packet_number);
  out.packet.resize(kHeaderLength + payload.size() + kAeadTagLength, 0xee);
  out.source = payload;
  cuts.push_back(payload.size());
  size_t start = 0;
  for (size_t piece = 0; piece < cuts.size(); ++piece) {
    const size_t end = cuts[piece];
    uint8_t* place = out.packet.data() + kHeaderLength + start;
    if (piece % 2 == 0) {
      std::copy(payload.begin() + start, payload.begin() + end, place);
      out.segments.push_back(GatherSegment{place, place, end - start});
    } else {
      out.segments.push_back(GatherSegment{out.source.data() + start, place, end - start});
    }
    out.segments.push_back(GatherSegment{nullptr, place + (end - start), 0});
    start = end;
  }
  return out;
}

class AeadGatherTest : public ::testing::TestWithParam<CipherSuite> {
 protected:
  void SetUp() override {
    const Bytes secret(secret_length(GetParam()), 0x5a);
    ASSERT_TRUE(keys_.derive(mb_, GetParam(), wire::kVersion1, secret));
  }

  MbManager mb_;
  PacketKeys keys_;
};

TEST_P(AeadGatherTest, MatchesContiguousProtectForEverySegmentation) {
  std::mt19937 rng(1234);
  for (size_t length : {4, 20, 61, 200, 1000, 1400}) {
    const Bytes payload = random_bytes(rng, length);
    const uint64_t packet_number = 0x10000 + length;
    const Bytes expected = protect_contiguous(mb_, keys_, packet_number, payload);
    for (size_t pieces = 1; pieces <= 9 && pieces <= length; ++pieces) {
      std::vector<size_t> cuts;
      for (size_t p = 1; p < pieces; ++p) cuts.push_back(length * p / pieces + (p % 3));
      for (size_t& cut : cuts) cut = std::min(cut, length);
      std::sort(cuts.begin(), cuts.end());
      GatherPacket gather = lay_out(packet_number, payload, cuts);
      ASSERT_EQ(protect_gather(mb_, GatherProtectOp{&keys_, packet_number, gather.packet,
                                                    kHeaderLength, gather.segments}),
                PacketStatus::kOk)
          << length << " bytes in " << pieces << " pieces";
      EXPECT_EQ(gather.packet, expected) << length << " bytes in " << pieces << " pieces";
      // Out-of-place sources are read, never written.
      EXPECT_EQ(gather.source, payload);
    }
  }
}

TEST_P(AeadGatherTest, OneOutOfPlaceSegmentAndAllInPlace) {
  std::mt19937 rng(99);
  const Bytes payload = random_bytes(rng, 333);
  const Bytes expected = protect_contiguous(mb_, keys_, 7, payload);

  Bytes packet = make_header(7);
  packet.resize(kHeaderLength + payload.size() + kAeadTagLength);
  const GatherSegment from_outside{payload.data(), packet.data() + kHeaderLength, payload.size()};
  ASSERT_EQ(
      protect_gather(mb_, GatherProtectOp{&keys_, 7, packet, kHeaderLength, {&from_outside, 1}}),
      PacketStatus::kOk);
  EXPECT_EQ(packet, expected);

  Bytes in_place = make_header(7);
  in_place.insert(in_place.end(), payload.begin(), payload.end());
  in_place.resize(in_place.size() + kAeadTagLength);
  uint8_t* body = in_place.data() + kHeaderLength;
  const GatherSegment all_in_place{body, body, payload.size()};
  ASSERT_EQ(
      protect_gather(mb_, GatherProtectOp{&keys_, 7, in_place, kHeaderLength, {&all_in_place, 1}}),
      PacketStatus::kOk);
  EXPECT_EQ(in_place, expected);
}

TEST_P(AeadGatherTest, BurstLongerThanOneChunkMatchesPerPacket) {
  std::mt19937 rng(7);
  constexpr size_t kPackets = kMaxBurst + 9;
  std::vector<Bytes> expected;
  std::vector<GatherPacket> packets;
  for (size_t i = 0; i < kPackets; ++i) {
    const Bytes payload = random_bytes(rng, 40 + 13 * i);
    expected.push_back(protect_contiguous(mb_, keys_, i, payload));
    packets.push_back(lay_out(i, payload, {payload.size() / 3, payload.size() / 2}));
  }
  std::vector<GatherProtectOp> ops;
  for (size_t i = 0; i < kPackets; ++i) {
    ops.push_back(
        GatherProtectOp{&keys_, i, packets[i].packet, kHeaderLength, packets[i].segments});
  }
  std::vector<PacketStatus> status(kPackets, PacketStatus::kEngineError);
  EXPECT_EQ(protect_gather_burst(mb_, ops, status), kPackets);
  for (size_t i = 0; i < kPackets; ++i) {
    EXPECT_EQ(status[i], PacketStatus::kOk);
    EXPECT_EQ(packets[i].packet, expected[i]) << "packet " << i;
  }
  // A status span shorter than the burst: nothing is done.
  std::vector<PacketStatus> short_status(kPackets - 1);
  EXPECT_EQ(protect_gather_burst(mb_, ops, short_status), 0u);
}

TEST_P(AeadGatherTest, RejectsSegmentsThatDoNotTileThePayload) {
  std::mt19937 rng(5);
  const Bytes payload = random_bytes(rng, 100);
  auto status_of = [&](auto mutate) {
    GatherPacket gather = lay_out(3, payload, {30, 60});
    const Bytes before = gather.packet;
    mutate(gather);
    const PacketStatus status = protect_gather(
        mb_, GatherProtectOp{&keys_, 3, gather.packet, kHeaderLength, gather.segments});
    // A rejected packet is left untouched.
    if (status != PacketStatus::kOk) {
      EXPECT_EQ(gather.packet, before);
    }
    return status;
  };
  EXPECT_EQ(status_of([](GatherPacket&) {}), PacketStatus::kOk);
  // Short of the tag by one byte.
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments[4].length -= 1; }),
            PacketStatus::kInvalidArgument);
  // One byte past the payload, over the tag.
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments[4].length += 1; }),
            PacketStatus::kInvalidArgument);
  // A gap between two segments.
  EXPECT_EQ(status_of([](GatherPacket& g) {
              g.segments[2].out += 1;
              g.segments[2].in += 1;
              g.segments[2].length -= 1;
            }),
            PacketStatus::kInvalidArgument);
  // Out of order.
  EXPECT_EQ(status_of([](GatherPacket& g) { std::swap(g.segments[0], g.segments[2]); }),
            PacketStatus::kInvalidArgument);
  // The first segment does not start at the payload.
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments.erase(g.segments.begin()); }),
            PacketStatus::kInvalidArgument);
  // An out-of-place source inside the packet (overlapping the output).
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments[2].in = g.segments[2].out + 1; }),
            PacketStatus::kInvalidArgument);
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments[2].in = g.packet.data(); }),
            PacketStatus::kInvalidArgument);
  // A missing source for a non-empty segment.
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments[2].in = nullptr; }),
            PacketStatus::kInvalidArgument);
  // No segments at all.
  EXPECT_EQ(status_of([](GatherPacket& g) { g.segments.clear(); }), PacketStatus::kInvalidArgument);
}

TEST_P(AeadGatherTest, RejectsBadPacketArguments) {
  // A 1-byte packet number and 2 payload bytes: 1 + 2 < 4, so the header
  // protection sample would run past the packet (RFC 9001 §5.4.2).
  Bytes short_packet(10 + 2 + kAeadTagLength, 0x00);
  short_packet[0] = 0x40;
  uint8_t* body = short_packet.data() + 10;
  const GatherSegment two{body, body, 2};
  EXPECT_EQ(protect_gather(mb_, GatherProtectOp{&keys_, 1, short_packet, 10, {&two, 1}}),
            PacketStatus::kInvalidArgument);
  // One byte more and it fits.
  Bytes fits(10 + 3 + kAeadTagLength, 0x00);
  fits[0] = 0x40;
  const GatherSegment three{fits.data() + 10, fits.data() + 10, 3};
  EXPECT_EQ(protect_gather(mb_, GatherProtectOp{&keys_, 1, fits, 10, {&three, 1}}),
            PacketStatus::kOk);

  const Bytes enough(40, 0x02);
  GatherPacket ok = lay_out(1, enough, {});
  EXPECT_EQ(protect_gather(mb_, GatherProtectOp{nullptr, 1, ok.packet, kHeaderLength, ok.segments}),
            PacketStatus::kInvalidArgument);
  PacketKeys missing;
  EXPECT_EQ(
      protect_gather(mb_, GatherProtectOp{&missing, 1, ok.packet, kHeaderLength, ok.segments}),
      PacketStatus::kInvalidArgument);
  EXPECT_EQ(protect_gather(mb_, GatherProtectOp{&keys_, 1, ok.packet, SIZE_MAX, ok.segments}),
            PacketStatus::kInvalidArgument);
  EXPECT_EQ(protect_gather(mb_, GatherProtectOp{&keys_, 1, std::span<uint8_t>(ok.packet).first(10),
                                                kHeaderLength, ok.segments}),
            PacketStatus::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllSuites, AeadGatherTest,
                         ::testing::Values(CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm,
                                           CipherSuite::kChaCha20Poly1305),
                         [](const auto& test_info) {
                           switch (test_info.param) {
                             case CipherSuite::kAes128Gcm: return "Aes128Gcm";
                             case CipherSuite::kAes256Gcm: return "Aes256Gcm";
                             default: return "ChaCha20Poly1305";
                           }
                         });

}  // namespace
}  // namespace dpquic::crypto
