#pragma once
// Time in the sans-IO core. quic/ never reads a clock: the caller passes
// `now` in, as nanoseconds from an epoch of its choosing (a monotonic clock),
// and gets deadlines back in the same unit.

#include <cstdint>

namespace dpquic {

using Instant = uint64_t;   // nanoseconds since the caller's epoch
using Duration = uint64_t;  // nanoseconds

inline constexpr Duration kNanosecond = 1;
inline constexpr Duration kMicrosecond = 1000;
inline constexpr Duration kMillisecond = 1000 * kMicrosecond;
inline constexpr Duration kSecond = 1000 * kMillisecond;

// A deadline that never arrives (no timer armed).
inline constexpr Instant kNever = UINT64_MAX;

}  // namespace dpquic
