#pragma once
// When to answer a client Initial with Retry (RFC 9000 §8.1.2).
//
// A Retry costs the client a round trip but lets the server keep no state
// until the client has proven it receives packets at its address. kAuto
// turns it on only under pressure: many half-open connections on this core,
// or a high rate of new ones.

#include <cstddef>
#include <cstdint>

#include "quic/time.h"

namespace dpquic::endpoint {

enum class RetryMode : uint8_t { kNever, kAlways, kAuto };

struct RetryPolicyConfig {
  RetryMode mode = RetryMode::kAuto;
  size_t half_open_threshold = 1000;         // connections in handshake on this core
  uint64_t handshake_rate_threshold = 5000;  // new connections per second on this core
};

class RetryPolicy {
 public:
  explicit RetryPolicy(RetryPolicyConfig config);

  // Called for each Initial without a valid token; `half_open` = this core's
  // connections not yet established. True: send Retry (no state is kept).
  // kAuto retries when half_open >= half_open_threshold or the accepted rate
  // (handshake_rate()) >= handshake_rate_threshold.
  bool should_retry(Instant now, size_t half_open);
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
  bool started_ = false;      // false until the first call with a time
  Instant window_start_ = 0;  // start of the current second
  uint64_t current_count_ = 0;
  uint64_t previous_count_ = 0;
  bool retrying_ = false;
};

}  // namespace dpquic::endpoint
