// ConnectionKeys: installing and discarding keys per level, and 1-RTT key
// updates (RFC 9001 §6) driven from both sides, with old keys opening
// delayed packets until they expire.
#include "crypto/connection_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/wire/version.h"
#include "tests/util/hex.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::from_hex;

using Bytes = std::vector<uint8_t>;

bool all_zero(const void* data, size_t length) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  return std::all_of(bytes, bytes + length, [](uint8_t b) { return b == 0; });
}

constexpr uint64_t kPto = 100;
const Bytes kDcid = from_hex("8394c8f03e515708");
// Short header: 0x40 | key phase << 2 | (pn length - 1), a 4-byte DCID and a
// 2-byte packet number.
constexpr size_t kShortHeaderLength = 1 + 4 + 2;

// Builds and protects a 1-RTT packet the way quic/ will.
Bytes send_short(const MbManager& mb, const ConnectionKeys& keys, uint64_t packet_number,
                 const Bytes& payload) {
  Bytes packet(kShortHeaderLength + payload.size() + kAeadTagLength);
  const uint8_t header[kShortHeaderLength] = {
      static_cast<uint8_t>(0x41 | (keys.write_key_phase() ? 0x04 : 0)),
      0xaa,
      0xbb,
      0xcc,
      0xdd,
      static_cast<uint8_t>(packet_number >> 8),
      static_cast<uint8_t>(packet_number)};
  std::copy(std::begin(header), std::end(header), packet.begin());
  std::copy(payload.begin(), payload.end(), packet.begin() + kShortHeaderLength);
  const ProtectOp op{keys.write_keys(EncryptionLevel::kApplication), packet_number, packet,
                     kShortHeaderLength,
                     std::span(packet).subspan(kShortHeaderLength, payload.size())};
  EXPECT_EQ(protect(mb, op), PacketStatus::kOk);
  return packet;
}

struct Received {
  PacketStatus status = PacketStatus::kInvalidArgument;
  KeyGeneration generation = KeyGeneration::kCurrent;
  Bytes payload;
};

// Unprotects a 1-RTT packet: header protection, key selection by phase,
// open, then the key update bookkeeping. The full packet number is known to
// the test (no truncation decoding needed).
Received receive_short(const MbManager& mb, ConnectionKeys& keys, Bytes packet,
                       uint64_t packet_number, uint64_t now) {
  Received received;
  const HeaderProtectionKey* hp = keys.read_header_protection(EncryptionLevel::kApplication);
  if (hp == nullptr) return received;
  HeaderProtectionMask mask;
  EXPECT_TRUE(compute_mask(mb, *hp, packet.data() + sample_offset(5), mask));
  EXPECT_EQ(remove_header_protection(packet, 5, mask), 2u);
  const bool key_phase = (packet[0] & 0x04) != 0;
  const ReadKeySelection selection =
      keys.select_read_key(EncryptionLevel::kApplication, key_phase, packet_number, now);
  received.generation = selection.generation;
  if (selection.key == nullptr) return received;
  const std::span<uint8_t> body = std::span(packet).subspan(kShortHeaderLength);
  received.status =
      open(mb, {selection.key, packet_number, std::span(packet).first(kShortHeaderLength), body,
                body.first(body.size() - kAeadTagLength)});
  if (received.status == PacketStatus::kOk) {
    EXPECT_TRUE(keys.on_packet_opened(EncryptionLevel::kApplication, selection.generation,
                                      packet_number, now, kPto));
    received.payload.assign(body.begin(), body.end() - kAeadTagLength);
  }
  return received;
}

class ConnectionKeysTest : public ::testing::TestWithParam<CipherSuite> {
 protected:
  void install_application_keys(uint32_t version = wire::kVersion1) {
    const CipherSuite suite = GetParam();
    const Bytes client_secret(secret_length(suite), 0xc1);
    const Bytes server_secret(secret_length(suite), 0x5e);
    client_.set_version(version);
    server_.set_version(version);
    ASSERT_TRUE(client_.install_secret(EncryptionLevel::kApplication, Direction::kWrite, suite,
                                       client_secret));
    ASSERT_TRUE(client_.install_secret(EncryptionLevel::kApplication, Direction::kRead, suite,
                                       server_secret));
    ASSERT_TRUE(server_.install_secret(EncryptionLevel::kApplication, Direction::kWrite, suite,
                                       server_secret));
    ASSERT_TRUE(server_.install_secret(EncryptionLevel::kApplication, Direction::kRead, suite,
                                       client_secret));
  }

