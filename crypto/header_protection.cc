#include "crypto/header_protection.h"

#include <openssl/chacha.h>
#include <openssl/mem.h>

#include <algorithm>
#include <cstring>

#include "crypto/protection_override.h"
#include "quic/hot_path.h"

namespace dpquic::crypto {
namespace {

constexpr size_t kBlock = kHeaderProtectionSampleLength;

bool is_aes(CipherSuite suite) { return suite != CipherSuite::kChaCha20Poly1305; }

void chacha20_mask(const HeaderProtectionKey& key, const uint8_t* sample,
                   HeaderProtectionMask& mask) {
  const uint32_t counter = uint32_t{sample[0]} | uint32_t{sample[1]} << 8 |
                           uint32_t{sample[2]} << 16 | uint32_t{sample[3]} << 24;
  static constexpr uint8_t kZeros[kHeaderProtectionMaskLength] = {};
  CRYPTO_chacha_20(mask.data(), kZeros, mask.size(), key.schedule(), sample + 4, counter);
}

// Submits one ECB job encrypting `blocks` contiguous 16-byte blocks. Returns
// false if a job handed back as completed had failed.
bool submit_ecb(IMB_MGR* manager, const HeaderProtectionKey& key, const uint8_t* in, uint8_t* out,
                size_t blocks) {
  IMB_JOB* job = IMB_GET_NEXT_JOB(manager);
  job->cipher_mode = IMB_CIPHER_ECB;
  job->cipher_direction = IMB_DIR_ENCRYPT;
  job->chain_order = IMB_ORDER_CIPHER_HASH;
  job->hash_alg = IMB_AUTH_NULL;
  job->enc_keys = key.schedule();
  job->dec_keys = key.schedule();
  job->key_len_in_bytes = aead_key_length(key.suite());
  job->src = in;
  job->dst = out;
  job->cipher_start_src_offset_in_bytes = 0;
  job->msg_len_to_cipher_in_bytes = blocks * kBlock;
  job->iv = nullptr;
  job->iv_len_in_bytes = 0;
  job->user_data = nullptr;
  bool ok = true;
  // All fields are set and checked here; skip the library's argument checks.
  for (IMB_JOB* done = IMB_SUBMIT_JOB_NOCHECK(manager); done != nullptr;
       done = IMB_GET_COMPLETED_JOB(manager)) {
    ok &= done->status == IMB_STATUS_COMPLETED;
  }
  return ok;
}

// Masks for up to kMaxBurst requests.
bool compute_chunk(IMB_MGR* manager, std::span<const MaskRequest> requests,
                   std::span<HeaderProtectionMask> masks) {
  alignas(64) uint8_t samples[kMaxBurst * kBlock];
  alignas(64) uint8_t encrypted[kMaxBurst * kBlock];
  bool any_aes = false;
  bool ok = true;
  size_t group_start = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const HeaderProtectionKey& key = *requests[i].key;
    if (is_aes(key.suite())) {
      std::memcpy(&samples[i * kBlock], requests[i].sample, kBlock);
      any_aes = true;
    } else {
      chacha20_mask(key, requests[i].sample, masks[i]);
    }
    // A group is a run of AES requests under one key; it ends before a
    // request with another key or suite.
    const bool group_ends = i + 1 == requests.size() || requests[i + 1].key != &key;
    if (group_ends) {
      if (is_aes(key.suite())) {
        ok &= submit_ecb(manager, key, &samples[group_start * kBlock],
                         &encrypted[group_start * kBlock], i + 1 - group_start);
      }
      group_start = i + 1;
    }
  }
  if (!any_aes) return true;
  // The queue is flushed so every job is done before the output is read.
  for (IMB_JOB* job = IMB_FLUSH_JOB(manager); job != nullptr; job = IMB_FLUSH_JOB(manager)) {
    ok &= job->status == IMB_STATUS_COMPLETED;
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (is_aes(requests[i].key->suite())) {
      std::memcpy(masks[i].data(), &encrypted[i * kBlock], kHeaderProtectionMaskLength);
    }
  }
  OPENSSL_cleanse(encrypted, requests.size() * kBlock);
  return ok;
}

}  // namespace

bool HeaderProtectionKey::install(const MbManager& mb, CipherSuite suite,
                                  std::span<const uint8_t> key) {
  wipe();
  if (key.size() != aead_key_length(suite)) return false;
  suite_ = suite;
  if (suite == CipherSuite::kChaCha20Poly1305) {
    std::memcpy(schedule_, key.data(), key.size());
  } else {
    // The decryption schedule is never used (the mask is always an
    // encryption) but keyexp writes one.
    alignas(16) uint8_t decryption_schedule[kScheduleLength];
    if (suite == CipherSuite::kAes128Gcm) {
      IMB_AES_KEYEXP_128(mb.get(), key.data(), schedule_, decryption_schedule);
    } else {
      IMB_AES_KEYEXP_256(mb.get(), key.data(), schedule_, decryption_schedule);
    }
    OPENSSL_cleanse(decryption_schedule, sizeof(decryption_schedule));
  }
  installed_ = true;
  return true;
}

