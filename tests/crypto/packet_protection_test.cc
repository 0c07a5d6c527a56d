// RFC 9001 Appendix A.2, A.3, A.5 and RFC 9369 Appendix A.2, A.3, A.5:
// complete protected packets byte for byte, then opened back; and the open
// paths that must fail without taking the rest of a burst with them.
#include <gtest/gtest.h>
#include <openssl/aead.h>
#include <openssl/aes.h>
#include <openssl/chacha.h>

#include <cstdint>
#include <string>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "crypto/initial_secrets.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"
#include "tests/util/hex.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::from_hex;

using Bytes = std::vector<uint8_t>;

Bytes concat(const Bytes& a, const Bytes& b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

const Bytes kClientDcid = from_hex("8394c8f03e515708");

// RFC 9001 A.2 (identical in RFC 9369 A.2): the CRYPTO frame, padded with
// PADDING frames to 1162 bytes.
Bytes client_initial_payload() {
  Bytes payload = from_hex(
      "060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868"
      "04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578"
      "616d706c652e636f6dff01000100000a 00080006001d00170018001000070005"
      "04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba"
      "baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400"
      "0d0010000e0403050306030203080408 050806002d00020101001c0002400100"
      "3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000"
      "75300901100f088394c8f03e51570806 048000ffff");
  payload.resize(1162, 0x00);
  return payload;
}

// RFC 9001 A.3 / RFC 9369 A.3: ACK frame and CRYPTO frame.
const Bytes kServerInitialPayload = from_hex(
    "02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00"
    "020304");

const Bytes kClientInitialV1 = from_hex(
    "c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11"
    "d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399"
    "1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c"
    "8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212"
    "30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5"
    "457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208"
    "4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec"
    "4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3"
    "485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db"
    "059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c"
    "7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8"
    "9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556"
    "be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74"
    "68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a"
    "c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00"
    "f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632"
    "291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964"
    "25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd"
    "14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff"
    "ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198"
    "e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd"
    "c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73"
    "203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f"
    "cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e"
    "fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade"
    "a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047"
    "90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2"
    "162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4"
    "40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0"
    "6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e"
    "8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0"
    "be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400"
    "54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab"
    "760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9"
    "f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4"
    "056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064"
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241"
    "e221af44860018ab0856972e194cd934");

const Bytes kClientInitialV2 = from_hex(
    "d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485"
    "dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04"
    "9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d"
    "250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a"
    "12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500"
    "cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68"
    "18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33"
    "12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3"
    "d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd"
    "6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520"
    "bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045"
    "636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f"
    "ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12"
    "16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5"
    "4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4"
    "fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b"
    "8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7"
    "14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9"
    "9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91"
    "abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd"
    "80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db"
    "848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18"
    "d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15"
    "c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc"
    "7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61"
    "f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710"
    "10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b"
    "3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e"
    "06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce"
    "8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1"
    "34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1"
    "e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd"
    "5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3"
    "8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89"
    "d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53"
    "6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19"
    "9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b"
    "a18b2faa745b6fe189cf772a9f84cbfc");

const Bytes kServerInitialV1 = from_hex(
    "cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee");

const Bytes kServerInitialV2 = from_hex(
    "dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698"
    "baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17"
    "f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2"
    "c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8"
    "4bed8521e2e140");

const Bytes kChaChaSecret =
    from_hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b");
constexpr uint64_t kChaChaPacketNumber = 654360564;
const Bytes kChaChaPacketV1 = from_hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
const Bytes kChaChaPacketV2 = from_hex("5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba");

// One RFC example: the keys, the unprotected header and payload, and the
// protected packet they must give.
struct Example {
  const char* name;
  uint32_t version;
  CipherSuite suite;
  Bytes secret;
  Bytes header;
  Bytes payload;
  uint64_t packet_number;
  Bytes expected;
};

class PacketProtectionTest : public ::testing::Test {
 protected:
  std::vector<Example> examples() const {
    std::vector<Example> all;
    for (uint32_t version : {wire::kVersion1, wire::kVersion2}) {
      const bool v1 = version == wire::kVersion1;
      InitialSecrets secrets;
      EXPECT_TRUE(derive_initial_secrets(version, kClientDcid, secrets));
      const Bytes client(secrets.client.begin(), secrets.client.end());
      const Bytes server(secrets.server.begin(), secrets.server.end());
      all.push_back({v1 ? "client initial v1" : "client initial v2", version, kInitialCipherSuite,
                     client,
                     from_hex(v1 ? "c300000001088394c8f03e5157080000449e00000002"
                                 : "d36b3343cf088394c8f03e5157080000449e00000002"),
                     client_initial_payload(), 2, v1 ? kClientInitialV1 : kClientInitialV2});
      all.push_back({v1 ? "server initial v1" : "server initial v2", version, kInitialCipherSuite,
                     server,
                     from_hex(v1 ? "c1000000010008f067a5502a4262b50040750001"
                                 : "d16b3343cf0008f067a5502a4262b50040750001"),
                     kServerInitialPayload, 1, v1 ? kServerInitialV1 : kServerInitialV2});
      all.push_back({v1 ? "chacha20 short v1" : "chacha20 short v2", version,
                     CipherSuite::kChaCha20Poly1305, kChaChaSecret, from_hex("4200bff4"),
                     from_hex("01"), kChaChaPacketNumber, v1 ? kChaChaPacketV1 : kChaChaPacketV2});
    }
    return all;
  }

  static std::unique_ptr<PacketKeys> keys_for(const MbManager& mb, const Example& example) {
    auto keys = std::make_unique<PacketKeys>();
    EXPECT_TRUE(keys->derive(mb, example.suite, example.version, example.secret));
    return keys;
  }

  // Unprotected header followed by the plaintext payload and room for the tag.
  static Bytes layout(const Example& example) {
    Bytes packet = concat(example.header, example.payload);
    packet.resize(packet.size() + kAeadTagLength);
    return packet;
  }

  MbManager mb_;
};

TEST_F(PacketProtectionTest, ProtectsRfcExamplesByteForByte) {
  for (const Example& example : examples()) {
    SCOPED_TRACE(example.name);
    auto keys = keys_for(mb_, example);
    Bytes packet = layout(example);
    const ProtectOp op{keys.get(), example.packet_number, packet, example.header.size(),
                       std::span(packet).subspan(example.header.size(), example.payload.size())};
    ASSERT_EQ(protect(mb_, op), PacketStatus::kOk);
    EXPECT_EQ(packet, example.expected);
  }
}

TEST_F(PacketProtectionTest, OutOfPlaceProtectEqualsInPlace) {
  for (const Example& example : examples()) {
    SCOPED_TRACE(example.name);
    auto keys = keys_for(mb_, example);
    Bytes packet = example.header;  // only the header: the payload comes from elsewhere
    packet.resize(example.header.size() + example.payload.size() + kAeadTagLength, 0xee);
    const ProtectOp op{keys.get(), example.packet_number, packet, example.header.size(),
                       example.payload};
    ASSERT_EQ(protect(mb_, op), PacketStatus::kOk);
    EXPECT_EQ(packet, example.expected);
  }
}

// Receiving: remove header protection, then open, in place.
TEST_F(PacketProtectionTest, UnprotectsRfcExamples) {
  for (const Example& example : examples()) {
    SCOPED_TRACE(example.name);
    auto keys = keys_for(mb_, example);
    Bytes packet = example.expected;
    const size_t pn_length = (example.header[0] & 0x03) + 1;
    const size_t pn_offset = example.header.size() - pn_length;
    HeaderProtectionMask mask;
    ASSERT_TRUE(compute_mask(mb_, keys->header_protection(),
                             packet.data() + sample_offset(pn_offset), mask));
    ASSERT_EQ(remove_header_protection(packet, pn_offset, mask), pn_length);
    EXPECT_EQ(Bytes(packet.begin(), packet.begin() + example.header.size()), example.header);

    const std::span<uint8_t> body = std::span(packet).subspan(example.header.size());
    const OpenOp op{&keys->aead(), example.packet_number,
                    std::span(packet).first(example.header.size()), body,
                    body.first(body.size() - kAeadTagLength)};
    ASSERT_EQ(open(mb_, op), PacketStatus::kOk);
    EXPECT_EQ(Bytes(body.begin(), body.end() - kAeadTagLength), example.payload);
  }
}

TEST_F(PacketProtectionTest, HeaderUnprotectBurstMatchesSingles) {
  const std::vector<Example> all = examples();
  std::vector<std::unique_ptr<PacketKeys>> keys;
  std::vector<Bytes> packets;
  std::vector<HeaderUnprotectOp> ops;
  for (const Example& example : all) {
    keys.push_back(keys_for(mb_, example));
    packets.push_back(example.expected);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const size_t pn_offset = all[i].header.size() - ((all[i].header[0] & 0x03) + 1);
    ops.push_back({&keys[i]->header_protection(), packets[i], pn_offset});
  }
  // A packet too short for a sample fails alone.
  Bytes runt = from_hex("4cfe41896555");
  ops.push_back({&keys[2]->header_protection(), runt, 1});
  std::vector<uint8_t> pn_lengths(ops.size(), 0xff);
  EXPECT_EQ(remove_header_protection_burst(mb_, ops, pn_lengths), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(pn_lengths[i], (all[i].header[0] & 0x03) + 1) << all[i].name;
    EXPECT_EQ(Bytes(packets[i].begin(), packets[i].begin() + all[i].header.size()), all[i].header)
        << all[i].name;
  }
  EXPECT_EQ(pn_lengths.back(), 0);
  EXPECT_EQ(runt, from_hex("4cfe41896555"));
}

// A burst of the six RFC packets in which some are damaged: only those fail.
TEST_F(PacketProtectionTest, FailedOpenMarksOnlyThatPacket) {
  const std::vector<Example> all = examples();
  std::vector<std::unique_ptr<PacketKeys>> keys;
  std::vector<Bytes> packets;
  for (const Example& example : all) {
    keys.push_back(keys_for(mb_, example));
    // Header protection already removed: the AEAD step is under test.
    packets.push_back(concat(example.header, {}));
    packets.back().insert(packets.back().end(), example.expected.begin() + example.header.size(),
                          example.expected.end());
  }
  packets[0][packets[0].size() - 1] ^= 0x01;  // tampered tag
  packets[4][5] ^= 0x80;                      // tampered header (server initial v2, DCID length)
  packets[5][0] ^= 0x04;                      // short header, key phase bit flipped

  std::vector<OpenOp> ops;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::span<uint8_t> body = std::span(packets[i]).subspan(all[i].header.size());
    ops.push_back({&keys[i]->aead(), all[i].packet_number,
                   std::span(packets[i]).first(all[i].header.size()), body,
                   body.first(body.size() - kAeadTagLength)});
  }
  std::vector<PacketStatus> status(ops.size());
  EXPECT_EQ(open_burst(mb_, ops, status), 3u);
  const std::vector<PacketStatus> expected = {PacketStatus::kAuthenticationFailed,
                                              PacketStatus::kOk,
                                              PacketStatus::kOk,
                                              PacketStatus::kOk,
                                              PacketStatus::kAuthenticationFailed,
                                              PacketStatus::kAuthenticationFailed};
  EXPECT_EQ(status, expected);
  for (size_t i : {1, 2, 3}) {
    const auto body = packets[i].begin() + all[i].header.size();
    EXPECT_EQ(Bytes(body, body + all[i].payload.size()), all[i].payload) << all[i].name;
  }
  // Failed opens leave zeros, not unauthenticated plaintext.
  for (size_t i : {0, 4, 5}) {
    const auto body = packets[i].begin() + all[i].header.size();
    EXPECT_EQ(Bytes(body, body + all[i].payload.size()), Bytes(all[i].payload.size(), 0))
        << all[i].name;
  }
}

