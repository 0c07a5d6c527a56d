#pragma once
// When to answer a client Initial with Retry (RFC 9000 §8.1.2).
//
// A Retry costs the client a round trip but lets the server keep no state
// until the client has proven it receives packets at its address. kAuto
// turns it on only under pressure: half-open connections holding a share of
// this core's pool, a high rate of new ones, a full pool, or a source prefix
// holding its bound of unvalidated half-open connections. The share scales
// with the pool, so Retry turns on before Initials from spoofed sources,
// each holding a slot until the handshake timeout, can fill it. Once on, it
// stays on until no pressure was seen for `hold`: otherwise, when a flood's
// half-open connections expire together, the next burst of spoofed Initials
// would get full handshakes again, one pool share at a time.

#include <cstddef>
#include <cstdint>

#include "quic/time.h"

namespace dpquic::endpoint {

enum class RetryMode : uint8_t { kNever, kAlways, kAuto };

struct RetryPolicyConfig {
  RetryMode mode = RetryMode::kAuto;
  // Connections in handshake on this core; 0: a quarter of the pool.
  size_t half_open_threshold = 0;
  uint64_t handshake_rate_threshold = 5000;  // new connections per second on this core
  // kAuto keeps retrying this long after it last saw pressure.
  Duration hold = 10 * kSecond;
};

// What the endpoint knows of its state when an Initial without a valid
// token arrives.
struct RetryPressure {
  size_t half_open = 0;      // this core's connections not yet established
  bool pool_full = false;    // no free connection slot
  bool prefix_full = false;  // the source prefix holds its bound (HalfOpenList)
};

class RetryPolicy {
 public:
  // `pool_size`: the core's connection slots, which a zero
  // half_open_threshold is a quarter of (at least 1).
  RetryPolicy(RetryPolicyConfig config, size_t pool_size);

  // Called for each Initial without a valid token. True: send Retry (no
  // state is kept). kAuto retries when the pool is full, the prefix is at
  // its bound, half_open >= half_open_threshold(), or the accepted rate
  // (handshake_rate()) >= handshake_rate_threshold, and for `hold` after
  // any of these but the prefix's was last true.
  bool should_retry(Instant now, const RetryPressure& pressure);
  // Whether half-open connections hold the share that turns Retry on: while
  // they do, unvalidated ones expire early.
  bool crowded(size_t half_open) const { return half_open >= half_open_threshold_; }
  size_t half_open_threshold() const { return half_open_threshold_; }
  // Counts a new connection into the rate.
  void on_connection_accepted(Instant now);
  // The last decision, for counters.
  bool retrying() const { return retrying_; }

  // Connections accepted per second at `now`: a sliding one-second window,
  // estimated from the current and previous whole seconds (the previous one
  // weighted by how much of it the window still covers).
  uint64_t handshake_rate(Instant now) const;

  const RetryPolicyConfig& config() const { return config_; }

 private:
  // Moves the window so that `now` falls in the current second.
  void advance(Instant now);

  RetryPolicyConfig config_;
  size_t half_open_threshold_;
  bool started_ = false;      // false until the first call with a time
  Instant window_start_ = 0;  // start of the current second
  uint64_t current_count_ = 0;
  uint64_t previous_count_ = 0;
  bool retrying_ = false;
  Instant pressure_seen_ = 0;  // when kAuto last saw pressure
  bool pressure_ever_ = false;
};

}  // namespace dpquic::endpoint
