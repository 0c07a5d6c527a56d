#include "dataplane/shard/shard_core.h"

#include <time.h>

#include <algorithm>

#include "quic/conn/cid_generator.h"

namespace dpquic::dataplane {

Instant monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Instant>(ts.tv_sec) * kSecond + static_cast<Instant>(ts.tv_nsec);
}

ShardCore::ShardCore(const endpoint::EndpointConfig& config, size_t shard_count,
                     crypto::TlsContext& tls)
    : config_(config), shard_count_(shard_count), tls_(tls) {
  endpoint_ = std::make_unique<endpoint::Endpoint>(config_, mb_, tls);
}

ShardCore::~ShardCore() {
  // Connections hold chunks of the application's pools: drop them while
  // the application still exists.
  if (endpoint_) endpoint_->reset_connections();
}

std::optional<uint8_t> ShardCore::foreign_owner(std::span<const uint8_t> datagram) const {
  if (shard_count_ <= 1 || datagram.empty()) return std::nullopt;
  std::span<const uint8_t> dcid;
  const auto& layout = config_.cid_layout;
  if ((datagram[0] & 0x80) == 0) {
    if (datagram.size() >= 1 + layout.cid_length) dcid = datagram.subspan(1, layout.cid_length);
  } else if (datagram.size() >= 6 && datagram.size() >= 6u + datagram[5]) {
    dcid = datagram.subspan(6, datagram[5]);
  }
  if (dcid.empty()) return std::nullopt;
  const auto owner = conn::CidGenerator::core_of(dcid, layout);
  if (!owner || *owner == config_.core_id || *owner >= shard_count_) return std::nullopt;
  return owner;
}

bool ShardCore::dispatch_events(Instant now) {
  bool any = false;
  endpoint::EndpointEvent event;
  while (endpoint_->poll_event(event)) {
    any = true;
    if (event.event.type == conn::ConnectionEventType::kEstablished) {
      ++handshakes_;
      record_handshake(event.connection);
    }
    if (application_ != nullptr) application_->on_event(now, event);
  }
  return any;
}

void ShardCore::record_handshake(endpoint::ConnectionHandle handle) {
  if (handshake_time_ == nullptr) return;
  const conn::ConnectionStats* stats = endpoint_->connection_stats(handle);
  if (stats == nullptr || stats->handshake_completed_at < stats->started_at) return;
  handshake_time_->record(stats->handshake_completed_at - stats->started_at);
}

bool ShardCore::poll_once(ShardIo& io, Instant now) {
  bool any = io.receive(now);
  any |= service(now);
  any |= io.transmit(now);
  if (after_transmit(now)) {
    any = true;
    io.transmit(now);
  }
  io.end_transmit();
  if (any || now >= next_publish_) {
    io.publish_counters();
    next_publish_ = now + kPublishInterval;
  }
  return any;
}

void ShardCore::run(ShardIo& io, const std::atomic<RunPhase>& phase, Duration drain_timeout) {
  for (Instant now = io.now();
       keep_running(now, phase.load(std::memory_order_acquire), drain_timeout); now = io.now()) {
    if (credentials_.pending()) apply_pending_credentials();
    if (poll_once(io, now)) continue;
    // While stopping, the drain's progress is checked at least every 10 ms.
    const Duration longest = (serving() ? 100 : 10) * kMillisecond;
    io.idle(std::min(next_deadline(now), now + longest));
  }
  endpoint_->reset_connections();
  io.publish_counters();
}

void ShardCore::apply_pending_credentials() {
  const std::shared_ptr<const Credentials> next = credentials_.take();
  if (next != nullptr && apply_credentials(*next, tls_, *endpoint_)) {
    credentials_applied_.fetch_add(1, std::memory_order_release);
  }
}

bool ShardCore::service(Instant now) {
  bool any = false;
  if (endpoint_->poll_timeout() <= now) {
    endpoint_->handle_timeout(now);
    any = true;
  }
  any |= dispatch_events(now);
  if (application_ != nullptr) application_->pump(now);
  return any;
}

bool ShardCore::after_transmit(Instant now) {
  if (!dispatch_events(now)) return false;
  if (application_ != nullptr) application_->pump(now);
  return true;
}

Instant ShardCore::next_deadline(Instant now) {
  if (application_ == nullptr) return endpoint_->poll_timeout();
  if (application_->wants_pump()) return now;
  return std::min(endpoint_->poll_timeout(), application_->next_deadline());
}

bool ShardCore::keep_running(Instant now, RunPhase phase, Duration drain_timeout) {
  if (stage_ == Stage::kServing && phase == RunPhase::kDrain) {
    stage_ = Stage::kDraining;
    stage_end_ = now + drain_timeout;
    endpoint_->set_accepting(false);
    if (application_ != nullptr) application_->drain(now);
  }
  if (stage_ == Stage::kDraining && now >= next_sweep_) close_unresponsive(now);
  const bool drained = stage_ == Stage::kDraining && (endpoint_->connection_count() == 0 ||
                                                      open_at_sweep_ == 0 || now >= stage_end_);
  if (stage_ != Stage::kClosing && (phase == RunPhase::kStop || drained)) {
    stage_ = Stage::kClosing;
    stage_end_ = now + kCloseFlush;
    endpoint_->set_accepting(false);
    close_all(now);
  }
  if (stage_ == Stage::kClosing) return endpoint_->connection_count() != 0 && now < stage_end_;
  return true;
}

void ShardCore::close_unresponsive(Instant now) {
  next_sweep_ = now + kDrainSweepInterval;
  size_t open = 0;
  for (size_t handle = 0; handle < config_.max_connections; ++handle) {
    const auto h = static_cast<endpoint::ConnectionHandle>(handle);
    if (endpoint_->peer_unresponsive(h, now)) {
      endpoint_->close(now, h, 0, "peer unresponsive while draining");
    }
    if (endpoint_->is_open(h)) ++open;
  }
  open_at_sweep_ = open;
}

void ShardCore::close_all(Instant now) {
  if (application_ != nullptr) application_->shutdown(now);
  for (size_t handle = 0; handle < config_.max_connections; ++handle) {
    const auto h = static_cast<endpoint::ConnectionHandle>(handle);
    if (endpoint_->exists(h)) endpoint_->close(now, h, 0, "server stopping");
  }
}

}  // namespace dpquic::dataplane
