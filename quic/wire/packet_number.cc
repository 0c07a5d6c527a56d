#include "quic/wire/packet_number.h"

#include "quic/hot_path.h"

namespace dpquic::wire {

size_t packet_number_length(uint64_t full_pn, std::optional<uint64_t> largest_acked) {
  if (full_pn > kMaxPacketNumber) return 0;
  if (largest_acked && *largest_acked >= full_pn) return 0;
  const uint64_t unacked = largest_acked ? full_pn - *largest_acked : full_pn + 1;
  // RFC: bytes = ceil((log2(unacked) + 1) / 8), i.e. the smallest k with
  // unacked <= 2^(8k - 1): the window 2^(8k) must span twice the unacked range.
  for (size_t length = 1; length <= 4; ++length) {
    if (unacked <= (uint64_t{1} << (8 * length - 1))) return length;
  }
  return 0;
}

DPQUIC_HOT std::optional<uint64_t> decode_packet_number(std::optional<uint64_t> largest_pn,
                                                        uint64_t truncated_pn, size_t length) {
  if (length < 1 || length > 4) return std::nullopt;
  const uint64_t window = uint64_t{1} << (8 * length);
  if (truncated_pn >= window) return std::nullopt;
  const uint64_t half_window = window / 2;
  const uint64_t expected = largest_pn ? *largest_pn + 1 : 0;
  const uint64_t candidate = (expected & ~(window - 1)) | truncated_pn;
  // The candidate must lie in (expected - half_window, expected + half_window];
  // the extra comparisons keep the arithmetic from wrapping.
  uint64_t full = candidate;
  if (candidate + half_window <= expected && candidate < (uint64_t{1} << 62) - window) {
    full = candidate + window;
  } else if (candidate > expected + half_window && candidate >= window) {
    full = candidate - window;
  }
  if (full > kMaxPacketNumber) return std::nullopt;
  return full;
}

}  // namespace dpquic::wire
