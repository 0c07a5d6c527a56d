#include "crypto/aead_gather.h"

#include <intel-ipsec-mb.h>

#include <cstddef>
#include <cstdint>

#include "crypto/aead_job.h"

namespace dpquic::crypto {
namespace {

// The segment list goes to ipsec-mb without a copy: same size and layout.
static_assert(sizeof(GatherSegment) == sizeof(IMB_SGL_IOV));
static_assert(offsetof(GatherSegment, in) == offsetof(IMB_SGL_IOV, in));
static_assert(offsetof(GatherSegment, out) == offsetof(IMB_SGL_IOV, out));
static_assert(offsetof(GatherSegment, length) == offsetof(IMB_SGL_IOV, len));
static_assert(sizeof(GatherSegment::length) == sizeof(IMB_SGL_IOV::len));

// Whether [in, in + length) lies entirely outside the packet.
bool outside(const uint8_t* in, size_t length, std::span<const uint8_t> packet) {
  const auto start = reinterpret_cast<uintptr_t>(in);
  const auto packet_start = reinterpret_cast<uintptr_t>(packet.data());
  return in != nullptr && start <= UINTPTR_MAX - length &&
         (start + length <= packet_start || packet_start + packet.size() <= start);
}

// The segments tile [payload, payload + length) in order, and each reads
// either in place or from outside the packet.
bool valid_segments(std::span<const GatherSegment> segments, const uint8_t* payload, size_t length,
                    std::span<const uint8_t> packet) {
  const uint8_t* next = payload;
  size_t covered = 0;
  for (const GatherSegment& segment : segments) {
    if (segment.length == 0) continue;
    if (segment.out != next || segment.length > length - covered) return false;
    if (segment.in != segment.out && !outside(segment.in, segment.length, packet)) return false;
    next += segment.length;
    covered += segment.length;
  }
  return covered == length;
}

size_t payload_length(const GatherProtectOp& op) {
  // The packet size fixes the payload length; checked by subtraction so a
  // bogus header_length cannot wrap around.
  if (op.packet.size() < kAeadTagLength || op.header_length > op.packet.size() - kAeadTagLength) {
    return 0;
  }
  return op.packet.size() - kAeadTagLength - op.header_length;
}

size_t protect_gather_chunk(const MbManager& mb, std::span<const GatherProtectOp> ops,
                            std::span<PacketStatus> status) {
  AeadNonce nonces[kMaxBurst];
  detail::SglContext contexts[kMaxBurst];
  detail::Message messages[kMaxBurst];
  bool submit[kMaxBurst];
  detail::ProtectTarget targets[kMaxBurst];
  for (size_t i = 0; i < ops.size(); ++i) {
    const GatherProtectOp& op = ops[i];
    const size_t length = payload_length(op);
    const size_t pn_offset =
        detail::protect_pn_offset(op.keys, op.packet, op.header_length, length);
    submit[i] = pn_offset != 0 &&
                valid_segments(op.payload, op.packet.data() + op.header_length, length, op.packet);
    status[i] = submit[i] ? PacketStatus::kEngineError : PacketStatus::kInvalidArgument;
    if (!submit[i]) continue;
    targets[i] = detail::ProtectTarget{op.keys, op.packet.data(), pn_offset};
    op.keys->aead().nonce(op.packet_number, nonces[i]);
    uint8_t* payload = op.packet.data() + op.header_length;
    detail::fill_message(messages[i], &op.keys->aead(), nonces[i].data(),
                         op.packet.first(op.header_length), payload, payload, length,
                         payload + length, reinterpret_cast<const IMB_SGL_IOV*>(op.payload.data()),
                         op.payload.size(), &contexts[i]);
  }
  return detail::seal_and_protect(mb, {messages, ops.size()}, {submit, ops.size()},
                                  {targets, ops.size()}, status);
}

}  // namespace

PacketStatus protect_gather(const MbManager& mb, const GatherProtectOp& op) {
  PacketStatus status;
  protect_gather_chunk(mb, {&op, 1}, {&status, 1});
  return status;
}

size_t protect_gather_burst(const MbManager& mb, std::span<const GatherProtectOp> ops,
                            std::span<PacketStatus> status) {
  return detail::run_chunked(mb, ops, status, protect_gather_chunk);
}

}  // namespace dpquic::crypto