// A 1-RTT packet sealed after a key update (next generation, key phase 1)
// does not open under the current generation's key.
TEST_F(PacketProtectionTest, WrongKeyPhaseIsRejected) {
  const CipherSuite suite = CipherSuite::kChaCha20Poly1305;
  std::array<uint8_t, 32> next_secret;
  ASSERT_TRUE(derive_next_secret(suite, wire::kVersion1, kChaChaSecret, next_secret));
  PacketKeys current;
  ASSERT_TRUE(current.derive(mb_, suite, wire::kVersion1, kChaChaSecret));
  AeadKey next;
  ASSERT_TRUE(next.derive(mb_, suite, wire::kVersion1, next_secret));

  const Bytes header = from_hex("4600bff4");  // key phase bit set
  const Bytes payload = from_hex("01");
  Bytes sealed(payload.size() + kAeadTagLength);
  ASSERT_EQ(seal(mb_, {&next, kChaChaPacketNumber, header, payload, sealed}), PacketStatus::kOk);

  Bytes out(payload.size());
  EXPECT_EQ(open(mb_, {&current.aead(), kChaChaPacketNumber, header, sealed, out}),
            PacketStatus::kAuthenticationFailed);
  EXPECT_EQ(open(mb_, {&next, kChaChaPacketNumber, header, sealed, out}), PacketStatus::kOk);
  EXPECT_EQ(out, payload);
}