  MbManager mb_;
  ConnectionKeys client_{mb_, wire::Role::kClient, wire::kVersion1};
  ConnectionKeys server_{mb_, wire::Role::kServer, wire::kVersion1};
  const Bytes payload_ = Bytes(40, 0x01);  // PING frames; long enough for a sample
};

TEST(ConnectionKeys, InitialKeysAreRfc9001A1) {
  MbManager mb;
  ConnectionKeys client(mb, wire::Role::kClient, wire::kVersion1);
  ConnectionKeys server(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(client.install_initial_keys(kDcid));
  ASSERT_TRUE(server.install_initial_keys(kDcid));
  const Bytes client_secret =
      from_hex("c00cf151ca5be075ed0ebfb5c80323c4 2d6b7db67881289af4008f1f6c357aea");
  const Bytes server_secret =
      from_hex("3c199828fd139efd216c155ad844cc81 fb82fa8d7446fa7d78be803acdda951b");
  auto as_bytes = [](std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); };
  EXPECT_EQ(as_bytes(client.secret(EncryptionLevel::kInitial, Direction::kWrite)), client_secret);
  EXPECT_EQ(as_bytes(client.secret(EncryptionLevel::kInitial, Direction::kRead)), server_secret);
  EXPECT_EQ(as_bytes(server.secret(EncryptionLevel::kInitial, Direction::kWrite)), server_secret);
  EXPECT_EQ(as_bytes(server.secret(EncryptionLevel::kInitial, Direction::kRead)), client_secret);
  EXPECT_EQ(client.write_keys(EncryptionLevel::kInitial)->aead().iv(),
            (std::array<uint8_t, 12>{0xfa, 0x04, 0x4b, 0x2f, 0x42, 0xa3, 0xfd, 0x3b, 0x46, 0xfb,
                                     0x25, 0x5c}));

  // What the client seals at Initial, the server opens.
  const Bytes header = from_hex("c300000001088394c8f03e5157080000449e00000002");
  const Bytes payload(64, 0x06);
  Bytes sealed(payload.size() + kAeadTagLength);
  ASSERT_EQ(
      seal(mb, {&client.write_keys(EncryptionLevel::kInitial)->aead(), 2, header, payload, sealed}),
      PacketStatus::kOk);
  const ReadKeySelection selection = server.select_read_key(EncryptionLevel::kInitial, false, 2, 0);
  ASSERT_NE(selection.key, nullptr);
  Bytes opened(payload.size());
  EXPECT_EQ(open(mb, {selection.key, 2, header, sealed, opened}), PacketStatus::kOk);
  EXPECT_EQ(opened, payload);
}

// The same AEAD key, IV and header protection key schedule.
bool same_keys(const AeadKey& a, const HeaderProtectionKey& a_hp, const AeadKey& b,
               const HeaderProtectionKey& b_hp) {
  return a.installed() && b.installed() && a.iv() == b.iv() &&
         std::memcmp(&a.gcm(), &b.gcm(), sizeof(gcm_key_data)) == 0 && a_hp.installed() &&
         std::memcmp(a_hp.schedule(), b_hp.schedule(), 15 * 16) == 0;
}

bool same_initial_read_keys(ConnectionKeys& a, ConnectionKeys& b) {
  return same_keys(*a.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key,
                   *a.read_header_protection(EncryptionLevel::kInitial),
                   *b.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key,
                   *b.read_header_protection(EncryptionLevel::kInitial));
}

