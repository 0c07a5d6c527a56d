// Stateless reset tokens and address-validation tokens.
#include "crypto/tokens.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "tools/testbed/allocation_counter.h"

namespace dpquic::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

const Bytes kResetKey(32, 0x17);
const Bytes kTokenKey = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
// Family (IPv4), address 192.0.2.1, port 4433.
const Bytes kAddress = {4, 192, 0, 2, 1, 0x11, 0x51};
const Bytes kOtherPort = {4, 192, 0, 2, 1, 0x11, 0x52};
const wire::ConnectionId kOdcid(Bytes{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08});

TEST(StatelessResetTokens, DeterministicAndDistinct) {
  const StatelessResetTokens tokens(kResetKey);
  const wire::ConnectionId a(Bytes{1, 2, 3, 4, 5, 6, 7, 8});
  const wire::ConnectionId b(Bytes{1, 2, 3, 4, 5, 6, 7, 9});
  EXPECT_EQ(tokens.token_for(a), tokens.token_for(a));
  EXPECT_EQ(tokens.token_for(a), StatelessResetTokens(kResetKey).token_for(a));
  EXPECT_NE(tokens.token_for(a), tokens.token_for(b));
  Bytes other_key = kResetKey;
  other_key[0] ^= 1;
  EXPECT_NE(tokens.token_for(a), StatelessResetTokens(other_key).token_for(a));
  // Many CIDs, no repeats.
  std::set<StatelessResetToken> seen;
  for (uint32_t i = 0; i < 1000; ++i) {
    const Bytes cid = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 0, 0};
    seen.insert(tokens.token_for(wire::ConnectionId(cid)));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

// The first 16 bytes of HMAC-SHA256(key = 32 x 0x17, CID 0102030405060708),
// computed independently with Python's hmac module.
TEST(StatelessResetTokens, IsTruncatedHmacSha256) {
  const StatelessResetTokens tokens(kResetKey);
  const StatelessResetToken expected = {0xe4, 0x52, 0x95, 0x2c, 0xb6, 0xaa, 0xa9, 0xb7,
                                        0x9a, 0x67, 0x6c, 0xc8, 0xc7, 0x80, 0x9b, 0xd4};
  EXPECT_EQ(tokens.token_for(wire::ConnectionId(Bytes{1, 2, 3, 4, 5, 6, 7, 8})), expected);
}

TEST(StatelessResetTokens, RejectsShortKeys) {
  EXPECT_THROW(StatelessResetTokens(Bytes(31, 1)), std::invalid_argument);
  EXPECT_THROW(StatelessResetTokens(Bytes(65, 1)), std::invalid_argument);
  EXPECT_NO_THROW(StatelessResetTokens(Bytes(64, 1)));
}

class AddressTokensTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kNow = 1'000'000'000;
  MbManager mb_;
  AddressTokens tokens_{mb_, kTokenKey, {}, AddressTokenLifetimes{10'000'000, 86'400'000'000ull}};

  Bytes issue(AddressTokenType type, const Bytes& address = kAddress,
              const wire::ConnectionId& odcid = kOdcid, uint64_t now = kNow) {
    Bytes token(kMaxAddressTokenLength);
    const size_t length = tokens_.issue(type, address, odcid, now, token);
    EXPECT_NE(length, 0u);
    token.resize(length);
    return token;
  }
};

TEST_F(AddressTokensTest, RoundTripReturnsOriginalDcid) {
  for (AddressTokenType type : {AddressTokenType::kRetry, AddressTokenType::kNewToken}) {
    const Bytes token = issue(type);
    EXPECT_EQ(token.size(), 1 + 12 + 8 + 1 + kAddress.size() + 1 + kOdcid.size() + 16);
    ValidatedToken out;
    EXPECT_EQ(tokens_.validate(token, type, kAddress, kNow + 5, out), TokenValidation::kValid);
    EXPECT_EQ(out.type, type);
    EXPECT_EQ(out.original_dcid, kOdcid);
    EXPECT_EQ(out.issued_at, kNow);
    // The server need not know the type in advance.
    ValidatedToken any;
    EXPECT_EQ(tokens_.validate(token, std::nullopt, kAddress, kNow, any), TokenValidation::kValid);
    EXPECT_EQ(any.type, type);
  }
  // Empty ODCID (typical for NEW_TOKEN) and a maximal address.
  const Bytes long_address(kMaxTokenAddressLength, 0xab);
  const Bytes token = issue(AddressTokenType::kNewToken, long_address, wire::ConnectionId());
  EXPECT_EQ(token.size(), kMaxAddressTokenLength - wire::kMaxConnectionIdLength);
  ValidatedToken out;
  out.original_dcid = kOdcid;
  EXPECT_EQ(tokens_.validate(token, AddressTokenType::kNewToken, long_address, kNow, out),
            TokenValidation::kValid);
  EXPECT_TRUE(out.original_dcid.empty());
}

TEST_F(AddressTokensTest, NoncesDiffer) {
  EXPECT_NE(issue(AddressTokenType::kRetry), issue(AddressTokenType::kRetry));
}

TEST_F(AddressTokensTest, ExpiresPerType) {
  const Bytes retry = issue(AddressTokenType::kRetry);
  const Bytes new_token = issue(AddressTokenType::kNewToken);
  ValidatedToken out;
  EXPECT_EQ(tokens_.validate(retry, AddressTokenType::kRetry, kAddress, kNow + 10'000'000, out),
            TokenValidation::kValid);
  EXPECT_EQ(tokens_.validate(retry, AddressTokenType::kRetry, kAddress, kNow + 10'000'001, out),
            TokenValidation::kExpired);
  EXPECT_EQ(
      tokens_.validate(new_token, AddressTokenType::kNewToken, kAddress, kNow + 10'000'001, out),
      TokenValidation::kValid);
  EXPECT_EQ(tokens_.validate(new_token, AddressTokenType::kNewToken, kAddress,
                             kNow + 86'400'000'001ull, out),
            TokenValidation::kExpired);
  // Issued in the future (another clock): not accepted either.
  EXPECT_EQ(tokens_.validate(retry, AddressTokenType::kRetry, kAddress, kNow - 1, out),
            TokenValidation::kExpired);
}

TEST_F(AddressTokensTest, BoundToAddressAndType) {
  const Bytes token = issue(AddressTokenType::kRetry);
  ValidatedToken out;
  EXPECT_EQ(tokens_.validate(token, AddressTokenType::kRetry, kOtherPort, kNow, out),
            TokenValidation::kWrongAddress);
  EXPECT_EQ(tokens_.validate(token, AddressTokenType::kRetry, Bytes{4, 192, 0, 2, 1}, kNow, out),
            TokenValidation::kWrongAddress);
  EXPECT_EQ(tokens_.validate(token, AddressTokenType::kNewToken, kAddress, kNow, out),
            TokenValidation::kWrongType);
  const Bytes new_token = issue(AddressTokenType::kNewToken);
  EXPECT_EQ(tokens_.validate(new_token, AddressTokenType::kRetry, kAddress, kNow, out),
            TokenValidation::kWrongType);
}

TEST_F(AddressTokensTest, TamperedTokensAreRejected) {
  const Bytes token = issue(AddressTokenType::kRetry);
  ValidatedToken out;
  for (size_t i = 0; i < token.size(); ++i) {
    Bytes damaged = token;
    damaged[i] ^= 0x01;
    const TokenValidation result = tokens_.validate(damaged, std::nullopt, kAddress, kNow, out);
    // Flipping the type bit 0 of the first byte turns Retry (1) into 0, an
    // unknown type; everything else fails authentication.
    EXPECT_EQ(result, i == 0 ? TokenValidation::kMalformed : TokenValidation::kInvalid)
        << "byte " << i;
  }
  // The type is authenticated: relabelling a Retry token as NEW_TOKEN fails.
  Bytes relabelled = token;
  relabelled[0] = (relabelled[0] & 0xf0) | static_cast<uint8_t>(AddressTokenType::kNewToken);
  EXPECT_EQ(tokens_.validate(relabelled, std::nullopt, kAddress, kNow, out),
            TokenValidation::kInvalid);
  // Truncated, too long, unknown format version.
  EXPECT_EQ(
      tokens_.validate(Bytes(token.begin(), token.begin() + 20), std::nullopt, kAddress, kNow, out),
      TokenValidation::kMalformed);
  EXPECT_EQ(
      tokens_.validate(Bytes(kMaxAddressTokenLength + 1, 0x11), std::nullopt, kAddress, kNow, out),
      TokenValidation::kMalformed);
  Bytes other_format = token;
  other_format[0] = 0x21;
  EXPECT_EQ(tokens_.validate(other_format, std::nullopt, kAddress, kNow, out),
            TokenValidation::kMalformed);
  // Another server key.
  Bytes other_key = kTokenKey;
  other_key[15] ^= 1;
  const AddressTokens other(mb_, other_key);
  EXPECT_EQ(other.validate(token, std::nullopt, kAddress, kNow, out), TokenValidation::kInvalid);
}

TEST_F(AddressTokensTest, IssueRejectsBadArguments) {
  Bytes out(kMaxAddressTokenLength);
  EXPECT_EQ(tokens_.issue(AddressTokenType::kRetry, Bytes(kMaxTokenAddressLength + 1, 1), kOdcid,
                          kNow, out),
            0u);
  Bytes small(20);
  EXPECT_EQ(tokens_.issue(AddressTokenType::kRetry, kAddress, kOdcid, kNow, small), 0u);
  EXPECT_THROW(AddressTokens(mb_, Bytes(32, 1)), std::invalid_argument);
}

// --- Key rotation: the current key issues, previous keys still validate ---

const Bytes kKeyA(16, 0xa1);
const Bytes kKeyB(16, 0xb2);
const Bytes kKeyC(16, 0xc3);

class TokenKeyRotationTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kNow = 1'000'000'000;
  MbManager mb_;

  Bytes issue(const AddressTokens& tokens, AddressTokenType type = AddressTokenType::kNewToken) {
    Bytes token(kMaxAddressTokenLength);
    const size_t length = tokens.issue(type, kAddress, kOdcid, kNow, token);
    EXPECT_NE(length, 0u);
    token.resize(length);
    return token;
  }
  TokenValidation validate(const AddressTokens& tokens, const Bytes& token,
                           uint64_t now = kNow + 1) {
    ValidatedToken out;
    return tokens.validate(token, std::nullopt, kAddress, now, out);
  }
};

TEST_F(TokenKeyRotationTest, PreviousKeysStillValidate) {
  const std::vector<Bytes> previous_a = {kKeyA};
  const AddressTokens under_a(mb_, kKeyA);
  const AddressTokens rotated(mb_, kKeyB, previous_a);
  const AddressTokens only_b(mb_, kKeyB);
  for (AddressTokenType type : {AddressTokenType::kRetry, AddressTokenType::kNewToken}) {
    const Bytes token = issue(under_a, type);
    ValidatedToken out;
    EXPECT_EQ(rotated.validate(token, type, kAddress, kNow + 1, out), TokenValidation::kValid);
    EXPECT_EQ(out.type, type);
    EXPECT_EQ(out.original_dcid, kOdcid);
    EXPECT_EQ(out.issued_at, kNow);
    // Once A is dropped it is just another server's token.
    EXPECT_EQ(validate(only_b, token), TokenValidation::kInvalid);
  }
  // New tokens are issued under the current key only: B, which A alone
  // does not know, and which B alone accepts.
  const Bytes token = issue(rotated);
  EXPECT_EQ(validate(under_a, token), TokenValidation::kInvalid);
  EXPECT_EQ(validate(only_b, token), TokenValidation::kValid);
  EXPECT_EQ(validate(rotated, token), TokenValidation::kValid);
}

TEST_F(TokenKeyRotationTest, EveryPreviousKeyIsTried) {
  const AddressTokens under_a(mb_, kKeyA);
  const AddressTokens under_b(mb_, kKeyB);
  const Bytes key_d(16, 0xd4);
  const std::vector<Bytes> previous = {kKeyC, kKeyB, kKeyA};
  const AddressTokens rotated(mb_, key_d, previous);
  EXPECT_EQ(validate(rotated, issue(under_a)), TokenValidation::kValid);
  EXPECT_EQ(validate(rotated, issue(under_b)), TokenValidation::kValid);
  // None of the four keys: not authentic, however many were tried.
  const AddressTokens stranger(mb_, Bytes(16, 0xe5));
  EXPECT_EQ(validate(rotated, issue(stranger)), TokenValidation::kInvalid);
}

TEST_F(TokenKeyRotationTest, PreviousKeyTokensStillExpireAndBindTheirAddress) {
  const std::vector<Bytes> previous_a = {kKeyA};
  const AddressTokens under_a(mb_, kKeyA, {}, AddressTokenLifetimes{10, 1000});
  const AddressTokens rotated(mb_, kKeyB, previous_a, AddressTokenLifetimes{10, 1000});
  const Bytes retry = issue(under_a, AddressTokenType::kRetry);
  const Bytes new_token = issue(under_a, AddressTokenType::kNewToken);
  EXPECT_EQ(validate(rotated, retry, kNow + 10), TokenValidation::kValid);
  EXPECT_EQ(validate(rotated, retry, kNow + 11), TokenValidation::kExpired);
  EXPECT_EQ(validate(rotated, new_token, kNow + 1000), TokenValidation::kValid);
  EXPECT_EQ(validate(rotated, new_token, kNow + 1001), TokenValidation::kExpired);
  EXPECT_EQ(validate(rotated, new_token, kNow - 1), TokenValidation::kExpired);
  ValidatedToken out;
  EXPECT_EQ(rotated.validate(new_token, std::nullopt, kOtherPort, kNow, out),
            TokenValidation::kWrongAddress);
  EXPECT_EQ(rotated.validate(new_token, AddressTokenType::kRetry, kAddress, kNow, out),
            TokenValidation::kWrongType);
}

TEST_F(TokenKeyRotationTest, RejectsBadPreviousKeys) {
  const std::vector<Bytes> three = {kKeyA, kKeyB, kKeyC};
  EXPECT_NO_THROW(AddressTokens(mb_, Bytes(16, 1), three));
  const std::vector<Bytes> four = {kKeyA, kKeyB, kKeyC, Bytes(16, 0xd4)};
  static_assert(kMaxPreviousTokenKeys == 3);
  EXPECT_THROW(AddressTokens(mb_, Bytes(16, 1), four), std::invalid_argument);
  const std::vector<Bytes> short_key = {kKeyA, Bytes(15, 1)};
  EXPECT_THROW(AddressTokens(mb_, Bytes(16, 1), short_key), std::invalid_argument);
  const std::vector<Bytes> long_key = {Bytes(32, 1)};
  EXPECT_THROW(AddressTokens(mb_, Bytes(16, 1), long_key), std::invalid_argument);
}

// Tokens are issued and validated for every Initial under Retry: a
// previous-key token (four opens), a stranger's (four failed opens), a
// current one and a fresh issue allocate nothing.
TEST_F(TokenKeyRotationTest, IssueAndValidateAllocateNothing) {
  const std::vector<Bytes> previous = {kKeyC, kKeyB, kKeyA};
  const AddressTokens rotated(mb_, Bytes(16, 0xd4), previous);
  const Bytes under_a = issue(AddressTokens(mb_, kKeyA));
  const Bytes stranger = issue(AddressTokens(mb_, Bytes(16, 0xe5)));
  const Bytes current = issue(rotated);
  Bytes out(kMaxAddressTokenLength);
  ValidatedToken validated;
  size_t valid = 0;
  size_t allocations = 0;
  {
    ::dpquic::testing::AllocationWindow window;
    for (int i = 0; i < 1000; ++i) {
      for (const Bytes* token : {&under_a, &stranger, &current}) {
        valid += rotated.validate(*token, std::nullopt, kAddress, kNow, validated) ==
                 TokenValidation::kValid;
      }
      valid += rotated.issue(AddressTokenType::kRetry, kAddress, kOdcid, kNow, out) != 0;
    }
    allocations = window.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(valid, 3000u);
}

TEST_F(TokenKeyRotationTest, RekeyReplacesKeysOrNothing) {
  AddressTokens tokens(mb_, kKeyA);
  const Bytes under_a = issue(tokens);
  const std::vector<Bytes> previous_a = {kKeyA};
  ASSERT_TRUE(tokens.rekey(kKeyB, previous_a));
  EXPECT_EQ(validate(tokens, under_a), TokenValidation::kValid);
  const Bytes under_b = issue(tokens);
  EXPECT_EQ(validate(AddressTokens(mb_, kKeyB), under_b), TokenValidation::kValid);

  // Refused: nothing changes, B issues and A still validates.
  const std::vector<Bytes> four = {kKeyA, kKeyB, kKeyC, Bytes(16, 0xd4)};
  const std::vector<Bytes> short_previous = {Bytes(15, 1)};
  EXPECT_FALSE(tokens.rekey(kKeyC, four));
  EXPECT_FALSE(tokens.rekey(kKeyC, short_previous));
  EXPECT_FALSE(tokens.rekey(Bytes(17, 1), {}));
  EXPECT_EQ(validate(tokens, under_a), TokenValidation::kValid);
  EXPECT_EQ(validate(AddressTokens(mb_, kKeyB), issue(tokens)), TokenValidation::kValid);

  // Without previous keys, only the new key's tokens validate.
  ASSERT_TRUE(tokens.rekey(kKeyC, {}));
  EXPECT_EQ(validate(tokens, under_a), TokenValidation::kInvalid);
  EXPECT_EQ(validate(tokens, under_b), TokenValidation::kInvalid);
  EXPECT_EQ(validate(AddressTokens(mb_, kKeyC), issue(tokens)), TokenValidation::kValid);
}

TEST(StatelessResetTokens, RekeyReplacesTheKeyOrNothing) {
  StatelessResetTokens tokens(kResetKey);
  const wire::ConnectionId cid(Bytes{1, 2, 3, 4, 5, 6, 7, 8});
  const StatelessResetToken before = tokens.token_for(cid);
  EXPECT_FALSE(tokens.rekey(Bytes(31, 1)));
  EXPECT_FALSE(tokens.rekey(Bytes(65, 1)));
  EXPECT_EQ(tokens.token_for(cid), before);
  const Bytes other_key(64, 0x29);
  ASSERT_TRUE(tokens.rekey(other_key));
  EXPECT_EQ(tokens.token_for(cid), StatelessResetTokens(other_key).token_for(cid));
  EXPECT_NE(tokens.token_for(cid), before);
}

TEST(AddressTokensClaimedType, ReadsTheClearFirstByte) {
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{0x11}), AddressTokenType::kRetry);
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{0x12, 0}), AddressTokenType::kNewToken);
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{0x13}), std::nullopt);  // unknown type
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{0x10}), std::nullopt);
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{0x21}), std::nullopt);  // unknown format
  EXPECT_EQ(AddressTokens::claimed_type(Bytes{}), std::nullopt);
}

}  // namespace
}  // namespace dpquic::crypto