TEST_F(PacketProtectionTest, OutOfPlaceSealEqualsInPlaceSeal) {
  for (CipherSuite suite :
       {CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm, CipherSuite::kChaCha20Poly1305}) {
    const Bytes secret(secret_length(suite), 0x5a);
    AeadKey key;
    ASSERT_TRUE(key.derive(mb_, suite, wire::kVersion1, secret));
    const Bytes header = from_hex("41deadbeef0007");
    Bytes payload(1350);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7);

    Bytes in_place = payload;
    in_place.resize(payload.size() + kAeadTagLength);
    ASSERT_EQ(seal(mb_, {&key, 7, header, std::span(in_place).first(payload.size()), in_place}),
              PacketStatus::kOk);
    Bytes out_of_place(payload.size() + kAeadTagLength);
    ASSERT_EQ(seal(mb_, {&key, 7, header, payload, out_of_place}), PacketStatus::kOk);
    EXPECT_EQ(in_place, out_of_place);

    Bytes opened(payload.size());
    ASSERT_EQ(open(mb_, {&key, 7, header, out_of_place, opened}), PacketStatus::kOk);
    EXPECT_EQ(opened, payload);
  }
}

// ipsec-mb's AES-256-GCM against BoringSSL's, which is an independent
// implementation (the RFCs have no AES-256 example).
TEST_F(PacketProtectionTest, Aes256GcmMatchesBoringSsl) {
  KeyMaterial material;
  const Bytes secret(48, 0x11);
  ASSERT_TRUE(derive_key_material(CipherSuite::kAes256Gcm, wire::kVersion2, secret, material));
  AeadKey key;
  ASSERT_TRUE(key.install(mb_, CipherSuite::kAes256Gcm, material.key_bytes(), material.iv));
  const Bytes header = from_hex("5f0102030405060708");
  Bytes payload(1000, 0x42);
  Bytes ours(payload.size() + kAeadTagLength);
  ASSERT_EQ(seal(mb_, {&key, 0x123456, header, payload, ours}), PacketStatus::kOk);

  EVP_AEAD_CTX ctx;
  ASSERT_EQ(EVP_AEAD_CTX_init(&ctx, EVP_aead_aes_256_gcm(), material.key.data(), 32, kAeadTagLength,
                              nullptr),
            1);
  AeadNonce nonce;
  key.nonce(0x123456, nonce);
  Bytes theirs(payload.size() + kAeadTagLength);
  size_t written = 0;
  ASSERT_EQ(
      EVP_AEAD_CTX_seal(&ctx, theirs.data(), &written, theirs.size(), nonce.data(), nonce.size(),
                        payload.data(), payload.size(), header.data(), header.size()),
      1);
  EVP_AEAD_CTX_cleanup(&ctx);
  EXPECT_EQ(written, theirs.size());
  EXPECT_EQ(ours, theirs);
}

