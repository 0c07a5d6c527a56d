#pragma once
// Header protection (RFC 9001 §5.4): a 5-byte mask from a 16-byte sample of
// the protected payload hides the packet number and the low bits of the
// first byte.
//
// AES suites (§5.4.3): mask = AES-ECB(hp_key, sample), on ipsec-mb ECB jobs;
// a burst's consecutive samples under one key share a single job.
// ChaCha20 (§5.4.4): mask = ChaCha20(hp_key, counter = sample[0..4] little-
// endian, nonce = sample[4..16]) applied to zeros. ipsec-mb 1.3 only takes a
// 12-byte IV with the block counter fixed at 1, so it cannot start at the
// sample's counter; these masks come from BoringSSL's CRYPTO_chacha_20.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/mb_manager.h"
#include "crypto/types.h"

namespace dpquic::crypto {

using HeaderProtectionMask = std::array<uint8_t, kHeaderProtectionMaskLength>;

// The header protection key of one direction, with the AES key schedule
// expanded once at install. HP keys survive key updates (RFC 9001 §6).
class HeaderProtectionKey {
 public:
  HeaderProtectionKey() = default;
  ~HeaderProtectionKey() { wipe(); }
  HeaderProtectionKey(const HeaderProtectionKey&) = delete;
  HeaderProtectionKey& operator=(const HeaderProtectionKey&) = delete;

  // `key` is aead_key_length(suite) bytes. Returns false on a wrong length.
  bool install(const MbManager& mb, CipherSuite suite, std::span<const uint8_t> key);
  // Moves this key into `to` and wipes it here.
  void move_to(HeaderProtectionKey& to);
  void wipe();

  bool installed() const { return installed_; }
  CipherSuite suite() const { return suite_; }
  // AES: expanded encryption round keys. ChaCha20: the raw 32-byte key.
  const uint8_t* schedule() const { return schedule_; }

 private:
  // 15 round keys for AES-256 (11 for AES-128); 32 bytes for ChaCha20.
  static constexpr size_t kScheduleLength = 15 * 16;
  alignas(64) uint8_t schedule_[kScheduleLength] = {};
  CipherSuite suite_ = CipherSuite::kAes128Gcm;
  bool installed_ = false;
};

// One mask to compute: `sample` points at 16 readable bytes.
struct MaskRequest {
  const HeaderProtectionKey* key;
  const uint8_t* sample;
};

// Computes masks[i] for requests[i]; masks.size() must be >= requests.size().
// Returns false (masks unspecified) if a key is missing or ipsec-mb fails.
// AES masks go through ECB jobs and a flush of the manager's queue, so this
// is never called while other jobs of `mb` are in flight (every public
// function here finishes its own jobs before returning).
bool compute_masks(const MbManager& mb, std::span<const MaskRequest> requests,
                   std::span<HeaderProtectionMask> masks);

// One mask, computed at once: AES-128 through ipsec-mb's one-block AES
// helper, ChaCha20 through BoringSSL; AES-256 needs a one-block ECB job
// (has_single_block_mask() is false), which costs more.
bool compute_mask(const MbManager& mb, const HeaderProtectionKey& key, const uint8_t* sample,
                  HeaderProtectionMask& mask);
inline bool has_single_block_mask(CipherSuite suite) { return suite != CipherSuite::kAes256Gcm; }

// The sample starts 4 bytes after the start of the Packet Number field,
// whatever the packet number's real length (RFC 9001 §5.4.2).
inline constexpr size_t sample_offset(size_t pn_offset) { return pn_offset + 4; }
// Whether `packet_length` bytes hold a full sample for this pn_offset.
// Written without sums that could wrap for a bogus pn_offset near SIZE_MAX.
inline constexpr bool has_sample(size_t packet_length, size_t pn_offset) {
  return pn_offset <= packet_length &&
         packet_length - pn_offset >= sample_offset(0) + kHeaderProtectionSampleLength;
}

// Long headers (first bit set) protect the first byte's low 4 bits, short
// headers 5 (RFC 9001 §5.4.1).
inline constexpr uint8_t first_byte_protected_bits(uint8_t first_byte) {
  return (first_byte & 0x80) ? 0x0f : 0x1f;
}

// The masking itself, for callers that have already checked that the packet
// holds pn_offset + the packet number length bytes.
inline void mask_checked_header(uint8_t* packet, size_t pn_offset,
                                const HeaderProtectionMask& mask) {
  const size_t pn_length = size_t{1} + (packet[0] & 0x03);
  packet[0] ^= mask[0] & first_byte_protected_bits(packet[0]);
  for (size_t i = 0; i < pn_length; ++i) packet[pn_offset + i] ^= mask[1 + i];
}

// Masks an unprotected header in place: the first byte's low 4 (long header)
// or 5 (short header) bits and the packet number, whose length comes from the
// unprotected first byte. Returns false if the packet is too short.
bool apply_header_protection(std::span<uint8_t> packet, size_t pn_offset,
                             const HeaderProtectionMask& mask);

// Unmasks in place and returns the packet number length (1 to 4), or 0 if
// the packet is too short to hold that packet number.
size_t remove_header_protection(std::span<uint8_t> packet, size_t pn_offset,
                                const HeaderProtectionMask& mask);

// One received packet whose header protection is to be removed in place.
struct HeaderUnprotectOp {
  const HeaderProtectionKey* key = nullptr;
  std::span<uint8_t> packet;
  size_t pn_offset = 0;
};

// Removes header protection from a burst: all masks in one pass, then each
// header. pn_lengths[i] is packet i's packet number length, or 0 if it has no
// full sample or no key (that packet is left untouched). Returns how many
// succeeded; pn_lengths.size() must be >= ops.size().
size_t remove_header_protection_burst(const MbManager& mb, std::span<const HeaderUnprotectOp> ops,
                                      std::span<uint8_t> pn_lengths);

}  // namespace dpquic::crypto
