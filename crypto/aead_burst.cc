#include "crypto/aead_burst.h"

#include <openssl/mem.h>

#include <cstring>

#include "crypto/aead_job.h"
#include "quic/hot_path.h"

namespace dpquic::crypto {
namespace {

using detail::fill_seal_message;
using detail::Message;
using detail::run_chunked;
using detail::run_jobs;
using detail::same_or_disjoint;
using detail::Tag;
using detail::valid_key;
using detail::valid_seal;

bool valid_open(const AeadKey* key, std::span<const uint8_t> ciphertext, std::span<uint8_t> out) {
  if (!valid_key(key) || ciphertext.size() < kAeadTagLength) return false;
  const size_t length = ciphertext.size() - kAeadTagLength;
  // The tag is compared after decryption, so the output must not overlap it
  // either.
  return out.size() >= length &&
         same_or_disjoint(ciphertext.data(), ciphertext.size(), out.data(), length);
}

// An open decrypts all but the tag of `ciphertext` into `out`; ipsec-mb
// writes the tag it computes to `computed`, for finish_open to compare.
void fill_open_message(Message& message, const AeadKey* key, const uint8_t* nonce,
                       std::span<const uint8_t> aad, std::span<const uint8_t> ciphertext,
                       uint8_t* out, Tag& computed) {
  detail::fill_message(message, key, nonce, aad, ciphertext.data(), out,
                       ciphertext.size() - kAeadTagLength, computed.data());
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
    fill_seal_message(messages[i], op.key, nonces[i].data(), op.header, op.plaintext,
                      op.out.data());
  }
  size_t sealed = 0;
  run_jobs(mb, {messages, ops.size()}, {submit, ops.size()}, IMB_DIR_ENCRYPT,
           [&](size_t index, bool ok) {
             status[index] = ok ? PacketStatus::kOk : PacketStatus::kEngineError;
             sealed += ok;
           });
  return sealed;
}

DPQUIC_HOT size_t open_chunk(const MbManager& mb, std::span<const OpenOp> ops,
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
    fill_open_message(messages[i], op.key, nonces[i].data(), op.header, op.ciphertext,
                      op.out.data(), computed[i]);
  }
  size_t opened = 0;
  run_jobs(mb, {messages, ops.size()}, {submit, ops.size()}, IMB_DIR_DECRYPT,
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
  Message message;
  fill_seal_message(message, &key, nonce.data(), aad, plaintext, out.data());
  const bool submit = true;
  PacketStatus status = PacketStatus::kEngineError;
  run_jobs(mb, {&message, 1}, {&submit, 1}, IMB_DIR_ENCRYPT,
           [&](size_t, bool ok) { status = ok ? PacketStatus::kOk : PacketStatus::kEngineError; });
  return status;
}

PacketStatus open_with_nonce(const MbManager& mb, const AeadKey& key, const AeadNonce& nonce,
                             std::span<const uint8_t> aad, std::span<const uint8_t> ciphertext,
                             std::span<uint8_t> out) {
  if (!valid_open(&key, ciphertext, out)) return PacketStatus::kInvalidArgument;
  const size_t length = ciphertext.size() - kAeadTagLength;
  Tag computed;
  Message message;
  fill_open_message(message, &key, nonce.data(), aad, ciphertext, out.data(), computed);
  const bool submit = true;
  PacketStatus status = PacketStatus::kEngineError;
  run_jobs(mb, {&message, 1}, {&submit, 1}, IMB_DIR_DECRYPT, [&](size_t, bool ok) {
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
  detail::ProtectTarget targets[kMaxBurst];
  for (size_t i = 0; i < ops.size(); ++i) {
    const ProtectOp& op = ops[i];
    const size_t pn_offset =
        detail::protect_pn_offset(op.keys, op.packet, op.header_length, op.payload.size());
    submit[i] = pn_offset != 0 &&
                valid_seal(&op.keys->aead(), op.payload, op.packet.subspan(op.header_length));
    status[i] = submit[i] ? PacketStatus::kEngineError : PacketStatus::kInvalidArgument;
    if (!submit[i]) continue;
    targets[i] = detail::ProtectTarget{op.keys, op.packet.data(), pn_offset};
    op.keys->aead().nonce(op.packet_number, nonces[i]);
    fill_seal_message(messages[i], &op.keys->aead(), nonces[i].data(),
                      op.packet.first(op.header_length), op.payload,
                      op.packet.data() + op.header_length);
  }
  return detail::seal_and_protect(mb, {messages, ops.size()}, {submit, ops.size()},
                                  {targets, ops.size()}, status);
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

namespace detail {

size_t protect_pn_offset(const PacketKeys* keys, std::span<const uint8_t> packet,
                         size_t header_length, size_t payload_length) {
  // Checked by subtraction: a bogus header_length near SIZE_MAX must not wrap
  // the sum around to packet.size().
  const bool valid = keys != nullptr && keys->installed() && header_length >= 1 &&
                     packet.size() >= kAeadTagLength &&
                     header_length <= packet.size() - kAeadTagLength &&
                     packet.size() - kAeadTagLength - header_length == payload_length;
  if (!valid) return 0;
  const size_t pn_length = size_t{1} + (packet[0] & 0x03);
  if (header_length <= pn_length || !has_sample(packet.size(), header_length - pn_length)) {
    return 0;
  }
  return header_length - pn_length;
}

size_t seal_and_protect(const MbManager& mb, std::span<const Message> messages,
                        std::span<const bool> submit, std::span<const ProtectTarget> targets,
                        std::span<PacketStatus> status) {
  // Header protection is applied as each packet's seal completes, while its
  // header and sample are hot, with ipsec-mb's one-block AES-128 (no job per
  // mask). Measured no slower than a second pass with one ECB job for the
  // whole burst. AES-256 has no one-block helper, so its masks are batched
  // into ECB jobs after the burst, when no AEAD job is left in the queue.
  size_t protected_count = 0;
  MaskRequest deferred[kMaxBurst];
  size_t deferred_index[kMaxBurst];
  size_t deferred_count = 0;
  run_jobs(mb, messages, submit, IMB_DIR_ENCRYPT, [&](size_t index, bool ok) {
    if (!ok) return;
    const ProtectTarget& target = targets[index];
    const HeaderProtectionKey& hp = target.keys->header_protection();
    const uint8_t* sample = target.packet + sample_offset(target.pn_offset);
    if (!has_single_block_mask(hp.suite())) {
      deferred[deferred_count] = MaskRequest{&hp, sample};
      deferred_index[deferred_count++] = index;
      return;
    }
    HeaderProtectionMask mask;
    if (compute_mask(mb, hp, sample, mask)) {
      mask_checked_header(target.packet, target.pn_offset, mask);
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
    const ProtectTarget& target = targets[deferred_index[d]];
    mask_checked_header(target.packet, target.pn_offset, masks[d]);
    status[deferred_index[d]] = PacketStatus::kOk;
    ++protected_count;
  }
  return protected_count;
}

}  // namespace detail

}  // namespace dpquic::crypto