TEST_F(PacketProtectionTest, BurstOf32EqualsThirtyTwoSingles) {
  for (CipherSuite suite :
       {CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm, CipherSuite::kChaCha20Poly1305}) {
    const Bytes secret(secret_length(suite), 0x33);
    PacketKeys keys;
    ASSERT_TRUE(keys.derive(mb_, suite, wire::kVersion1, secret));
    constexpr size_t kCount = 32;
    const Bytes header = from_hex("43a1a2a3a4a5a6a7a800000000");  // 4-byte packet number
    std::vector<Bytes> burst(kCount), singles(kCount);
    std::vector<Bytes> payloads(kCount);
    std::vector<ProtectOp> ops;
    for (size_t i = 0; i < kCount; ++i) {
      payloads[i].assign(100 + 37 * i, static_cast<uint8_t>(i));
      Bytes packet = header;
      packet[header.size() - 1] = static_cast<uint8_t>(i);
      packet.resize(header.size() + payloads[i].size() + kAeadTagLength);
      burst[i] = singles[i] = packet;
    }
    for (size_t i = 0; i < kCount; ++i) {
      ops.push_back({&keys, 1000 + i, burst[i], header.size(), payloads[i]});
      ASSERT_EQ(protect(mb_, {&keys, 1000 + i, singles[i], header.size(), payloads[i]}),
                PacketStatus::kOk);
    }
    std::vector<PacketStatus> status(kCount);
    EXPECT_EQ(protect_burst(mb_, ops, status), kCount);
    EXPECT_EQ(status, std::vector<PacketStatus>(kCount, PacketStatus::kOk));
    EXPECT_EQ(burst, singles);
  }
}

