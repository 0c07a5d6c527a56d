#pragma once
// Internal to //crypto:packet_protection: how aead_burst.cc and
// aead_gather.cc describe, submit and finish ipsec-mb AEAD jobs. Not part of
// the crypto interface; nothing outside crypto/ includes it.

#include <intel-ipsec-mb.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "crypto/aead_burst.h"
#include "crypto/aead_gather.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "crypto/protection_override.h"
#include "crypto/types.h"

namespace dpquic::crypto::detail {

using Tag = std::array<uint8_t, kAeadTagLength>;

// Two buffers are fine to use together if they are the same buffer (in
// place) or do not overlap at all.
inline bool same_or_disjoint(const uint8_t* a, size_t a_length, const uint8_t* b, size_t b_length) {
  const auto a_start = reinterpret_cast<uintptr_t>(a);
  const auto b_start = reinterpret_cast<uintptr_t>(b);
  return a_start == b_start || a_length == 0 || b_length == 0 || a_start + a_length <= b_start ||
         b_start + b_length <= a_start;
}

inline bool valid_key(const AeadKey* key) { return key != nullptr && key->installed(); }

inline bool valid_seal(const AeadKey* key, std::span<const uint8_t> plaintext,
                       std::span<uint8_t> out) {
  // out.size() - tag rather than plaintext.size() + tag: no wrap-around for
  // any span sizes.
  return valid_key(key) && out.size() >= kAeadTagLength &&
         out.size() - kAeadTagLength >= plaintext.size() &&
         same_or_disjoint(plaintext.data(), plaintext.size(), out.data(),
                          plaintext.size() + kAeadTagLength);
}

// Per-job state of a scatter-gather job; must live until the job completes.
union alignas(64) SglContext {
  gcm_context_data gcm;
  chacha20_poly1305_context_data chacha;
};

// What a job needs beyond the op itself, kept alive until it completes.
struct Message {
  const AeadKey* key;
  const uint8_t* nonce;
  const uint8_t* aad;  // associated data: the packet header
  size_t aad_length;
  const uint8_t* in;
  uint8_t* out;
  size_t length;     // bytes to encrypt or decrypt (tag excluded)
  uint8_t* tag_out;  // where ipsec-mb writes the computed tag
  // A gather job (IMB_SGL_ALL) reads and writes `sgl_count` segments instead
  // of in/out; their lengths add up to `length`. Null and 0 otherwise.
  const IMB_SGL_IOV* sgl;
  size_t sgl_count;
  SglContext* sgl_context;
};
// No default member initializers: every burst keeps an array of kMaxBurst
// messages on the stack and fills only the ones it submits, and constructing
// all of them cost a one-packet open more than its job submission.
static_assert(std::is_trivially_default_constructible_v<Message>);

// Fills `message` field by field, in place. A Message returned by value and
// copied into a burst's array compiled to an aggregate assembled on the
// stack and read back in 16-byte loads, each spanning two 8-byte stores the
// CPU cannot forward: two stalls per packet.
inline void fill_message(Message& message, const AeadKey* key, const uint8_t* nonce,
                         std::span<const uint8_t> aad, const uint8_t* in, uint8_t* out,
                         size_t length, uint8_t* tag_out, const IMB_SGL_IOV* sgl = nullptr,
                         size_t sgl_count = 0, SglContext* sgl_context = nullptr) {
  message.key = key;
  message.nonce = nonce;
  message.aad = aad.data();
  message.aad_length = aad.size();
  message.in = in;
  message.out = out;
  message.length = length;
  message.tag_out = tag_out;
  message.sgl = sgl;
  message.sgl_count = sgl_count;
  message.sgl_context = sgl_context;
}

// A seal writes the ciphertext to `out` and the tag right after it.
inline void fill_seal_message(Message& message, const AeadKey* key, const uint8_t* nonce,
                              std::span<const uint8_t> aad, std::span<const uint8_t> plaintext,
                              uint8_t* out) {
  fill_message(message, key, nonce, aad, plaintext.data(), out, plaintext.size(),
               out + plaintext.size());
}

inline void fill_job(IMB_JOB* job, const Message& message, IMB_CIPHER_DIRECTION direction,
                     size_t index) {
  const AeadKey& key = *message.key;
  const bool chacha = key.suite() == CipherSuite::kChaCha20Poly1305;
  const bool gather = message.sgl != nullptr;
  if (chacha) {
    job->cipher_mode = gather ? IMB_CIPHER_CHACHA20_POLY1305_SGL : IMB_CIPHER_CHACHA20_POLY1305;
    job->hash_alg = gather ? IMB_AUTH_CHACHA20_POLY1305_SGL : IMB_AUTH_CHACHA20_POLY1305;
  } else {
    job->cipher_mode = gather ? IMB_CIPHER_GCM_SGL : IMB_CIPHER_GCM;
    job->hash_alg = gather ? IMB_AUTH_GCM_SGL : IMB_AUTH_AES_GMAC;
  }
  job->cipher_direction = direction;
  job->chain_order = direction == IMB_DIR_ENCRYPT ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
  job->enc_keys = key.job_key();
  job->dec_keys = key.job_key();
  job->key_len_in_bytes = aead_key_length(key.suite());
  if (gather) {
    // The whole message in one job: segments in order, tag at the end.
    job->sgl_io_segs = message.sgl;
    job->num_sgl_io_segs = message.sgl_count;
    job->sgl_state = IMB_SGL_ALL;
  } else {
    // ipsec-mb checks for non-null buffers even when the length is zero (an
    // empty Retry tag message).
    job->src = message.in != nullptr ? message.in : message.tag_out;
    job->dst = message.out != nullptr ? message.out : message.tag_out;
  }
  job->cipher_start_src_offset_in_bytes = 0;
  job->msg_len_to_cipher_in_bytes = message.length;
  job->hash_start_src_offset_in_bytes = 0;
  job->msg_len_to_hash_in_bytes = message.length;
  job->iv = message.nonce;
  job->iv_len_in_bytes = kAeadIvLength;
  job->auth_tag_output = message.tag_out;
  job->auth_tag_output_len_in_bytes = kAeadTagLength;
  if (chacha) {
    job->u.CHACHA20_POLY1305.aad = message.aad;
    job->u.CHACHA20_POLY1305.aad_len_in_bytes = message.aad_length;
    job->u.CHACHA20_POLY1305.ctx = gather ? &message.sgl_context->chacha : nullptr;
  } else {
    job->u.GCM.aad = message.aad;
    job->u.GCM.aad_len_in_bytes = message.aad_length;
    job->u.GCM.ctx = gather ? &message.sgl_context->gcm : nullptr;
  }
  job->user_data = reinterpret_cast<void*>(index);
}

// Fuzz targets only: each submitted message through the manager's
// PacketProtectionOverride instead of ipsec-mb, in order.
template <typename Done>
void run_overridden(const PacketProtectionOverride& replacement, std::span<const Message> messages,
                    std::span<const bool> submit, IMB_CIPHER_DIRECTION direction, Done&& done) {
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!submit[i]) continue;
    const Message& message = messages[i];
    AeadNonce nonce;
    std::memcpy(nonce.data(), message.nonce, nonce.size());
    const GatherSegment whole{message.in, message.out, message.length};
    // GatherSegment and IMB_SGL_IOV share one layout (aead_gather.cc).
    const std::span<const GatherSegment> segments =
        message.sgl != nullptr
            ? std::span<const GatherSegment>(reinterpret_cast<const GatherSegment*>(message.sgl),
                                             message.sgl_count)
            : std::span<const GatherSegment>(&whole, 1);
    done(i, replacement.aead(direction == IMB_DIR_ENCRYPT, *message.key, nonce,
                             {message.aad, message.aad_length}, segments, message.tag_out));
  }
}