void HeaderProtectionKey::move_to(HeaderProtectionKey& to) {
  if (&to == this) return;
  to.wipe();
  std::memcpy(to.schedule_, schedule_, sizeof(schedule_));
  to.suite_ = suite_;
  to.installed_ = installed_;
  wipe();
}

void HeaderProtectionKey::wipe() {
  OPENSSL_cleanse(schedule_, sizeof(schedule_));
  installed_ = false;
}

bool compute_masks(const MbManager& mb, std::span<const MaskRequest> requests,
                   std::span<HeaderProtectionMask> masks) {
  if (masks.size() < requests.size()) return false;
  for (const MaskRequest& request : requests) {
    if (request.key == nullptr || !request.key->installed() || request.sample == nullptr) {
      return false;
    }
  }
  if (const PacketProtectionOverride* replacement = mb.protection_override()) [[unlikely]] {
    for (size_t i = 0; i < requests.size(); ++i) {
      replacement->header_protection_mask(*requests[i].key, requests[i].sample, masks[i]);
    }
    return true;
  }
  bool ok = true;
  for (size_t start = 0; start < requests.size(); start += kMaxBurst) {
    const size_t count = std::min(kMaxBurst, requests.size() - start);
    ok &= compute_chunk(mb.get(), requests.subspan(start, count), masks.subspan(start, count));
  }
  return ok;
}

DPQUIC_HOT bool compute_mask(const MbManager& mb, const HeaderProtectionKey& key,
                             const uint8_t* sample, HeaderProtectionMask& mask) {
  if (!key.installed() || sample == nullptr) return false;
  if (const PacketProtectionOverride* replacement = mb.protection_override()) [[unlikely]] {
    replacement->header_protection_mask(key, sample, mask);
    return true;
  }
  switch (key.suite()) {
    case CipherSuite::kAes128Gcm: {
      // ipsec-mb's one-block AES-128 CFB: out = in XOR AES(iv). With the
      // sample as IV and zeros in, that is AES-ECB(hp_key, sample), without
      // the cost of a job for a single block.
      static constexpr uint8_t kZeros[kHeaderProtectionMaskLength] = {};
      IMB_AES128_CFB_ONE(mb.get(), mask.data(), kZeros, sample, key.schedule(), mask.size());
      return true;
    }
    case CipherSuite::kChaCha20Poly1305: chacha20_mask(key, sample, mask); return true;
    case CipherSuite::kAes256Gcm: break;
  }
  // No one-block helper for AES-256 in ipsec-mb 1.3: a one-block ECB job.
  const MaskRequest request{&key, sample};
  return compute_masks(mb, {&request, 1}, {&mask, 1});
}

bool apply_header_protection(std::span<uint8_t> packet, size_t pn_offset,
                             const HeaderProtectionMask& mask) {
  if (packet.empty()) return false;
  const size_t pn_length = size_t{1} + (packet[0] & 0x03);
  if (pn_offset < 1 || pn_offset > packet.size() || packet.size() - pn_offset < pn_length) {
    return false;
  }
  mask_checked_header(packet.data(), pn_offset, mask);
  return true;
}

size_t remove_header_protection(std::span<uint8_t> packet, size_t pn_offset,
                                const HeaderProtectionMask& mask) {
  if (packet.empty()) return 0;
  const uint8_t first = packet[0] ^ (mask[0] & first_byte_protected_bits(packet[0]));
  const size_t pn_length = size_t{1} + (first & 0x03);
  if (pn_offset < 1 || pn_offset > packet.size() || packet.size() - pn_offset < pn_length) return 0;
  packet[0] = first;
  for (size_t i = 0; i < pn_length; ++i) packet[pn_offset + i] ^= mask[1 + i];
  return pn_length;
}

size_t remove_header_protection_burst(const MbManager& mb, std::span<const HeaderUnprotectOp> ops,
                                      std::span<uint8_t> pn_lengths) {
  if (pn_lengths.size() < ops.size()) return 0;
  size_t succeeded = 0;
  for (size_t start = 0; start < ops.size(); start += kMaxBurst) {
    const size_t count = std::min(kMaxBurst, ops.size() - start);
    MaskRequest requests[kMaxBurst];
    size_t request_index[kMaxBurst];
    size_t request_count = 0;
    for (size_t i = start; i < start + count; ++i) {
      pn_lengths[i] = 0;
      const HeaderUnprotectOp& op = ops[i];
      if (op.key == nullptr || !op.key->installed() || op.pn_offset < 1 ||
          !has_sample(op.packet.size(), op.pn_offset)) {
        continue;
      }
      requests[request_count] = MaskRequest{op.key, op.packet.data() + sample_offset(op.pn_offset)};
      request_index[request_count++] = i;
    }
    HeaderProtectionMask masks[kMaxBurst];
    if (!compute_masks(mb, {requests, request_count}, {masks, request_count})) continue;
    for (size_t r = 0; r < request_count; ++r) {
      const HeaderUnprotectOp& op = ops[request_index[r]];
      const size_t pn_length = remove_header_protection(op.packet, op.pn_offset, masks[r]);
      pn_lengths[request_index[r]] = static_cast<uint8_t>(pn_length);
      succeeded += pn_length != 0;
    }
  }
  return succeeded;
}

}  // namespace dpquic::crypto