// Bursts longer than kMaxBurst run in chunks and still open every packet.
TEST_F(PacketProtectionTest, LongBurstRoundTrips) {
  AeadKey key;
  ASSERT_TRUE(key.derive(mb_, CipherSuite::kAes128Gcm, wire::kVersion1, Bytes(32, 9)));
  constexpr size_t kCount = kMaxBurst * 2 + 5;
  const Bytes header = from_hex("40");
  std::vector<Bytes> plain(kCount), sealed(kCount), opened(kCount);
  std::vector<SealOp> seals;
  std::vector<OpenOp> opens;
  for (size_t i = 0; i < kCount; ++i) {
    plain[i].assign(i, static_cast<uint8_t>(i));  // includes an empty payload
    sealed[i].resize(i + kAeadTagLength);
    opened[i].resize(i);
    seals.push_back({&key, i, header, plain[i], sealed[i]});
    opens.push_back({&key, i, header, sealed[i], opened[i]});
  }
  std::vector<PacketStatus> status(kCount);
  EXPECT_EQ(seal_burst(mb_, seals, status), kCount);
  EXPECT_EQ(open_burst(mb_, opens, status), kCount);
  EXPECT_EQ(opened, plain);
}

TEST_F(PacketProtectionTest, RejectsBadArguments) {
  AeadKey key;
  ASSERT_TRUE(key.derive(mb_, CipherSuite::kAes128Gcm, wire::kVersion1, Bytes(32, 1)));
  AeadKey missing;
  const Bytes header = from_hex("40");
  Bytes buffer(64);
  const std::span<uint8_t> all(buffer);
  // Output too small for the tag.
  EXPECT_EQ(seal(mb_, {&key, 0, header, all.first(20), all.subspan(32, 30)}),
            PacketStatus::kInvalidArgument);
  // Partial overlap.
  EXPECT_EQ(seal(mb_, {&key, 0, header, all.first(20), all.subspan(4, 40)}),
            PacketStatus::kInvalidArgument);
  // No key.
  EXPECT_EQ(seal(mb_, {&missing, 0, header, all.first(20), all.subspan(20, 40)}),
            PacketStatus::kInvalidArgument);
  // Ciphertext shorter than a tag.
  EXPECT_EQ(open(mb_, {&key, 0, header, all.first(15), all.subspan(32, 15)}),
            PacketStatus::kInvalidArgument);
  // Output overlapping the received tag.
  EXPECT_EQ(open(mb_, {&key, 0, header, all.first(36), all.subspan(20, 20)}),
            PacketStatus::kInvalidArgument);
  // Status array too short: nothing is done.
  const SealOp op{&key, 0, header, all.first(8), all.subspan(32, 24)};
  EXPECT_EQ(seal_burst(mb_, {&op, 1}, {}), 0u);
  // Protect needs room for the header protection sample.
  PacketKeys keys;
  ASSERT_TRUE(keys.derive(mb_, CipherSuite::kAes128Gcm, wire::kVersion1, Bytes(32, 1)));
  Bytes tiny = from_hex("4001");
  tiny.resize(2 + 1 + kAeadTagLength);
  EXPECT_EQ(protect(mb_, {&keys, 1, tiny, 2, from_hex("01")}), PacketStatus::kInvalidArgument);
}

