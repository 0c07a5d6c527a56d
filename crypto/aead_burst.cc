#include "crypto/aead_burst.h"

#include <openssl/mem.h>

#include <algorithm>
#include <cstring>

namespace dpquic::crypto {
namespace {

using Tag = std::array<uint8_t, kAeadTagLength>;

// Two buffers are fine to use together if they are the same buffer (in
// place) or do not overlap at all.
bool same_or_disjoint(const uint8_t* a, size_t a_length, const uint8_t* b, size_t b_length) {
  const auto a_start = reinterpret_cast<uintptr_t>(a);
  const auto b_start = reinterpret_cast<uintptr_t>(b);
  return a_start == b_start || a_length == 0 || b_length == 0 || a_start + a_length <= b_start ||
         b_start + b_length <= a_start;
}

bool valid_key(const AeadKey* key) { return key != nullptr && key->installed(); }

bool valid_seal(const AeadKey* key, std::span<const uint8_t> plaintext, std::span<uint8_t> out) {
  // out.size() - tag rather than plaintext.size() + tag: no wrap-around for
  // any span sizes.
  return valid_key(key) && out.size() >= kAeadTagLength &&
         out.size() - kAeadTagLength >= plaintext.size() &&
         same_or_disjoint(plaintext.data(), plaintext.size(), out.data(),
                          plaintext.size() + kAeadTagLength);
}

bool valid_open(const AeadKey* key, std::span<const uint8_t> ciphertext, std::span<uint8_t> out) {
  if (!valid_key(key) || ciphertext.size() < kAeadTagLength) return false;
  const size_t length = ciphertext.size() - kAeadTagLength;
  // The tag is compared after decryption, so the output must not overlap it
  // either.
  return out.size() >= length &&
         same_or_disjoint(ciphertext.data(), ciphertext.size(), out.data(), length);
}

// What a job needs beyond the op itself, kept alive until it completes.
struct Message {
  const AeadKey* key;
  const uint8_t* nonce;
  std::span<const uint8_t> aad;
  const uint8_t* in;
  uint8_t* out;
  size_t length;     // bytes to encrypt or decrypt (tag excluded)
  uint8_t* tag_out;  // where ipsec-mb writes the computed tag
};

// A seal writes the ciphertext to `out` and the tag right after it.
Message seal_message(const AeadKey* key, const uint8_t* nonce, std::span<const uint8_t> aad,
                     std::span<const uint8_t> plaintext, uint8_t* out) {
  return Message{key, nonce, aad, plaintext.data(), out, plaintext.size(), out + plaintext.size()};
}

// An open decrypts all but the tag of `ciphertext` into `out`; ipsec-mb
// writes the tag it computes to `computed`, for finish_open to compare.
Message open_message(const AeadKey* key, const uint8_t* nonce, std::span<const uint8_t> aad,
                     std::span<const uint8_t> ciphertext, uint8_t* out, Tag& computed) {
  return Message{
      key, nonce, aad, ciphertext.data(), out, ciphertext.size() - kAeadTagLength, computed.data()};
}

// Decides an open once its job has finished: the computed tag must match the
// received one (compared in constant time). On any failure the output is
// zeroed, so unauthenticated plaintext never reaches the caller.
PacketStatus finish_open(bool job_ok, const Tag& computed, const uint8_t* received, uint8_t* out,
                         size_t length) {
  PacketStatus status = PacketStatus::kOk;
  if (!job_ok) {
    status = PacketStatus::kEngineError;
  } else if (CRYPTO_memcmp(computed.data(), received, kAeadTagLength) != 0) {
    status = PacketStatus::kAuthenticationFailed;
  }
  if (status != PacketStatus::kOk && length != 0) std::memset(out, 0, length);
  return status;
}

void fill_job(IMB_JOB* job, const Message& message, IMB_CIPHER_DIRECTION direction, size_t index) {
  const AeadKey& key = *message.key;
  const bool chacha = key.suite() == CipherSuite::kChaCha20Poly1305;
  job->cipher_mode = chacha ? IMB_CIPHER_CHACHA20_POLY1305 : IMB_CIPHER_GCM;
  job->hash_alg = chacha ? IMB_AUTH_CHACHA20_POLY1305 : IMB_AUTH_AES_GMAC;
  job->cipher_direction = direction;
  job->chain_order = direction == IMB_DIR_ENCRYPT ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
  job->enc_keys = key.job_key();
  job->dec_keys = key.job_key();
  job->key_len_in_bytes = aead_key_length(key.suite());
  // ipsec-mb checks for non-null buffers even when the length is zero (an
  // empty Retry tag message).
  job->src = message.in != nullptr ? message.in : message.tag_out;
  job->dst = message.out != nullptr ? message.out : message.tag_out;
  job->cipher_start_src_offset_in_bytes = 0;
  job->msg_len_to_cipher_in_bytes = message.length;
  job->hash_start_src_offset_in_bytes = 0;
  job->msg_len_to_hash_in_bytes = message.length;
  job->iv = message.nonce;
  job->iv_len_in_bytes = kAeadIvLength;
  job->auth_tag_output = message.tag_out;
  job->auth_tag_output_len_in_bytes = kAeadTagLength;
  if (chacha) {
    job->u.CHACHA20_POLY1305.aad = message.aad.data();
    job->u.CHACHA20_POLY1305.aad_len_in_bytes = message.aad.size();
    job->u.CHACHA20_POLY1305.ctx = nullptr;
  } else {
    job->u.GCM.aad = message.aad.data();
    job->u.GCM.aad_len_in_bytes = message.aad.size();
    job->u.GCM.ctx = nullptr;
  }
  job->user_data = reinterpret_cast<void*>(index);
}

// Runs up to kMaxBurst messages through the manager. `done(index, ok)` is
// called once per submitted message as its job completes.
template <typename Done>
void run_jobs(IMB_MGR* manager, std::span<const Message> messages, std::span<const bool> submit,
              IMB_CIPHER_DIRECTION direction, Done&& done) {
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

size_t seal_chunk(const MbManager& mb, std::span<const SealOp> ops,
                  std::span<PacketStatus> status) {
  AeadNonce nonces[kMaxBurst];
  Message messages[kMaxBurst];
  bool submit[kMaxBurst];
  for (size_t i = 0; i < ops.size(); ++i) {
    const SealOp& op = ops[i];
    submit[i] = valid_seal(op.key, op.plaintext, op.out);
    status[i] = submit[i] ? PacketStatus::kEngineError : PacketStatus::kInvalidArgument;
    if (!submit[i]) continue;
    op.key->nonce(op.packet_number, nonces[i]);
    messages[i] = seal_message(op.key, nonces[i].data(), op.header, op.plaintext, op.out.data());
  }
  size_t sealed = 0;
  run_jobs(mb.get(), {messages, ops.size()}, {submit, ops.size()}, IMB_DIR_ENCRYPT,
           [&](size_t index, bool ok) {
             status[index] = ok ? PacketStatus::kOk : PacketStatus::kEngineError;
             sealed += ok;
           });
  return sealed;
}

size_t open_chunk(const MbManager& mb, std::span<const OpenOp> ops,
                  std::span<PacketStatus> status) {
  AeadNonce nonces[kMaxBurst];
  Tag computed[kMaxBurst];
  Message messages[kMaxBurst];
  bool submit[kMaxBurst];
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpenOp& op = ops[i];
    submit[i] = valid_open(op.key, op.ciphertext, op.out);
    status[i] = submit[i] ? PacketStatus::kEngineError : PacketStatus::kInvalidArgument;
    if (!submit[i]) continue;
    op.key->nonce(op.packet_number, nonces[i]);
    messages[i] = open_message(op.key, nonces[i].data(), op.header, op.ciphertext, op.out.data(),
                               computed[i]);
  }
  size_t opened = 0;
  run_jobs(mb.get(), {messages, ops.size()}, {submit, ops.size()}, IMB_DIR_DECRYPT,
           [&](size_t index, bool ok) {
             const Message& message = messages[index];
             // The received tag is read from the original ciphertext span; an
             // in-place open only rewrites the bytes before it.
             status[index] =
                 finish_open(ok, computed[index], ops[index].ciphertext.data() + message.length,
                             message.out, message.length);
             opened += status[index] == PacketStatus::kOk;
           });
  return opened;
}

template <typename Op, typename Chunk>
size_t run_chunked(const MbManager& mb, std::span<const Op> ops, std::span<PacketStatus> status,
                   Chunk chunk) {
  if (status.size() < ops.size()) return 0;
  size_t succeeded = 0;
  for (size_t start = 0; start < ops.size(); start += kMaxBurst) {
    const size_t count = std::min(kMaxBurst, ops.size() - start);
    succeeded += chunk(mb, ops.subspan(start, count), status.subspan(start, count));
  }
  return succeeded;
}

}  // namespace

size_t seal_burst(const MbManager& mb, std::span<const SealOp> ops,
                  std::span<PacketStatus> status) {
  return run_chunked(mb, ops, status, seal_chunk);
}

size_t open_burst(const MbManager& mb, std::span<const OpenOp> ops,
                  std::span<PacketStatus> status) {
  return run_chunked(mb, ops, status, open_chunk);
}

PacketStatus seal(const MbManager& mb, const SealOp& op) {
  PacketStatus status;
  seal_chunk(mb, {&op, 1}, {&status, 1});
  return status;
}

PacketStatus open(const MbManager& mb, const OpenOp& op) {
  PacketStatus status;
  open_chunk(mb, {&op, 1}, {&status, 1});
  return status;
}

PacketStatus seal_with_nonce(const MbManager& mb, const AeadKey& key, const AeadNonce& nonce,
                             std::span<const uint8_t> aad, std::span<const uint8_t> plaintext,
                             std::span<uint8_t> out) {
  if (!valid_seal(&key, plaintext, out)) return PacketStatus::kInvalidArgument;
  const Message message = seal_message(&key, nonce.data(), aad, plaintext, out.data());
  const bool submit = true;
  PacketStatus status = PacketStatus::kEngineError;
  run_jobs(mb.get(), {&message, 1}, {&submit, 1}, IMB_DIR_ENCRYPT,
           [&](size_t, bool ok) { status = ok ? PacketStatus::kOk : PacketStatus::kEngineError; });
  return status;
}

PacketStatus open_with_nonce(const MbManager& mb, const AeadKey& key, const AeadNonce& nonce,
                             std::span<const uint8_t> aad, std::span<const uint8_t> ciphertext,
                             std::span<uint8_t> out) {
  if (!valid_open(&key, ciphertext, out)) return PacketStatus::kInvalidArgument;
  const size_t length = ciphertext.size() - kAeadTagLength;
  Tag computed;
  const Message message = open_message(&key, nonce.data(), aad, ciphertext, out.data(), computed);
  const bool submit = true;
  PacketStatus status = PacketStatus::kEngineError;
  run_jobs(mb.get(), {&message, 1}, {&submit, 1}, IMB_DIR_DECRYPT, [&](size_t, bool ok) {
    status = finish_open(ok, computed, ciphertext.data() + length, out.data(), length);
  });
  return status;
}

namespace {

size_t protect_chunk(const MbManager& mb, std::span<const ProtectOp> ops,
                     std::span<PacketStatus> status) {
  AeadNonce nonces[kMaxBurst];
  Message messages[kMaxBurst];
  bool submit[kMaxBurst];
  size_t pn_offsets[kMaxBurst];
  for (size_t i = 0; i < ops.size(); ++i) {
    const ProtectOp& op = ops[i];
    // Checked by subtraction: a bogus header_length near SIZE_MAX must not
    // wrap the sum around to packet.size().
    const bool valid = op.keys != nullptr && op.keys->installed() && op.header_length >= 1 &&
                       op.packet.size() >= kAeadTagLength &&
                       op.header_length <= op.packet.size() - kAeadTagLength &&
                       op.packet.size() - kAeadTagLength - op.header_length == op.payload.size();
    // The packet number is the header's last (first byte & 3) + 1 bytes.
    const size_t pn_length = valid ? size_t{1} + (op.packet[0] & 0x03) : 0;
    const std::span<uint8_t> body = op.packet.subspan(valid ? op.header_length : 0);
    submit[i] = valid && op.header_length > pn_length &&
                has_sample(op.packet.size(), op.header_length - pn_length) &&
                valid_seal(&op.keys->aead(), op.payload, body);
    status[i] = submit[i] ? PacketStatus::kEngineError : PacketStatus::kInvalidArgument;
    if (!submit[i]) continue;
    pn_offsets[i] = op.header_length - pn_length;
    op.keys->aead().nonce(op.packet_number, nonces[i]);
    messages[i] = seal_message(&op.keys->aead(), nonces[i].data(),
                               op.packet.first(op.header_length), op.payload, body.data());
  }

  // Header protection is applied as each packet's seal completes, while its
  // header and sample are hot, with ipsec-mb's one-block AES-128 (no job per
  // mask). Measured no slower than a second pass with one ECB job for the
  // whole burst. AES-256 has no one-block helper, so its masks are batched
  // into ECB jobs after the burst, when no AEAD job is left in the queue.
  size_t protected_count = 0;
  MaskRequest deferred[kMaxBurst];
  size_t deferred_index[kMaxBurst];
  size_t deferred_count = 0;
  run_jobs(mb.get(), {messages, ops.size()}, {submit, ops.size()}, IMB_DIR_ENCRYPT,
           [&](size_t index, bool ok) {
             if (!ok) return;
             const ProtectOp& op = ops[index];
             const HeaderProtectionKey& hp = op.keys->header_protection();
             const uint8_t* sample = op.packet.data() + sample_offset(pn_offsets[index]);
             if (!has_single_block_mask(hp.suite())) {
               deferred[deferred_count] = MaskRequest{&hp, sample};
               deferred_index[deferred_count++] = index;
               return;
             }
             HeaderProtectionMask mask;
             if (compute_mask(mb, hp, sample, mask)) {
               mask_checked_header(op.packet.data(), pn_offsets[index], mask);
               status[index] = PacketStatus::kOk;
               ++protected_count;
             }
           });
  if (deferred_count == 0) return protected_count;
  HeaderProtectionMask masks[kMaxBurst];
  if (!compute_masks(mb, {deferred, deferred_count}, {masks, deferred_count})) {
    return protected_count;
  }
  for (size_t d = 0; d < deferred_count; ++d) {
    const size_t index = deferred_index[d];
    mask_checked_header(ops[index].packet.data(), pn_offsets[index], masks[d]);
    status[index] = PacketStatus::kOk;
    ++protected_count;
  }
  return protected_count;
}

}  // namespace

PacketStatus protect(const MbManager& mb, const ProtectOp& op) {
  PacketStatus status;
  protect_chunk(mb, {&op, 1}, {&status, 1});
  return status;
}

size_t protect_burst(const MbManager& mb, std::span<const ProtectOp> ops,
                     std::span<PacketStatus> status) {
  return run_chunked(mb, ops, status, protect_chunk);
}

}  // namespace dpquic::crypto
