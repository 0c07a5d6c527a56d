// Version Negotiation, Retry (with the RFC 9001 / RFC 9369 vectors), Initial
// token checks and stateless resets, byte for byte.
#include "quic/endpoint/stateless_packets.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <set>
#include <vector>

#include "quic/wire/version_negotiation.h"
#include "tests/util/hex.h"

namespace dpquic::endpoint {
namespace {

using ::dpquic::testing::from_hex;
using Bytes = std::vector<uint8_t>;

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

Bytes u32(uint32_t value) {
  return {static_cast<uint8_t>(value >> 24), static_cast<uint8_t>(value >> 16),
          static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value)};
}

// --- Version Negotiation --------------------------------------------------------

TEST(VersionNegotiationTest, LayoutIsExact) {
  const Bytes dcid = from_hex("0102030405060708090a");
  const Bytes scid = from_hex("c0c1c2");
  std::set<size_t> grease_positions;
  for (uint64_t entropy = 0; entropy < 64; ++entropy) {
    std::array<uint8_t, kMaxVersionNegotiationLength> out{};
    const size_t length = write_version_negotiation(dcid, scid, entropy, out);
    ASSERT_EQ(length, 1 + 4 + 1 + 3 + 1 + 10 + 12u);
    const Bytes packet(out.begin(), out.begin() + length);
    // Long header form and the fixed bit (RFC 9000 §17.2.1: set to 1 so the
    // packet passes for QUIC); the other six bits are unused.
    EXPECT_EQ(packet[0] & 0xc0, 0xc0);
    // The grease slot is wherever it is; everything else is fixed: version
    // 0, the client's SCID as DCID, its DCID as SCID, v1 before v2.
    size_t grease_at = 3;
    for (size_t i = 0; i < 3; ++i) {
      const size_t offset = length - 12 + 4 * i;
      const uint32_t version = static_cast<uint32_t>(packet[offset]) << 24 |
                               packet[offset + 1] << 16 | packet[offset + 2] << 8 |
                               packet[offset + 3];
      if (wire::is_reserved_version(version)) {
        EXPECT_EQ(grease_at, 3u) << "two greased versions";
        grease_at = i;
        EXPECT_EQ(version, wire::greased_version(entropy));
      }
    }
    ASSERT_LT(grease_at, 3u);
    grease_positions.insert(grease_at);
    Bytes versions;
    for (size_t i = 0, next = 0; i < 3; ++i) {
      versions = concat({versions, i == grease_at ? u32(wire::greased_version(entropy))
                                                  : u32(kOfferedVersions[next++])});
    }
    const Bytes expected = concat({{packet[0]}, u32(0), {3}, scid, {10}, dcid, versions});
    EXPECT_EQ(packet, expected);
    wire::VersionNegotiationPacket parsed;
    ASSERT_EQ(wire::parse_version_negotiation(packet, parsed), wire::WireError::kOk);
    EXPECT_TRUE(parsed.versions.contains(wire::kVersion1));
    EXPECT_TRUE(parsed.versions.contains(wire::kVersion2));
  }
  // The greased version is not always in the same place.
  EXPECT_EQ(grease_positions.size(), 3u);
}

TEST(VersionNegotiationTest, LongInvariantCidsAndLimits) {
  const Bytes long_cid(255, 0x55);
  std::array<uint8_t, kMaxVersionNegotiationLength> out{};
  EXPECT_EQ(write_version_negotiation(long_cid, long_cid, 1, out), kMaxVersionNegotiationLength);
  const Bytes too_long(256, 0x55);
  EXPECT_EQ(write_version_negotiation(too_long, {}, 1, out), 0u);
  EXPECT_EQ(write_version_negotiation({}, too_long, 1, out), 0u);
  // Empty CIDs are legal; one byte short of room writes nothing.
  EXPECT_EQ(write_version_negotiation({}, {}, 1, out), 1 + 4 + 1 + 1 + 12u);
  EXPECT_EQ(write_version_negotiation({}, {}, 1, std::span(out).first(18)), 0u);
}

TEST(VersionNegotiationTest, AnsweredOnlyForLargeUnknownLongHeaders) {
  // A long header of reserved version 0x1a2a3a4a, padded to 1200 bytes.
  Bytes datagram = concat({{0xc0}, u32(0x1a2a3a4a), {8}, Bytes(8, 1), {4}, Bytes(4, 2)});
  datagram.resize(1200, 0);
  wire::ParsedHeader header;
  ASSERT_EQ(wire::parse_packet_header(datagram, 8, header), wire::WireError::kOk);
  EXPECT_TRUE(should_send_version_negotiation(header, 1200));
  EXPECT_FALSE(should_send_version_negotiation(header, 1199));

  // Never in answer to Version Negotiation itself.
  std::array<uint8_t, kMaxVersionNegotiationLength> vn{};
  const size_t vn_length = write_version_negotiation(Bytes(8, 1), Bytes(4, 2), 9, vn);
  Bytes vn_datagram(vn.begin(), vn.begin() + vn_length);
  vn_datagram.resize(1200, 0);
  ASSERT_EQ(wire::parse_packet_header(vn_datagram, 8, header), wire::WireError::kOk);
  EXPECT_FALSE(should_send_version_negotiation(header, 1200));

  // Nor to supported versions or short headers.
  wire::ParsedHeader supported;
  supported.long_header = true;
  supported.known_version = true;
  supported.version = wire::kVersion2;
  EXPECT_FALSE(should_send_version_negotiation(supported, 1500));
  const wire::ParsedHeader short_header;
  EXPECT_FALSE(should_send_version_negotiation(short_header, 1500));
}

// --- Retry ------------------------------------------------------------------------

const Bytes kTokenKey = from_hex("00112233445566778899aabbccddeeff");

class RetryTest : public ::testing::Test {
 protected:
  crypto::MbManager mb_;
  crypto::RetryIntegrity integrity_{mb_};
  crypto::AddressTokens tokens_{mb_, kTokenKey};
  const conn::SocketAddress client_ = conn::SocketAddress::ipv4(192, 0, 2, 7, 44321);
  const Bytes client_dcid_ = from_hex("8394c8f03e515708");
  const Bytes client_scid_ = from_hex("f0f1f2f3");
  const wire::ConnectionId new_scid_{from_hex("5300000000000001")};
  static constexpr uint64_t kNowUs = 1'000'000'000;
};

// RFC 9001 Appendix A.4 and RFC 9369 Appendix A.4: the Retry carries the
// token "token" and unused bits 0xf; its tag covers ODCID 8394c8f03e515708.
TEST_F(RetryTest, RfcVectorsByteForByte) {
  const Bytes token = {'t', 'o', 'k', 'e', 'n'};
  const Bytes scid = from_hex("f067a5502a4262b5");
  const wire::ConnectionId odcid(client_dcid_);
  const Bytes v1 =
      from_hex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba");
  const Bytes v2 =
      from_hex("cf6b3343cf0008f067a5502a4262b574 6f6b656ec8646ce8bfe33952d9555436 65dcc7b6");
  for (const auto& [version, expected] :
       {std::pair{wire::kVersion1, v1}, std::pair{wire::kVersion2, v2}}) {
    std::array<uint8_t, kMaxRetryLength> out{};
    const size_t length =
        write_retry_with_token(integrity_, version, {}, scid, token, odcid, 0x0f, out);
    EXPECT_EQ(Bytes(out.begin(), out.begin() + length), expected);
    // Exactly the packet's size is enough; one byte less is not.
    EXPECT_EQ(write_retry_with_token(integrity_, version, {}, scid, token, odcid, 0x0f,
                                     std::span(out).first(expected.size())),
              expected.size());
    EXPECT_EQ(write_retry_with_token(integrity_, version, {}, scid, token, odcid, 0x0f,
                                     std::span(out).first(expected.size() - 1)),
              0u);
  }
  std::array<uint8_t, kMaxRetryLength> out{};
  EXPECT_EQ(write_retry_with_token(integrity_, 0x1a2a3a4a, {}, scid, token, odcid, 0, out), 0u);
  EXPECT_EQ(write_retry_with_token(integrity_, wire::kVersion1, {}, scid, {}, odcid, 0, out), 0u);
}

TEST_F(RetryTest, ParsesVerifiesAndCarriesAValidToken) {
  for (const uint32_t version : {wire::kVersion1, wire::kVersion2}) {
    std::array<uint8_t, kMaxRetryLength> out{};
    const size_t length = write_retry(integrity_, tokens_, version, client_, client_dcid_,
                                      client_scid_, new_scid_, kNowUs, out);
    ASSERT_GT(length, 0u);
    const std::span<const uint8_t> packet(out.data(), length);

    wire::ParsedHeader header;
    ASSERT_EQ(wire::parse_packet_header(packet, 8, header), wire::WireError::kOk);
    EXPECT_TRUE(header.long_header);
    EXPECT_EQ(header.type, wire::PacketType::kRetry);
    EXPECT_EQ(header.version, version);
    EXPECT_EQ(Bytes(header.dcid.begin(), header.dcid.end()), client_scid_);
    EXPECT_EQ(header.source_connection_id(), new_scid_);
    EXPECT_EQ(header.packet_size, length);
    ASSERT_EQ(header.retry_integrity_tag.size(), 16u);
    EXPECT_EQ(header.retry_integrity_tag.data(), packet.data() + length - 16);
    EXPECT_EQ(length,
              1 + 4 + 1 + client_scid_.size() + 1 + new_scid_.size() + header.token.size() + 16);
    EXPECT_TRUE(integrity_.verify(version, wire::ConnectionId(client_dcid_), packet));
    EXPECT_FALSE(integrity_.verify(version, new_scid_, packet));

    // The token validates for the same address and names the original DCID.
    crypto::ValidatedToken validated;
    EXPECT_EQ(validate_initial_token(tokens_, header.token, client_, kNowUs + 50'000, validated),
              crypto::TokenValidation::kValid);
    EXPECT_EQ(validated.type, crypto::AddressTokenType::kRetry);
    EXPECT_EQ(validated.original_dcid, wire::ConnectionId(client_dcid_));
    EXPECT_EQ(validated.issued_at, kNowUs);

    // Another port or IP: kWrongAddress.
    conn::SocketAddress moved = client_;
    moved.port += 1;
    EXPECT_EQ(validate_initial_token(tokens_, header.token, moved, kNowUs, validated),
              crypto::TokenValidation::kWrongAddress);
    const auto v6 = conn::SocketAddress::ipv6({0x20, 0x01, 0x0d, 0xb8}, client_.port);
    EXPECT_EQ(validate_initial_token(tokens_, header.token, v6, kNowUs, validated),
              crypto::TokenValidation::kWrongAddress);
    // Past the Retry token lifetime (10 s by default): kExpired.
    const uint64_t lifetime = crypto::AddressTokenLifetimes{}.retry;
    EXPECT_EQ(validate_initial_token(tokens_, header.token, client_, kNowUs + lifetime, validated),
              crypto::TokenValidation::kValid);
    EXPECT_EQ(
        validate_initial_token(tokens_, header.token, client_, kNowUs + lifetime + 1, validated),
        crypto::TokenValidation::kExpired);
  }
}

TEST_F(RetryTest, MbManagerOverloadWritesTheSamePacketShape) {
  std::array<uint8_t, kMaxRetryLength> out{};
  const size_t length = write_retry(mb_, tokens_, wire::kVersion2, client_, client_dcid_,
                                    client_scid_, new_scid_, kNowUs, out);
  ASSERT_GT(length, 0u);
  EXPECT_TRUE(integrity_.verify(wire::kVersion2, wire::ConnectionId(client_dcid_),
                                std::span(out).first(length)));
}

TEST_F(RetryTest, RefusesInvalidInput) {
  std::array<uint8_t, kMaxRetryLength> out{};
  auto retry = [&](uint32_t version, const conn::SocketAddress& client,
                   std::span<const uint8_t> dcid, std::span<const uint8_t> scid,
                   const wire::ConnectionId& new_scid, std::span<uint8_t> buffer) {
    return write_retry(integrity_, tokens_, version, client, dcid, scid, new_scid, kNowUs, buffer);
  };
  EXPECT_EQ(retry(0x1a2a3a4a, client_, client_dcid_, client_scid_, new_scid_, out), 0u);
  EXPECT_EQ(
      retry(wire::kVersion1, conn::SocketAddress(), client_dcid_, client_scid_, new_scid_, out),
      0u);
  // RFC 9000 §17.2.5.1: the Retry SCID must differ from the client's DCID.
  EXPECT_EQ(retry(wire::kVersion1, client_, client_dcid_, client_scid_,
                  wire::ConnectionId(client_dcid_), out),
            0u);
  const Bytes too_long(21, 9);
  EXPECT_EQ(retry(wire::kVersion1, client_, too_long, client_scid_, new_scid_, out), 0u);
  EXPECT_EQ(retry(wire::kVersion1, client_, client_dcid_, too_long, new_scid_, out), 0u);
  // Room: the exact length works, one byte less writes nothing.
  const size_t length = retry(wire::kVersion1, client_, client_dcid_, client_scid_, new_scid_, out);
  ASSERT_GT(length, 0u);
  EXPECT_EQ(retry(wire::kVersion1, client_, client_dcid_, client_scid_, new_scid_,
                  std::span(out).first(length)),
            length);
  EXPECT_EQ(retry(wire::kVersion1, client_, client_dcid_, client_scid_, new_scid_,
                  std::span(out).first(length - 1)),
            0u);
  // The largest case (20-byte CIDs, IPv6) fits kMaxRetryLength.
  const Bytes cid20(20, 3);
  std::array<uint8_t, 16> ip{};
  ip.fill(0xfe);
  EXPECT_GT(retry(wire::kVersion1, conn::SocketAddress::ipv6(ip, 443), cid20, cid20,
                  wire::ConnectionId(Bytes(20, 4)), out),
            0u);
}

// What tokens bind to: encode() is family, port and IP (Retry tokens);
// encode_ip() the same without the port (NEW_TOKEN tokens).
TEST(TokenAddressTest, EncodeIpOmitsThePort) {
  uint8_t full[conn::SocketAddress::kEncodedMax];
  uint8_t ip_only[conn::SocketAddress::kEncodedIpMax];
  const auto v4 = conn::SocketAddress::ipv4(192, 0, 2, 7, 0x1151);
  ASSERT_EQ(v4.encode(full), 7u);
  EXPECT_EQ(Bytes(full, full + 7), (Bytes{4, 0x11, 0x51, 192, 0, 2, 7}));
  ASSERT_EQ(v4.encode_ip(ip_only), 5u);
  EXPECT_EQ(Bytes(ip_only, ip_only + 5), (Bytes{4, 192, 0, 2, 7}));
  const auto v6 = conn::SocketAddress::ipv6(
      {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x09}, 443);
  ASSERT_EQ(v6.encode_ip(ip_only), 17u);
  EXPECT_EQ(Bytes(ip_only, ip_only + 17), from_hex("06 20010db8 00000000 00000000 00000009"));
  // Too small a buffer: nothing written.
  EXPECT_EQ(v6.encode_ip(std::span<uint8_t>(ip_only, 16)), 0u);
}

TEST_F(RetryTest, InitialTokenActions) {
  std::array<uint8_t, kMaxRetryLength> out{};
  const size_t length = write_retry(integrity_, tokens_, wire::kVersion1, client_, client_dcid_,
                                    client_scid_, new_scid_, kNowUs, out);
  wire::ParsedHeader header;
  ASSERT_EQ(wire::parse_packet_header(std::span(out).first(length), 8, header),
            wire::WireError::kOk);
  const Bytes retry_token(header.token.begin(), header.token.end());

  crypto::ValidatedToken validated;
  crypto::TokenValidation detail = crypto::TokenValidation::kValid;
  EXPECT_EQ(check_initial_token(tokens_, {}, client_, kNowUs, validated, &detail),
            InitialTokenAction::kNoToken);
  EXPECT_EQ(check_initial_token(tokens_, retry_token, client_, kNowUs, validated, &detail),
            InitialTokenAction::kValidated);
  EXPECT_EQ(detail, crypto::TokenValidation::kValid);
  EXPECT_EQ(validated.original_dcid, wire::ConnectionId(client_dcid_));

  // An authentic Retry token that fails: close with INVALID_TOKEN.
  conn::SocketAddress moved = client_;
  moved.ip[3] = 8;
  EXPECT_EQ(check_initial_token(tokens_, retry_token, moved, kNowUs, validated, &detail),
            InitialTokenAction::kCloseInvalidToken);
  EXPECT_EQ(detail, crypto::TokenValidation::kWrongAddress);
  EXPECT_EQ(
      check_initial_token(tokens_, retry_token, client_, kNowUs + 20'000'000, validated, &detail),
      InitialTokenAction::kCloseInvalidToken);
  EXPECT_EQ(detail, crypto::TokenValidation::kExpired);

  // The same host from another port: a Retry token binds the port too.
  conn::SocketAddress other_port = client_;
  other_port.port = 44322;
  EXPECT_EQ(check_initial_token(tokens_, retry_token, other_port, kNowUs, validated, &detail),
            InitialTokenAction::kCloseInvalidToken);
  EXPECT_EQ(detail, crypto::TokenValidation::kWrongAddress);

  // A NEW_TOKEN token is bound to the IP only (family, then the 4 bytes).
  uint8_t address[conn::SocketAddress::kEncodedIpMax];
  const size_t address_length = moved.encode_ip(address);
  ASSERT_EQ(Bytes(address, address + address_length), (Bytes{4, 192, 0, 2, 8}));
  uint8_t new_token[crypto::kMaxAddressTokenLength];
  const size_t new_token_length =
      tokens_.issue(crypto::AddressTokenType::kNewToken, {address, address_length},
                    wire::ConnectionId(), kNowUs, new_token);
  ASSERT_GT(new_token_length, 0u);
  const std::span<const uint8_t> new_token_span(new_token, new_token_length);
  // From another IP: proceed unvalidated.
  EXPECT_EQ(check_initial_token(tokens_, new_token_span, client_, kNowUs, validated, &detail),
            InitialTokenAction::kUnvalidated);
  EXPECT_EQ(detail, crypto::TokenValidation::kWrongAddress);
  // From that IP, whatever the port (a later connection has a new socket).
  for (const uint16_t port : {uint16_t{44321}, uint16_t{50000}, uint16_t{1}}) {
    conn::SocketAddress later = moved;
    later.port = port;
    EXPECT_EQ(check_initial_token(tokens_, new_token_span, later, kNowUs, validated, &detail),
              InitialTokenAction::kValidated)
        << port;
    EXPECT_EQ(validated.type, crypto::AddressTokenType::kNewToken);
  }
  // Expired: proceed unvalidated (no INVALID_TOKEN for a NEW_TOKEN token).
  const uint64_t new_token_lifetime = crypto::AddressTokenLifetimes{}.new_token;
  EXPECT_EQ(check_initial_token(tokens_, new_token_span, moved, kNowUs + new_token_lifetime + 1,
                                validated, &detail),
            InitialTokenAction::kUnvalidated);
  EXPECT_EQ(detail, crypto::TokenValidation::kExpired);

  // Tampered (claims to be a Retry token but does not authenticate) and
  // garbage: their claims cannot be trusted, so proceed unvalidated.
  Bytes tampered = retry_token;
  tampered.back() ^= 1;
  EXPECT_EQ(check_initial_token(tokens_, tampered, client_, kNowUs, validated, &detail),
            InitialTokenAction::kUnvalidated);
  EXPECT_EQ(detail, crypto::TokenValidation::kInvalid);
  EXPECT_EQ(check_initial_token(tokens_, Bytes(7, 0x11), client_, kNowUs, validated, &detail),
            InitialTokenAction::kUnvalidated);
  EXPECT_EQ(detail, crypto::TokenValidation::kMalformed);
}

// --- Stateless reset ------------------------------------------------------------

const crypto::StatelessResetToken kResetToken = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                                                 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf};

TEST(StatelessResetTest, NoResetForTinyTriggers) {
  std::array<uint8_t, kMaxStatelessResetLength> out{};
  const Bytes random(kMaxStatelessResetLength, 0x77);
  for (size_t trigger = 0; trigger <= 21; ++trigger) {
    EXPECT_EQ(max_stateless_reset_length(trigger), 0u) << trigger;
    EXPECT_EQ(stateless_reset_random_bytes_needed(trigger), 0u) << trigger;
    EXPECT_EQ(write_stateless_reset(trigger, kResetToken, random, out), 0u) << trigger;
  }
}

TEST(StatelessResetTest, ShortTriggersGetOneByteLess) {
  // 22 bytes -> the 21-byte minimum; 43 -> 42 (RFC 9000 §10.3).
  for (size_t trigger = 22; trigger <= 43; ++trigger) {
    Bytes random(stateless_reset_random_bytes_needed(trigger));
    ASSERT_EQ(random.size(), trigger - 1 - 16);
    for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(0x80 + i);
    std::array<uint8_t, kMaxStatelessResetLength> out{};
    const size_t length = write_stateless_reset(trigger, kResetToken, random, out);
    ASSERT_EQ(length, trigger - 1);
    // First byte: 0b01 then the random byte's low six bits; then the random
    // bytes; the token last.
    Bytes expected = random;
    expected[0] = static_cast<uint8_t>(0x40 | (random[0] & 0x3f));
    expected.insert(expected.end(), kResetToken.begin(), kResetToken.end());
    EXPECT_EQ(Bytes(out.begin(), out.begin() + length), expected);
    // One random byte short, or room for less than the reset: nothing.
    EXPECT_EQ(write_stateless_reset(trigger, kResetToken,
                                    std::span(random).first(random.size() - 1), out),
              0u);
    EXPECT_EQ(write_stateless_reset(trigger, kResetToken, random, std::span(out).first(length - 1)),
              0u);
  }
}

TEST(StatelessResetTest, LargeTriggersGetRandomSmallerLengths) {
  std::mt19937_64 rng(123);
  for (const size_t trigger : {44u, 45u, 100u, 1200u, 1201u, 1500u, 9000u}) {
    const size_t max_length = max_stateless_reset_length(trigger);
    EXPECT_EQ(max_length, std::min<size_t>(trigger - 1, kMaxStatelessResetLength));
    const size_t needed = stateless_reset_random_bytes_needed(trigger);
    EXPECT_EQ(needed, max_length - 16 + 2);
    EXPECT_LE(needed, kMaxStatelessResetLength);
    std::set<size_t> lengths;
    for (int round = 0; round < 300; ++round) {
      Bytes random(needed);
      for (auto& byte : random) byte = static_cast<uint8_t>(rng());
      Bytes out(max_length, 0xee);
      const size_t length = write_stateless_reset(trigger, kResetToken, random, out);
      ASSERT_GE(length, kMinLongStatelessResetLength);
      ASSERT_LE(length, max_length);
      ASSERT_LT(length, trigger);
      lengths.insert(length);
      EXPECT_EQ(out[0] & 0xc0, 0x40);
      EXPECT_EQ(out[0] & 0x3f, random[0] & 0x3f);
      EXPECT_TRUE(std::equal(out.begin() + 1, out.begin() + length - 16, random.begin() + 1));
      EXPECT_TRUE(std::equal(kResetToken.begin(), kResetToken.end(), out.begin() + length - 16));
      // Nothing beyond the reset is touched.
      EXPECT_TRUE(
          std::all_of(out.begin() + length, out.end(), [](uint8_t b) { return b == 0xee; }));
    }
    // Both ends of the range occur for small ranges; large ranges spread.
    if (max_length - kMinLongStatelessResetLength < 4) {
      EXPECT_EQ(lengths.size(), max_length - kMinLongStatelessResetLength + 1) << trigger;
    } else {
      EXPECT_GT(lengths.size(), 20u) << trigger;
    }
  }
}

TEST(StatelessResetTest, LengthPickIsExact) {
  // Trigger 1500: lengths 42..1200 (1159 values), picked by the two bytes
  // after the 1184-byte body: 0x0001 -> 43, 1159 -> 42, 0xffff -> 42 + 65535 % 1159.
  const size_t needed = stateless_reset_random_bytes_needed(1500);
  ASSERT_EQ(needed, 1186u);
  Bytes random(needed, 0x11);
  Bytes out(1200);
  for (const auto& [pick, expected] :
       {std::pair{0x0001u, 43u}, std::pair{1159u, 42u}, std::pair{0xffffu, 42u + 65535u % 1159u},
        std::pair{1158u, 1200u}}) {
    random[needed - 2] = static_cast<uint8_t>(pick >> 8);
    random[needed - 1] = static_cast<uint8_t>(pick);
    EXPECT_EQ(write_stateless_reset(1500, kResetToken, random, out), expected) << pick;
  }
}

}  // namespace
}  // namespace dpquic::endpoint
