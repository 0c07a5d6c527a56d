// Proves the packet-protection data path allocates nothing in steady state:
// protecting and unprotecting bursts of packets, with every suite, and
// choosing 1-RTT read keys through ConnectionKeys, are run thousands of times
// inside an allocation-counting window (//tools/testbed:allocation_counter).
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "crypto/aead_burst.h"
#include "crypto/connection_keys.h"
#include "crypto/header_protection.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "quic/wire/version.h"
#include "tools/testbed/allocation_counter.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::AllocationWindow;

constexpr size_t kBurst = 32;
constexpr size_t kHeaderLength = 13;  // short header: flags, 8-byte DCID, 4-byte pn
constexpr size_t kPacketSize = 1200;
constexpr size_t kPayloadLength = kPacketSize - kHeaderLength - kAeadTagLength;
constexpr int kRounds = 300;  // 300 bursts of 32: 9600 packets each way

class ProtectAllocTest : public ::testing::TestWithParam<CipherSuite> {
 protected:
  void SetUp() override {
    const std::vector<uint8_t> secret(secret_length(GetParam()), 0x17);
    ASSERT_TRUE(keys_.derive(mb_, GetParam(), wire::kVersion1, secret));
    for (size_t i = 0; i < kBurst; ++i) {
      packets_[i].assign(kPacketSize, static_cast<uint8_t>(i));
      payloads_[i].assign(kPayloadLength, static_cast<uint8_t>(0xa0 + i));
      packets_[i][0] = 0x43;  // short header, 4-byte packet number
    }
  }

  MbManager mb_;
  PacketKeys keys_;
  std::array<std::vector<uint8_t>, kBurst> packets_;
  std::array<std::vector<uint8_t>, kBurst> payloads_;
};

TEST_P(ProtectAllocTest, ProtectAndUnprotectBurstsAllocateNothing) {
  std::array<ProtectOp, kBurst> protect_ops;
  std::array<HeaderUnprotectOp, kBurst> unprotect_ops;
  std::array<OpenOp, kBurst> open_ops;
  std::array<PacketStatus, kBurst> status;
  std::array<uint8_t, kBurst> pn_lengths;
  size_t protected_count = 0, unprotected_count = 0, opened_count = 0, payload_matches = 0;
  {
    AllocationWindow window;
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < kBurst; ++i) {
        const uint64_t packet_number = static_cast<uint64_t>(round) * kBurst + i;
        std::vector<uint8_t>& packet = packets_[i];
        packet[0] = 0x43;
        for (size_t b = 0; b < 4; ++b) {
          packet[kHeaderLength - 1 - b] = static_cast<uint8_t>(packet_number >> (8 * b));
        }
        protect_ops[i] = ProtectOp{&keys_, packet_number, packet, kHeaderLength, payloads_[i]};
      }
      protected_count += protect_burst(mb_, protect_ops, status);

      for (size_t i = 0; i < kBurst; ++i) {
        unprotect_ops[i] =
            HeaderUnprotectOp{&keys_.header_protection(), packets_[i], kHeaderLength - 4};
      }
      unprotected_count += remove_header_protection_burst(mb_, unprotect_ops, pn_lengths);

      for (size_t i = 0; i < kBurst; ++i) {
        const uint64_t packet_number = static_cast<uint64_t>(round) * kBurst + i;
        std::span<uint8_t> packet = packets_[i];
        open_ops[i] =
            OpenOp{&keys_.aead(), packet_number, packet.first(kHeaderLength),
                   packet.subspan(kHeaderLength), packet.subspan(kHeaderLength, kPayloadLength)};
      }
      opened_count += open_burst(mb_, open_ops, status);
      for (size_t i = 0; i < kBurst; ++i) {
        payload_matches += std::equal(payloads_[i].begin(), payloads_[i].end(),
                                      packets_[i].begin() + kHeaderLength);
      }
    }
    EXPECT_EQ(window.count(), 0u);
  }
  // The loop did the work it claims: every packet sealed, unmasked, opened
  // and decrypted back to its payload.
  EXPECT_EQ(protected_count, kRounds * kBurst);
  EXPECT_EQ(unprotected_count, kRounds * kBurst);
  EXPECT_EQ(opened_count, kRounds * kBurst);
  EXPECT_EQ(payload_matches, kRounds * kBurst);
}

INSTANTIATE_TEST_SUITE_P(AllSuites, ProtectAllocTest,
                         ::testing::Values(CipherSuite::kAes128Gcm, CipherSuite::kAes256Gcm,
                                           CipherSuite::kChaCha20Poly1305));

TEST(ConnectionKeysAllocTest, ReadKeySelectionAllocatesNothing) {
  MbManager mb;
  ConnectionKeys keys(mb, wire::Role::kServer, wire::kVersion1);
  const std::vector<uint8_t> secret(32, 0x5c);
  ASSERT_TRUE(keys.install_secret(EncryptionLevel::kApplication, Direction::kRead,
                                  CipherSuite::kAes128Gcm, secret));
  size_t selected = 0;
  {
    AllocationWindow window;
    for (uint64_t packet_number = 0; packet_number < 10000; ++packet_number) {
      const ReadKeySelection selection = keys.select_read_key(
          EncryptionLevel::kApplication, /*key_phase=*/false, packet_number, packet_number);
      selected += selection.key != nullptr;
      if (selection.key != nullptr) {
        keys.on_packet_opened(EncryptionLevel::kApplication, selection.generation, packet_number,
                              packet_number, /*pto=*/1000);
      }
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(selected, 10000u);
}

}  // namespace
}  // namespace dpquic::crypto
