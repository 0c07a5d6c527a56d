#pragma once
// Pacing (RFC 9002 §7.7): a token bucket that spreads a congestion window
// over a smoothed RTT, so bursts stay short. The burst builder asks how many
// datagrams it may write now and, when the answer is zero, when to come back.
//
// Rate = gain * cwnd / smoothed_rtt with gain = 5/4 (the N = 1.25 that §7.7
// suggests, so pacing itself does not keep the window from filling).
//
// Tokens are counted in datagrams as 16.48 fixed point, the rate in
// datagrams per nanosecond with 48 fractional bits: 100 Gbps of 1500-byte
// datagrams is ~2^42 per ns, and 2^-48 datagrams per ns is ~3.6e-6 per
// second, so rates from ~1 byte/s to far beyond 100 Gbps fit in 64 bits.
// update() recomputes the rate with a 128-bit division, only when cwnd,
// srtt or max_datagram_size changed. Per call, datagrams_allowed() costs one
// 64x64->128 multiply, on_datagram_sent() one multiply by a precomputed
// reciprocal (a full-size datagram costs exactly one token for any size
// below 64 KiB), and
// next_send_time() divides only when the sender is blocked.
//
// Bucket capacity: the tokens of kBurstInterval = 1 ms at the pacing rate,
// clamped to [2, 64] datagrams. 1 ms is Linux's TSO autosizing horizon
// (pacing rate >> 10): long enough that a fast sender amortizes its
// per-burst costs over many datagrams, short enough to stay well under an
// RTT. At least 2 so slow paths still send ACK-clocked pairs; at most 64,
// one large GSO/TSO batch, keeping a 100 Gbps burst to ~8 us of line time.
// The first update() also allows one initial-window burst (up to 64
// datagrams), which §7.7 permits, so a connection without an RTT sample yet
// is not throttled by the 333 ms initial RTT.

#include <cstddef>
#include <cstdint>

#include "quic/time.h"

namespace dpquic::recovery {

class Pacer {
 public:
  static constexpr uint64_t kGainNumerator = 5;
  static constexpr uint64_t kGainDenominator = 4;
  static constexpr Duration kBurstInterval = 1 * kMillisecond;
  static constexpr size_t kMinBurstDatagrams = 2;
  static constexpr size_t kMaxBurstDatagrams = 64;
  static constexpr unsigned kFractionBits = 48;
  static constexpr int64_t kOneDatagram = int64_t{1} << kFractionBits;

  // Unconfigured: a zero rate and two datagrams of tokens, each send
  // costing one. Call update() before pacing anything.
  Pacer() = default;

  // New pacing inputs. Cheap when nothing changed; otherwise recomputes the
  // rate and capacity (tokens above the new capacity are dropped). Tokens
  // accrue at the rate in force when datagrams_allowed() next refills, so a
  // caller that wants the old rate to cover the time up to now refills first.
  void update(uint64_t congestion_window, Duration smoothed_rtt, uint64_t max_datagram_size);
  // The same with the rate given, in bytes per second, by a congestion
  // controller that sets its own (BBR); the window still sizes the first
  // burst.
  void update_rate(uint64_t bytes_per_second, uint64_t congestion_window,
                   uint64_t max_datagram_size);

  // Refills the bucket up to `now` and returns the whole datagrams it holds.
  size_t datagrams_allowed(Instant now);

  // Charges a sent datagram (or a burst's total bytes) against the bucket.
  // Sending beyond the tokens is allowed and repaid from later refills; the
  // debt is capped at one bucket.
  void on_datagram_sent(uint64_t bytes);

  // `now` if a datagram may go now, else when the tokens for one will have
  // accrued; kNever at a zero rate.
  Instant next_send_time(Instant now) const;

  bool configured() const { return configured_; }
  // Datagrams per nanosecond, 48 fractional bits.
  uint64_t rate() const { return rate_; }
  uint64_t rate_bytes_per_second() const;
  size_t burst_capacity() const { return static_cast<size_t>(capacity_ >> kFractionBits); }
  // Fractional tokens as of the last refill (16.48 fixed point, may be
  // negative while in debt).
  int64_t tokens() const { return tokens_; }

 private:
  void refill(Instant now);
  // Takes `rate` (datagrams per ns, 48 fractional bits) and sizes the bucket.
  void apply(uint64_t rate, uint64_t congestion_window, uint64_t max_datagram_size);

  bool configured_ = false;
  uint64_t congestion_window_ = 0;
  Duration smoothed_rtt_ = 0;
  uint64_t max_datagram_size_ = 0;
  uint64_t given_rate_ = 0;  // bytes per second from update_rate(); 0: update()

  uint64_t rate_ = 0;
  // ceil(2^64 / max_datagram_size): bytes * this >> 16 is bytes in tokens.
  unsigned __int128 token_cost_per_byte_ = 0;
  int64_t capacity_ = static_cast<int64_t>(kMinBurstDatagrams) << kFractionBits;
  int64_t tokens_ = capacity_;
  Instant last_refill_ = 0;
  bool refilled_once_ = false;
};

}  // namespace dpquic::recovery