TEST(ConnectionKeys, InitialKeysDerivedBeforeTheConnectionMoveInUnchanged) {
  MbManager mb;
  InitialKeys derived;
  ASSERT_TRUE(derived.derive(mb, wire::kVersion1, kDcid));
  EXPECT_EQ(derived.client.aead().iv(),
            (std::array<uint8_t, 12>{0xfa, 0x04, 0x4b, 0x2f, 0x42, 0xa3, 0xfd, 0x3b, 0x46, 0xfb,
                                     0x25, 0x5c}));  // RFC 9001 A.1, the client's
  ConnectionKeys server(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(server.install_initial_keys(derived));
  EXPECT_FALSE(derived.client.installed());  // moved out and wiped
  EXPECT_TRUE(all_zero(&derived.client.aead().gcm(), sizeof(gcm_key_data)));

  ConnectionKeys reference(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(reference.install_initial_keys(kDcid));
  EXPECT_TRUE(same_initial_read_keys(server, reference));
  const PacketKeys& write = *server.write_keys(EncryptionLevel::kInitial);
  const PacketKeys& reference_write = *reference.write_keys(EncryptionLevel::kInitial);
  EXPECT_TRUE(same_keys(write.aead(), write.header_protection(), reference_write.aead(),
                        reference_write.header_protection()));
  for (Direction direction : {Direction::kRead, Direction::kWrite}) {
    const auto secret = server.secret(EncryptionLevel::kInitial, direction);
    const auto expected = reference.secret(EncryptionLevel::kInitial, direction);
    EXPECT_TRUE(std::equal(secret.begin(), secret.end(), expected.begin(), expected.end()));
  }

  // Keys of another version install nothing and stay where they are.
  InitialKeys other;
  ASSERT_TRUE(other.derive(mb, wire::kVersion2, kDcid));
  ConnectionKeys v1(mb, wire::Role::kServer, wire::kVersion1);
  EXPECT_FALSE(v1.install_initial_keys(other));
  EXPECT_FALSE(v1.has_keys(EncryptionLevel::kInitial, Direction::kRead));
  EXPECT_TRUE(other.client.installed());
  EXPECT_FALSE(v1.install_initial_keys(derived));  // nothing left in it
  EXPECT_FALSE(derived.derive(mb, 0x1a2a3a4a, kDcid));
  EXPECT_FALSE(derived.client.installed());
}

TEST(ConnectionKeys, VersionSwitchKeepsTheInstalledReadKeysAsTheOriginalVersions) {
  MbManager mb;
  ConnectionKeys server(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(server.install_initial_keys(kDcid));
  ASSERT_TRUE(server.switch_initial_version(wire::kVersion2, kDcid));

  ConnectionKeys v1(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(v1.install_initial_keys(kDcid));
  const PacketKeys* original = server.original_initial_read_keys();
  ASSERT_NE(original, nullptr);
  EXPECT_TRUE(same_keys(original->aead(), original->header_protection(),
                        *v1.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key,
                        *v1.read_header_protection(EncryptionLevel::kInitial)));
  ConnectionKeys v2(mb, wire::Role::kServer, wire::kVersion2);
  ASSERT_TRUE(v2.install_initial_keys(kDcid));
  EXPECT_TRUE(same_initial_read_keys(server, v2));

  // Back to the first version (the client did not follow): the second
  // version's read keys are the original ones now, and v1's are installed.
  ASSERT_TRUE(server.switch_initial_version(wire::kVersion1, kDcid));
  EXPECT_TRUE(same_initial_read_keys(server, v1));
  original = server.original_initial_read_keys();
  ASSERT_NE(original, nullptr);
  EXPECT_TRUE(same_keys(original->aead(), original->header_protection(),
                        *v2.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key,
                        *v2.read_header_protection(EncryptionLevel::kInitial)));
}

TEST(ConnectionKeys, DiscardWipesSecretsAndKeys) {
  MbManager mb;
  ConnectionKeys client(mb, wire::Role::kClient, wire::kVersion2);
  ASSERT_TRUE(client.install_initial_keys(kDcid));
  ASSERT_TRUE(client.install_secret(EncryptionLevel::kHandshake, Direction::kRead,
                                    CipherSuite::kAes256Gcm, Bytes(48, 7)));
  const PacketKeys* write = client.write_keys(EncryptionLevel::kInitial);
  const HeaderProtectionKey* read_hp = client.read_header_protection(EncryptionLevel::kInitial);
  const std::span<const uint8_t> secret =
      client.secret(EncryptionLevel::kInitial, Direction::kWrite);
  ASSERT_NE(write, nullptr);
  ASSERT_NE(read_hp, nullptr);
  ASSERT_EQ(secret.size(), 32u);
  ASSERT_FALSE(all_zero(secret.data(), secret.size()));
  ASSERT_FALSE(all_zero(&write->aead().gcm(), sizeof(gcm_key_data)));

  client.discard(EncryptionLevel::kInitial);
  EXPECT_FALSE(client.has_keys(EncryptionLevel::kInitial, Direction::kRead));
  EXPECT_FALSE(client.has_keys(EncryptionLevel::kInitial, Direction::kWrite));
  EXPECT_EQ(client.write_keys(EncryptionLevel::kInitial), nullptr);
  EXPECT_EQ(client.read_header_protection(EncryptionLevel::kInitial), nullptr);
  EXPECT_EQ(client.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key, nullptr);
  EXPECT_TRUE(client.secret(EncryptionLevel::kInitial, Direction::kWrite).empty());
  // The storage itself is zeroed, not just marked unused.
  EXPECT_TRUE(all_zero(secret.data(), kMaxSecretLength));
  EXPECT_TRUE(all_zero(&write->aead().gcm(), sizeof(gcm_key_data)));
  EXPECT_TRUE(all_zero(write->aead().iv().data(), kAeadIvLength));
  EXPECT_TRUE(all_zero(read_hp->schedule(), 15 * 16));
  // Other levels are untouched.
  EXPECT_TRUE(client.has_keys(EncryptionLevel::kHandshake, Direction::kRead));
  EXPECT_FALSE(client.has_keys(EncryptionLevel::kHandshake, Direction::kWrite));
}

TEST(ConnectionKeys, HandshakeLevelStorageLastsUntilTheLastHandshakeLevelIsDiscarded) {
  MbManager mb;
  ConnectionKeys server(mb, wire::Role::kServer, wire::kVersion1);
  EXPECT_FALSE(server.holds_handshake_keys());
  ASSERT_TRUE(server.install_secret(EncryptionLevel::kApplication, Direction::kWrite,
                                    CipherSuite::kAes128Gcm, Bytes(32, 3)));
  EXPECT_FALSE(server.holds_handshake_keys());  // 1-RTT keys live in the object

  ASSERT_TRUE(server.install_initial_keys(kDcid));
  ASSERT_TRUE(server.install_secret(EncryptionLevel::kEarlyData, Direction::kRead,
                                    CipherSuite::kAes128Gcm, Bytes(32, 4)));
  ASSERT_TRUE(server.install_secret(EncryptionLevel::kHandshake, Direction::kWrite,
                                    CipherSuite::kAes128Gcm, Bytes(32, 5)));
  EXPECT_TRUE(server.holds_handshake_keys());
  // Discarding a level that never had keys changes nothing.
  server.discard(EncryptionLevel::kInitial);
  EXPECT_TRUE(server.holds_handshake_keys());
  server.discard(EncryptionLevel::kHandshake);
  EXPECT_TRUE(server.holds_handshake_keys());  // 0-RTT read keys remain
  EXPECT_TRUE(server.has_keys(EncryptionLevel::kEarlyData, Direction::kRead));
  server.discard(EncryptionLevel::kEarlyData);
  EXPECT_FALSE(server.holds_handshake_keys());
  EXPECT_FALSE(server.has_keys(EncryptionLevel::kHandshake, Direction::kWrite));
  EXPECT_EQ(server.write_keys(EncryptionLevel::kHandshake), nullptr);
  EXPECT_EQ(server.read_header_protection(EncryptionLevel::kEarlyData), nullptr);
  EXPECT_EQ(server.select_read_key(EncryptionLevel::kInitial, false, 0, 0).key, nullptr);
  EXPECT_TRUE(server.secret(EncryptionLevel::kHandshake, Direction::kWrite).empty());
  server.discard(EncryptionLevel::kHandshake);  // again, with nothing held
  EXPECT_TRUE(server.has_keys(EncryptionLevel::kApplication, Direction::kWrite));

  // A level can be installed again afterwards (the storage comes back).
  ASSERT_TRUE(server.install_initial_keys(kDcid));
  EXPECT_TRUE(server.holds_handshake_keys());
  EXPECT_NE(server.write_keys(EncryptionLevel::kInitial), nullptr);
}

TEST(ConnectionKeys, OriginalVersionInitialKeysHoldTheStorageUntilDiscarded) {
  MbManager mb;
  ConnectionKeys server(mb, wire::Role::kServer, wire::kVersion1);
  ASSERT_TRUE(server.switch_initial_version(wire::kVersion2, kDcid));
  ASSERT_NE(server.original_initial_read_keys(), nullptr);
  server.discard(EncryptionLevel::kInitial);
  EXPECT_EQ(server.original_initial_read_keys(), nullptr);
  EXPECT_FALSE(server.holds_handshake_keys());

  ASSERT_TRUE(server.switch_initial_version(wire::kVersion2, kDcid));
  ASSERT_TRUE(server.install_secret(EncryptionLevel::kHandshake, Direction::kRead,
                                    CipherSuite::kAes128Gcm, Bytes(32, 6)));
  server.discard(EncryptionLevel::kHandshake);
  server.discard_original_initial_read();
  EXPECT_EQ(server.original_initial_read_keys(), nullptr);
  EXPECT_TRUE(server.holds_handshake_keys());  // the new version's Initial keys
  server.discard(EncryptionLevel::kInitial);
  EXPECT_FALSE(server.holds_handshake_keys());
}

TEST(ConnectionKeys, RejectsBadSecrets) {
  MbManager mb;
  ConnectionKeys keys(mb, wire::Role::kServer, wire::kVersion1);
  EXPECT_FALSE(keys.install_secret(EncryptionLevel::kHandshake, Direction::kRead,
                                   CipherSuite::kAes256Gcm, Bytes(32, 1)));
  EXPECT_FALSE(keys.has_keys(EncryptionLevel::kHandshake, Direction::kRead));
  ConnectionKeys draft(mb, wire::Role::kServer, 0xff00001d);
  EXPECT_FALSE(draft.install_initial_keys(kDcid));
  // No 1-RTT keys: nothing to update.
  EXPECT_FALSE(keys.initiate_key_update());
}

TEST_P(ConnectionKeysTest, ClientInitiatedKeyUpdate) {
  install_application_keys();
  // Before the update: phase 0 both ways.
  const Bytes delayed = send_short(mb_, client_, 10, payload_);
  Received r = receive_short(mb_, server_, send_short(mb_, client_, 11, payload_), 11, 1000);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kCurrent);

  ASSERT_TRUE(client_.initiate_key_update());
  EXPECT_TRUE(client_.write_key_phase());
  EXPECT_FALSE(client_.read_key_phase());
  // No second update before the peer answers.
  EXPECT_FALSE(client_.initiate_key_update());

  // The server sees phase 1, opens with its precomputed next keys and
  // answers: its write side follows.
  r = receive_short(mb_, server_, send_short(mb_, client_, 12, payload_), 12, 2000);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_EQ(r.payload, payload_);
  EXPECT_TRUE(server_.read_key_phase());
  EXPECT_TRUE(server_.write_key_phase());
  EXPECT_TRUE(server_.has_previous_read_key());

  // The client receives the answer in phase 1 and completes its side.
  r = receive_short(mb_, client_, send_short(mb_, server_, 5, payload_), 5, 2100);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_TRUE(client_.read_key_phase());
  EXPECT_EQ(client_.key_phase().read_generation(), 1u);
  EXPECT_EQ(client_.key_phase().write_generation(), 1u);
  EXPECT_EQ(server_.key_phase().write_generation(), 1u);

  // The delayed phase-0 packet still opens with the previous keys until
  // 3 * PTO after the update was received (2000 + 300)...
  r = receive_short(mb_, server_, delayed, 10, 2299);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kPrevious);
  // ...and not after: the previous keys are gone and a phase-0 packet now
  // means the generation after next, which these bytes do not open with.
  r = receive_short(mb_, server_, delayed, 10, 2300);
  EXPECT_FALSE(server_.has_previous_read_key());
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_EQ(r.status, PacketStatus::kAuthenticationFailed);
  // Key update state did not move on that failure.
  EXPECT_EQ(server_.key_phase().read_generation(), 1u);

  // Traffic continues in phase 1 both ways, and once the server has
  // acknowledged the packet that started the update (in a packet under its
  // new keys), a second update works.
  EXPECT_EQ(receive_short(mb_, server_, send_short(mb_, client_, 13, payload_), 13, 2400).status,
            PacketStatus::kOk);
  server_.on_ack_sent(13);
  ASSERT_TRUE(client_.initiate_key_update());
  r = receive_short(mb_, server_, send_short(mb_, client_, 14, payload_), 14, 2500);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_EQ(server_.key_phase().read_generation(), 2u);
  EXPECT_FALSE(server_.write_key_phase());
}

TEST_P(ConnectionKeysTest, ServerInitiatedKeyUpdate) {
  install_application_keys(wire::kVersion2);
  ASSERT_TRUE(server_.initiate_key_update());
  Received r = receive_short(mb_, client_, send_short(mb_, server_, 1, payload_), 1, 50);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  // The client answered by updating its write keys.
  EXPECT_TRUE(client_.write_key_phase());
  r = receive_short(mb_, server_, send_short(mb_, client_, 1, payload_), 1, 60);
  ASSERT_EQ(r.status, PacketStatus::kOk);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_FALSE(server_.key_phase().update_pending());
}

// A packet whose key phase bit says "current" but that was sealed with the
// next generation (or the reverse) does not open, and nothing changes.
TEST_P(ConnectionKeysTest, WrongKeyPhaseIsRejected) {
  install_application_keys();
  Bytes packet = send_short(mb_, client_, 3, payload_);
  // Flip the (protected) key phase bit: the header no longer authenticates
  // under either key.
  packet[0] ^= 0x04;
  const Received r = receive_short(mb_, server_, packet, 3, 0);
  EXPECT_EQ(r.generation, KeyGeneration::kNext);
  EXPECT_EQ(r.status, PacketStatus::kAuthenticationFailed);
  EXPECT_FALSE(server_.read_key_phase());
  EXPECT_FALSE(server_.write_key_phase());
}

TEST_P(ConnectionKeysTest, DiscardApplicationWipesUpdateState) {
  install_application_keys();
  ASSERT_TRUE(client_.initiate_key_update());
  ASSERT_EQ(receive_short(mb_, server_, send_short(mb_, client_, 1, payload_), 1, 0).status,
            PacketStatus::kOk);
  ASSERT_TRUE(server_.has_previous_read_key());
  server_.discard(EncryptionLevel::kApplication);
  EXPECT_FALSE(server_.has_previous_read_key());
  EXPECT_FALSE(server_.read_key_phase());
  EXPECT_EQ(server_.select_read_key(EncryptionLevel::kApplication, true, 2, 0).key, nullptr);
}

// RFC 9001 §6.4: packets with higher numbers carry the same or newer keys. A
// packet that opens with the next keys but has a lower number than one
// already opened with the current keys is a KEY_UPDATE_ERROR, and nothing is
// committed.
TEST_P(ConnectionKeysTest, NextKeysBelowACurrentPacketIsKeyUpdateError) {
  install_application_keys();
  ASSERT_EQ(receive_short(mb_, server_, send_short(mb_, client_, 10, payload_), 10, 0).status,
            PacketStatus::kOk);
  ASSERT_EQ(receive_short(mb_, server_, send_short(mb_, client_, 20, payload_), 20, 0).status,
            PacketStatus::kOk);
  ASSERT_TRUE(client_.initiate_key_update());
  // Packet 15 in the new phase: above the lowest current packet (so it is
  // classified as next and opens) but below packet 20 of the old phase.
  Bytes packet = send_short(mb_, client_, 15, payload_);
  const HeaderProtectionKey* hp = server_.read_header_protection(EncryptionLevel::kApplication);
  HeaderProtectionMask mask;
  ASSERT_TRUE(compute_mask(mb_, *hp, packet.data() + sample_offset(5), mask));
  ASSERT_EQ(remove_header_protection(packet, 5, mask), 2u);
  const ReadKeySelection selection =
      server_.select_read_key(EncryptionLevel::kApplication, true, 15, 0);
  ASSERT_EQ(selection.generation, KeyGeneration::kNext);
  const std::span<uint8_t> body = std::span(packet).subspan(kShortHeaderLength);
  ASSERT_EQ(open(mb_, {selection.key, 15, std::span(packet).first(kShortHeaderLength), body,
                       body.first(body.size() - kAeadTagLength)}),
            PacketStatus::kOk);
  EXPECT_FALSE(server_.key_update_error());
  EXPECT_FALSE(
      server_.on_packet_opened(EncryptionLevel::kApplication, KeyGeneration::kNext, 15, 0, kPto));
  EXPECT_TRUE(server_.key_update_error());
  EXPECT_EQ(server_.key_phase().read_generation(), 0u);
  EXPECT_EQ(server_.key_phase().write_generation(), 0u);
  EXPECT_FALSE(server_.has_previous_read_key());
}

// Opens a 1-RTT packet at `keys` and returns what on_packet_opened said
// (the packet must open).
bool open_and_commit(const MbManager& mb, ConnectionKeys& keys, Bytes packet,
                     uint64_t packet_number) {
  const HeaderProtectionKey* hp = keys.read_header_protection(EncryptionLevel::kApplication);
  HeaderProtectionMask mask;
  EXPECT_TRUE(compute_mask(mb, *hp, packet.data() + sample_offset(5), mask));
  EXPECT_EQ(remove_header_protection(packet, 5, mask), 2u);
  const bool key_phase = (packet[0] & 0x04) != 0;
  const ReadKeySelection selection =
      keys.select_read_key(EncryptionLevel::kApplication, key_phase, packet_number, 0);
  const std::span<uint8_t> body = std::span(packet).subspan(kShortHeaderLength);
  EXPECT_EQ(open(mb, {selection.key, packet_number, std::span(packet).first(kShortHeaderLength),
                      body, body.first(body.size() - kAeadTagLength)}),
            PacketStatus::kOk);
  return keys.on_packet_opened(EncryptionLevel::kApplication, selection.generation, packet_number,
                               0, kPto);
}

// The client updates, reads the server's answer (so it may update again by
// its own bookkeeping) and updates once more. `server_acks` says whether the
// server sent an ACK of the first update's packet in between.
void update_twice(const MbManager& mb, ConnectionKeys& client, ConnectionKeys& server,
                  bool server_acks, const Bytes& payload) {
  ASSERT_TRUE(client.initiate_key_update());
  ASSERT_TRUE(open_and_commit(mb, server, send_short(mb, client, 1, payload), 1));
  ASSERT_TRUE(server.key_phase().peer_update_unacknowledged());
  // The server's next packet is under its new keys; with server_acks it
  // carries an ACK of packet 1.
  if (server_acks) server.on_ack_sent(1);
  ASSERT_TRUE(open_and_commit(mb, client, send_short(mb, server, 1, payload), 1));
  ASSERT_TRUE(client.initiate_key_update());
}

// RFC 9001 §6.2: a second update from the peer before we acknowledged the
// packet that started its first is KEY_UPDATE_ERROR, and nothing is
// committed: a peer flipping the phase on every packet would otherwise
// make us derive new keys for each.
TEST_P(ConnectionKeysTest, ConsecutivePeerUpdatesAreKeyUpdateError) {
  install_application_keys();
  ASSERT_NO_FATAL_FAILURE(update_twice(mb_, client_, server_, false, payload_));
  EXPECT_FALSE(open_and_commit(mb_, server_, send_short(mb_, client_, 2, payload_), 2));
  EXPECT_TRUE(server_.key_update_error());
  EXPECT_EQ(server_.key_phase().read_generation(), 1u);
  EXPECT_EQ(server_.key_phase().write_generation(), 1u);
}

TEST_P(ConnectionKeysTest, PeerUpdateAfterOurAcknowledgmentIsAccepted) {
  install_application_keys();
  ASSERT_NO_FATAL_FAILURE(update_twice(mb_, client_, server_, true, payload_));
  EXPECT_TRUE(open_and_commit(mb_, server_, send_short(mb_, client_, 2, payload_), 2));
  EXPECT_FALSE(server_.key_update_error());
  EXPECT_EQ(server_.key_phase().read_generation(), 2u);
  EXPECT_EQ(server_.key_phase().write_generation(), 2u);
}

// An ACK below the packet that started the update does not acknowledge it;
// and an update of ours that the peer answers is not one of the peer's.
TEST_P(ConnectionKeysTest, OnlyAnAckReachingTheUpdateCountsAndAnswersAreNotUpdates) {
  install_application_keys();
  ASSERT_TRUE(client_.initiate_key_update());
  ASSERT_TRUE(open_and_commit(mb_, server_, send_short(mb_, client_, 5, payload_), 5));
  server_.on_ack_sent(4);
  EXPECT_TRUE(server_.key_phase().peer_update_unacknowledged());
  server_.on_ack_sent(6);
  EXPECT_FALSE(server_.key_phase().peer_update_unacknowledged());
  ASSERT_TRUE(open_and_commit(mb_, client_, send_short(mb_, server_, 1, payload_), 1));
  // The server starts one; the client's answer is no consecutive update.
  ASSERT_TRUE(server_.initiate_key_update());
  ASSERT_TRUE(open_and_commit(mb_, client_, send_short(mb_, server_, 2, payload_), 2));
  EXPECT_TRUE(open_and_commit(mb_, server_, send_short(mb_, client_, 6, payload_), 6));
  EXPECT_FALSE(server_.key_update_error());
  EXPECT_FALSE(server_.key_phase().peer_update_unacknowledged());
}

// A PTO so large that now + 3 * PTO overflows keeps the previous keys
// rather than wrapping their expiry into the past.
TEST_P(ConnectionKeysTest, PreviousKeyExpirySaturates) {
  install_application_keys();
  ASSERT_TRUE(client_.initiate_key_update());
  Bytes packet = send_short(mb_, client_, 1, payload_);
  const HeaderProtectionKey* hp = server_.read_header_protection(EncryptionLevel::kApplication);
  HeaderProtectionMask mask;
  ASSERT_TRUE(compute_mask(mb_, *hp, packet.data() + sample_offset(5), mask));
  ASSERT_EQ(remove_header_protection(packet, 5, mask), 2u);
  const ReadKeySelection selection =
      server_.select_read_key(EncryptionLevel::kApplication, true, 1, 1000);
  const std::span<uint8_t> body = std::span(packet).subspan(kShortHeaderLength);
  ASSERT_EQ(open(mb_, {selection.key, 1, std::span(packet).first(kShortHeaderLength), body,
                       body.first(body.size() - kAeadTagLength)}),
            PacketStatus::kOk);
  ASSERT_TRUE(server_.on_packet_opened(EncryptionLevel::kApplication, selection.generation, 1, 1000,
                                       UINT64_MAX / 3 + 1));
  server_.discard_expired_keys(5000);
  EXPECT_TRUE(server_.has_previous_read_key());
  server_.discard_expired_keys(UINT64_MAX);
  EXPECT_FALSE(server_.has_previous_read_key());
}

// RFC 9001 §6.6: failed opens are counted across the connection against the
// smallest integrity limit of the suites in use.
TEST(ConnectionKeys, IntegrityLimitCountsFailures) {
  EXPECT_EQ(aead_confidentiality_limit(CipherSuite::kAes128Gcm), uint64_t{1} << 23);
  EXPECT_EQ(aead_confidentiality_limit(CipherSuite::kAes256Gcm), uint64_t{1} << 23);
  EXPECT_EQ(aead_integrity_limit(CipherSuite::kAes128Gcm), uint64_t{1} << 52);
  EXPECT_EQ(aead_integrity_limit(CipherSuite::kChaCha20Poly1305), uint64_t{1} << 36);
  MbManager mb;
  ConnectionKeys keys(mb, wire::Role::kServer, wire::kVersion1);
  EXPECT_TRUE(keys.on_authentication_failure(CipherSuite::kAes128Gcm));
  EXPECT_TRUE(keys.on_authentication_failure(CipherSuite::kChaCha20Poly1305));
  EXPECT_EQ(keys.authentication_failures(), 2u);
}

INSTANTIATE_TEST_SUITE_P(AllSuites, ConnectionKeysTest,
                         ::testing::Values(CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm,
                                           CipherSuite::kChaCha20Poly1305));

}  // namespace
}  // namespace dpquic::crypto