// Lengths and offsets near SIZE_MAX (a parser bug upstream, say) must be
// refused, not wrapped around into a write before or after the buffer.
TEST_F(PacketProtectionTest, HugeLengthsAndOffsetsDoNotWrapAround) {
  PacketKeys keys;
  ASSERT_TRUE(keys.derive(mb_, CipherSuite::kAes128Gcm, wire::kVersion1, Bytes(32, 1)));
  std::array<uint8_t, 96> storage;
  storage.fill(0xa5);
  storage[32] = 0x43;  // short header, 4-byte packet number
  const std::array<uint8_t, 96> original = storage;

  // header_length + 0 + 16 wraps to 8 == packet.size().
  const std::span<uint8_t> eight(storage.data() + 32, 8);
  EXPECT_EQ(protect(mb_, {&keys, 1, eight, SIZE_MAX - 7, {}}), PacketStatus::kInvalidArgument);
  EXPECT_EQ(storage, original);

  // pn_offset + pn_length (4) wraps to 0.
  const std::span<uint8_t> sixteen(storage.data() + 32, 16);
  const HeaderProtectionMask zero_mask{};
  const HeaderProtectionMask ones_mask{0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_FALSE(apply_header_protection(sixteen, SIZE_MAX - 3, ones_mask));
  EXPECT_EQ(remove_header_protection(sixteen, SIZE_MAX - 3, zero_mask), 0u);
  EXPECT_EQ(storage, original);

  // pn_offset + 4 + 16 wraps to 16: no sample there.
  EXPECT_FALSE(has_sample(16, SIZE_MAX - 3));
  EXPECT_FALSE(has_sample(SIZE_MAX, SIZE_MAX - 3));
  EXPECT_TRUE(has_sample(21, 1));
  EXPECT_FALSE(has_sample(20, 1));
  const HeaderUnprotectOp unprotect{&keys.header_protection(), sixteen, SIZE_MAX - 3};
  uint8_t pn_length = 0xff;
  EXPECT_EQ(remove_header_protection_burst(mb_, {&unprotect, 1}, {&pn_length, 1}), 0u);
  EXPECT_EQ(pn_length, 0);
  EXPECT_EQ(storage, original);

  // plaintext.size() + 16 wraps to 8, smaller than the 24-byte output. The
  // span is never read: the size check must refuse it first.
  const std::span<const uint8_t> huge(storage.data() + 40, SIZE_MAX - 7);
  EXPECT_EQ(seal(mb_, {&keys.aead(), 0, {}, huge, std::span(storage).first(24)}),
            PacketStatus::kInvalidArgument);
  EXPECT_EQ(storage, original);
}

// RFC 9001 §5.3: the 62-bit packet number, left-padded to 12 bytes, XOR the
// IV; the top bytes of the IV are untouched.
TEST_F(PacketProtectionTest, NonceIsIvXorLeftPaddedPacketNumber) {
  AeadKey key;
  const std::array<uint8_t, 12> iv = {0x10, 0x21, 0x32, 0x43, 0x54, 0x65,
                                      0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb};
  ASSERT_TRUE(key.install(mb_, CipherSuite::kAes128Gcm, Bytes(16, 3), iv));
  AeadNonce nonce;
  key.nonce(0x3fffffffffffffffull, nonce);
  EXPECT_EQ(Bytes(nonce.begin(), nonce.end()), from_hex("102132436b9a897867564534"));
  key.nonce(0, nonce);
  EXPECT_EQ(nonce, iv);
  key.nonce(0x0102030405, nonce);
  EXPECT_EQ(Bytes(nonce.begin(), nonce.end()), from_hex("10213243546576869aaabece"));
}

// The header protection masks against independent implementations:
// BoringSSL's AES block cipher for both AES suites (the RFCs have no AES-256
// example, and AES-256 masks take the ECB-job path), and ChaCha20 with the
// sample's first four bytes as a little-endian block counter.
TEST_F(PacketProtectionTest, HeaderProtectionMasksMatchBoringSsl) {
  const Bytes sample = from_hex("0102030405060708090a0b0c0d0e0f10");
  for (CipherSuite suite :
       {CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm, CipherSuite::kChaCha20Poly1305}) {
    SCOPED_TRACE(static_cast<int>(suite));
    KeyMaterial material;
    ASSERT_TRUE(
        derive_key_material(suite, wire::kVersion1, Bytes(secret_length(suite), 0x77), material));
    PacketKeys keys;
    ASSERT_TRUE(keys.install(mb_, material));
    Bytes expected(16);
    if (suite == CipherSuite::kChaCha20Poly1305) {
      const Bytes zeros(5, 0);
      CRYPTO_chacha_20(expected.data(), zeros.data(), 5, material.hp.data(), sample.data() + 4,
                       0x04030201);
    } else {
      AES_KEY aes;
      ASSERT_EQ(AES_set_encrypt_key(material.hp.data(),
                                    static_cast<unsigned>(aead_key_length(suite) * 8), &aes),
                0);
      AES_encrypt(sample.data(), expected.data(), &aes);
    }
    expected.resize(kHeaderProtectionMaskLength);
    HeaderProtectionMask single;
    ASSERT_TRUE(compute_mask(mb_, keys.header_protection(), sample.data(), single));
    EXPECT_EQ(Bytes(single.begin(), single.end()), expected);
    const MaskRequest requests[] = {{&keys.header_protection(), sample.data()},
                                    {&keys.header_protection(), sample.data()}};
    HeaderProtectionMask batch[2];
    ASSERT_TRUE(compute_masks(mb_, requests, batch));
    EXPECT_EQ(Bytes(batch[1].begin(), batch[1].end()), expected);
  }
}

TEST(HeaderProtection, Rfc9001MasksFromSamples) {
  MbManager mb;
  InitialSecrets secrets;
  ASSERT_TRUE(derive_initial_secrets(wire::kVersion1, kClientDcid, secrets));
  PacketKeys client, server, chacha;
  ASSERT_TRUE(client.derive(mb, kInitialCipherSuite, wire::kVersion1, secrets.client));
  ASSERT_TRUE(server.derive(mb, kInitialCipherSuite, wire::kVersion1, secrets.server));
  ASSERT_TRUE(chacha.derive(mb, CipherSuite::kChaCha20Poly1305, wire::kVersion1, kChaChaSecret));
  const Bytes samples[] = {from_hex("d1b1c98dd7689fb8ec11d242b123dc9b"),
                           from_hex("2cd0991cd25b0aac406a5816b6394100"),
                           from_hex("5e5cd55c41f69080575d7999c25a5bfb")};
  // Mixed keys and suites in one request list.
  const MaskRequest requests[] = {{&client.header_protection(), samples[0].data()},
                                  {&server.header_protection(), samples[1].data()},
                                  {&chacha.header_protection(), samples[2].data()},
                                  {&client.header_protection(), samples[0].data()}};
  HeaderProtectionMask masks[4];
  ASSERT_TRUE(compute_masks(mb, requests, masks));
  EXPECT_EQ(Bytes(masks[0].begin(), masks[0].end()), from_hex("437b9aec36"));
  EXPECT_EQ(Bytes(masks[1].begin(), masks[1].end()), from_hex("2ec0d8356a"));
  EXPECT_EQ(Bytes(masks[2].begin(), masks[2].end()), from_hex("aefefe7d03"));
  EXPECT_EQ(masks[3], masks[0]);
}

}  // namespace
}  // namespace dpquic::crypto