// Runs up to kMaxBurst messages through the manager. `done(index, ok)` is
// called once per submitted message as its job completes.
template <typename Done>
void run_jobs(const MbManager& mb, std::span<const Message> messages, std::span<const bool> submit,
              IMB_CIPHER_DIRECTION direction, Done&& done) {
  if (const PacketProtectionOverride* replacement = mb.protection_override()) [[unlikely]] {
    run_overridden(*replacement, messages, submit, direction, done);
    return;
  }
  IMB_MGR* manager = mb.get();
  auto drain = [&](IMB_JOB* job, auto next) {
    for (; job != nullptr; job = next()) {
      done(reinterpret_cast<size_t>(job->user_data), job->status == IMB_STATUS_COMPLETED);
    }
  };
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!submit[i]) continue;
    IMB_JOB* job = IMB_GET_NEXT_JOB(manager);
    fill_job(job, messages[i], direction, i);
    // Every field was validated before (keys installed, buffer sizes and
    // overlaps), so the library's per-job argument checks are skipped: they
    // cost as much as the rest of the job API overhead together.
    drain(IMB_SUBMIT_JOB_NOCHECK(manager), [&] { return IMB_GET_COMPLETED_JOB(manager); });
  }
  drain(IMB_FLUSH_JOB(manager), [&] { return IMB_FLUSH_JOB(manager); });
}

// The offset of the packet number in a packet to protect, or 0 if the packet
// cannot be protected: no keys, header_length outside the packet, a payload
// of another size than packet - header - tag, or no room for the header
// protection sample. The packet number is the header's last
// (packet[0] & 3) + 1 bytes.
size_t protect_pn_offset(const PacketKeys* keys, std::span<const uint8_t> packet,
                         size_t header_length, size_t payload_length);

// Where a sealed packet's header protection goes.
struct ProtectTarget {
  const PacketKeys* keys;
  uint8_t* packet;
  size_t pn_offset;
};

// Seals up to kMaxBurst messages, then applies header protection to each
// sealed packet. status[i] becomes kOk for protected packets and kEngineError
// for failed jobs; entries not submitted are left as they are. Returns how
// many packets were protected.
size_t seal_and_protect(const MbManager& mb, std::span<const Message> messages,
                        std::span<const bool> submit, std::span<const ProtectTarget> targets,
                        std::span<PacketStatus> status);

// Splits `ops` into chunks of kMaxBurst and runs `chunk` on each; status.size()
// must be >= ops.size() (otherwise nothing is done and 0 is returned).
template <typename Op, typename Chunk>
size_t run_chunked(const MbManager& mb, std::span<const Op> ops, std::span<PacketStatus> status,
                   Chunk chunk) {
  if (status.size() < ops.size()) return 0;
  size_t succeeded = 0;
  for (size_t start = 0; start < ops.size(); start += kMaxBurst) {
    const size_t count = ops.size() - start < kMaxBurst ? ops.size() - start : kMaxBurst;
    succeeded += chunk(mb, ops.subspan(start, count), status.subspan(start, count));
  }
  return succeeded;
}

}  // namespace dpquic::crypto::detail
