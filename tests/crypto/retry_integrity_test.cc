// RFC 9001 Appendix A.4 and RFC 9369 Appendix A.4: Retry packets with their
// integrity tags, byte for byte.
#include "crypto/retry_integrity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quic/wire/version.h"
#include "tests/util/hex.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::from_hex;

using Bytes = std::vector<uint8_t>;

const wire::ConnectionId kOriginalDcid{from_hex("8394c8f03e515708")};
const Bytes kRetryV1 =
    from_hex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba");
const Bytes kRetryV2 =
    from_hex("cf6b3343cf0008f067a5502a4262b574 6f6b656ec8646ce8bfe33952d9555436 65dcc7b6");

class RetryIntegrityTest : public ::testing::Test {
 protected:
  MbManager mb_;
  RetryIntegrity retry_{mb_};
};

TEST_F(RetryIntegrityTest, ComputesRfcTags) {
  for (const auto& [version, packet] :
       {std::pair{wire::kVersion1, kRetryV1}, std::pair{wire::kVersion2, kRetryV2}}) {
    const std::span<const uint8_t> body = std::span(packet).first(packet.size() - 16);
    RetryIntegrityTag tag;
    ASSERT_TRUE(retry_.compute(version, kOriginalDcid, body, tag));
    EXPECT_EQ(Bytes(tag.begin(), tag.end()), Bytes(packet.end() - 16, packet.end()));
    EXPECT_TRUE(retry_.verify(version, kOriginalDcid, packet));
  }
}

TEST_F(RetryIntegrityTest, RejectsAnyChange) {
  // Wrong version's key.
  EXPECT_FALSE(retry_.verify(wire::kVersion2, kOriginalDcid, kRetryV1));
  EXPECT_FALSE(retry_.verify(wire::kVersion1, kOriginalDcid, kRetryV2));
  // Another original DCID.
  EXPECT_FALSE(
      retry_.verify(wire::kVersion1, wire::ConnectionId(from_hex("8394c8f03e515709")), kRetryV1));
  // Every single-bit flip of the packet, tag included.
  for (size_t i = 0; i < kRetryV1.size(); ++i) {
    Bytes damaged = kRetryV1;
    damaged[i] ^= 0x01;
    EXPECT_FALSE(retry_.verify(wire::kVersion1, kOriginalDcid, damaged)) << "byte " << i;
  }
  // Too short to hold a tag; unsupported version.
  EXPECT_FALSE(retry_.verify(wire::kVersion1, kOriginalDcid, std::span(kRetryV1).first(15)));
  RetryIntegrityTag tag;
  EXPECT_FALSE(retry_.compute(0xff00001d, kOriginalDcid, kRetryV1, tag));
  const Bytes too_long(kMaxRetryPacketLength + 1, 0);
  EXPECT_FALSE(retry_.compute(wire::kVersion1, kOriginalDcid, too_long, tag));
}

}  // namespace
}  // namespace dpquic::crypto
