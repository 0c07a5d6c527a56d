#pragma once
// What every shard runs whatever its I/O: the core's ipsec-mb manager and
// endpoint, the application on top, and the loop (poll_once, run) in the
// endpoint's drain order between input and output. The kernel-UDP shard
// (shard.h) and the DPDK shard (dataplane/dpdk/dpdk_shard.h) differ only in
// how datagrams come in and go out: their ShardIo (shard_io.h). Each
// received datagram goes to foreign_owner(): this core's endpoint takes it,
// or it is handed to the shard that owns it.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "dataplane/app/application.h"
#include "dataplane/shard/credentials.h"
#include "dataplane/shard/handshake_histogram.h"
#include "dataplane/shard/run_phase.h"
#include "dataplane/shard/shard_io.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

// CLOCK_MONOTONIC in nanoseconds: the `now` every shard feeds its endpoint.
Instant monotonic_now();

class ShardCore {
 public:
  // `tls` must outlive the core. config.core_id names this shard among
  // `shard_count`.
  ShardCore(const endpoint::EndpointConfig& config, size_t shard_count, crypto::TlsContext& tls);
  ~ShardCore();
  ShardCore(const ShardCore&) = delete;
  ShardCore& operator=(const ShardCore&) = delete;

  endpoint::Endpoint& endpoint() { return *endpoint_; }
  const endpoint::Endpoint& endpoint() const { return *endpoint_; }
  void set_application(Application* application) { application_ = application; }
  uint8_t core_id() const { return config_.core_id; }
  size_t shard_count() const { return shard_count_; }
  const endpoint::EndpointConfig& config() const { return config_; }

  // The core a datagram belongs to when that is another shard: the DCID of
  // its first packet names it (RFC 9000 §5.2; QUIC-LB core byte). nullopt:
  // this shard handles it (its own, unroutable, or a new client-chosen DCID).
  std::optional<uint8_t> foreign_owner(std::span<const uint8_t> datagram) const;

  // One iteration of the loop over `io` (shard_io.h), without waiting; true
  // when it did any work.
  bool poll_once(ShardIo& io, Instant now);
  // The loop: iterations, idling when nothing happened, until
  // keep_running() says stop; then every connection is dropped.
  void run(ShardIo& io, const std::atomic<RunPhase>& phase, Duration drain_timeout);
  // Counters are published when anything happened, and at least this often.
  static constexpr Duration kPublishInterval = 100 * kMillisecond;

  // Timers when due, then events to the application, then its pump. True
  // when anything happened.
  bool service(Instant now);
  // After a transmit round: transmitting can finish streams and close
  // connections; when it produced events they are dispatched and the
  // application pumped, and the caller transmits once more (returns true).
  bool after_transmit(Instant now);
  // When the shard must run again: the endpoint's deadline, or now when the
  // application has work waiting for buffers.
  Instant next_deadline(Instant now);
  // Closes every connection now: the application with its protocol's
  // code, the rest with NO_ERROR.
  void close_all(Instant now);

  // Acts on the supervisor's phase between loop iterations (run_phase.h)
  // and says whether the loop goes on: a drain begins (connections refused,
  // the application drains) and lasts until no connection is left or
  // `drain_timeout` passed; then, or at kStop, every connection is closed
  // and the closes have kCloseFlush to leave.
  bool keep_running(Instant now, RunPhase phase, Duration drain_timeout);
  static constexpr Duration kCloseFlush = 100 * kMillisecond;
  // While draining, every kDrainSweepInterval: a connection whose peer looks
  // gone (Connection::peer_unresponsive: our packets in flight, nothing
  // back for 3 probe timeouts and at least 1 s; a client that vanished
  // without its CONNECTION_CLOSE arriving) is closed instead of holding the
  // drain until its idle timeout; and once no connection is open (the rest
  // closing or draining, which only answer with their close) the drain is
  // over.
  static constexpr Duration kDrainSweepInterval = 50 * kMillisecond;
  bool serving() const { return stage_ == Stage::kServing; }

  uint64_t handshakes() const { return handshakes_; }
  // Where each completed handshake's duration (ConnectionStats: start to
  // completion) is recorded; null (the default): nowhere. Set before run().
  void set_handshake_histogram(HandshakeHistogram* histogram) { handshake_time_ = histogram; }
  // Credentials the supervisor offers (SIGHUP), applied by run() between
  // iterations; credentials_applied() counts them.
  CredentialSlot& credentials() { return credentials_; }
  uint64_t credentials_applied() const {
    return credentials_applied_.load(std::memory_order_acquire);
  }

 private:
  bool dispatch_events(Instant now);
  void record_handshake(endpoint::ConnectionHandle handle);
  void close_unresponsive(Instant now);

  enum class Stage : uint8_t { kServing, kDraining, kClosing };

  endpoint::EndpointConfig config_;
  size_t shard_count_;
  crypto::TlsContext& tls_;
  Stage stage_ = Stage::kServing;
  Instant stage_end_ = kNever;
  Instant next_sweep_ = 0;
  Instant next_publish_ = 0;
  size_t open_at_sweep_ = SIZE_MAX;  // connections still open at the last sweep
  crypto::MbManager mb_;
  std::unique_ptr<endpoint::Endpoint> endpoint_;
  Application* application_ = nullptr;
  uint64_t handshakes_ = 0;
  HandshakeHistogram* handshake_time_ = nullptr;
  CredentialSlot credentials_;
  std::atomic<uint64_t> credentials_applied_{0};
  void apply_pending_credentials();
};

}  // namespace dpquic::dataplane
