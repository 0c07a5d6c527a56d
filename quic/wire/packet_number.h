// Packet-number truncation and recovery (RFC 9000 §17.1, Appendix A.2/A.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace dpquic::wire {

// Largest packet number a QUIC endpoint may use: 2^62 - 1.
inline constexpr uint64_t kMaxPacketNumber = (uint64_t{1} << 62) - 1;

// Bytes (1 to 4) needed to send `full_pn` so that a receiver that has seen at
// least `largest_acked` recovers it: the encoding must cover twice the number
// of unacknowledged packet numbers. `largest_acked` is empty before any ACK.
// Returns 0 when more than 2^31 packet numbers are unacknowledged, or when
// full_pn does not follow largest_acked: no 4-byte encoding is then safe.
size_t packet_number_length(uint64_t full_pn, std::optional<uint64_t> largest_acked);

// Recovers a full packet number from its `length`-byte (1 to 4) truncated form,
// given the largest packet number processed so far in the space (empty when
// none). Returns empty if `length` is not 1 to 4, `truncated_pn` does not fit in
// it, or the result would exceed kMaxPacketNumber.
std::optional<uint64_t> decode_packet_number(std::optional<uint64_t> largest_pn,
                                             uint64_t truncated_pn, size_t length);

}  // namespace dpquic::wire
