#include "tools/quicload/load_worker.h"

#include <openssl/ssl.h>

#include <algorithm>

#include "dataplane/app/synthetic_body.h"
#include "dataplane/shard/shard_core.h"

namespace dpquic::tools {

namespace {

constexpr Duration kPublishInterval = 100 * kMillisecond;
constexpr Duration kDrainLimit = 2 * kSecond;
constexpr size_t kMaxTickets = 64;
// The application's "no error" close code: H3_NO_ERROR (RFC 9114 §8.1), or
// 0 for perf.
constexpr uint64_t kH3NoError = 0x100;

crypto::CachedSession share(const crypto::CachedSession& ticket) {
  crypto::CachedSession copy;
  SSL_SESSION_up_ref(ticket.session.get());
  copy.session.reset(ticket.session.get());
  copy.peer_transport_parameters = ticket.peer_transport_parameters;
  return copy;
}

}  // namespace

size_t worker_max_connections(const LoadOptions& options, uint64_t slots) {
  // Closed connections linger for three PTOs (RFC 9000 §10.2); when
  // connections churn, room for those keeps connect() from running dry.
  // Closing takes ~100 ms on loopback (the PTO includes max_ack_delay):
  // at 10k handshakes/s about 1000 connections are closing at any time.
  const bool churn = options.handshake_only || options.per_connection != 0 || options.resume;
  // --idle: every slot holds its connection; failed handshakes are not retried.
  if (options.idle_mode) return static_cast<size_t>(slots + 64);
  return static_cast<size_t>(churn ? slots * 16 + 1024 : slots * 2 + 16);
}

LoadWorker::LoadWorker(const LoadOptions& options, const WorkerPlan& plan, LoadShard& io,
                       crypto::TlsContext& tls, const MappedFile* verify)
    : options_(options),
      plan_(plan),
      io_(io),
      tls_(tls),
      verify_(verify),
      slots_(plan.connections),
      slot_of_handle_(worker_max_connections(options, plan.connections), kNoSlot),
      local_of_handle_(slot_of_handle_.size()),
      source_ports_(65536 / 64),
      requests_(options.handshake_only || options.idle_mode ? 1
                                                            : plan.connections * options.streams),
      remaining_(plan.budget),
      unbounded_(plan.end != kNever),
      idle_mode_(options.idle_mode) {
  if (options_.scheme == UrlScheme::kPerf) {
    perf_ = std::make_unique<dataplane::PerfClient>(io_.endpoint());
  } else {
    h3_ = std::make_unique<dataplane::H3Client>(io_.endpoint());
    h3_->set_goaway_handler(this);
    for (const LoadTarget& target : options_.targets) {
      dataplane::H3Request request;
      request.authority = target.authority;
      request.path = target.path;
      h3_requests_.push_back(std::move(request));
    }
  }
  for (size_t i = slots_.size(); i > 0; --i) idle_.push_back(static_cast<uint32_t>(i - 1));
  to_close_.reserve(slots_.size() * 2);
  retiring_.reserve(slots_.size());
  closing_.reserve(slot_of_handle_.size());
  tickets_.reserve(kMaxTickets);
  io_.set_application(this);
}

LoadWorker::~LoadWorker() { io_.set_application(nullptr); }

// --- The loop ---------------------------------------------------------------------------

void LoadWorker::run(const std::atomic<bool>& interrupted) {
  Instant now = dataplane::monotonic_now();
  next_publish_ = now;
  for (;;) {
    now = dataplane::monotonic_now();
    const bool interrupt = interrupted.load(std::memory_order_relaxed);
    if (!stopping_ && (now >= plan_.end || interrupt))
      begin_stop(interrupt ? now : now + kAbandonAfter);
    if (stopping_ && (now >= abandon_at_ || interrupt)) abandon_all();
    schedule(now);
    if (all_done()) break;
    Instant limit = std::min({plan_.end, abandon_at_, next_publish_});
    if (!idle_.empty()) limit = std::min(limit, now + kMillisecond);  // pool full, or a ticket due
    io_.turn(now, std::max(limit, now));
    collect_tickets();
    publish(now, false);
  }
  finished_at_ = dataplane::monotonic_now();
  drain(finished_at_);
  publish(finished_at_, true);
  finished_.store(true, std::memory_order_release);
}

void LoadWorker::schedule(Instant now) {
  sweep_closing();
  for (endpoint::ConnectionHandle handle : to_close_) {
    io_.endpoint().close(now, handle, perf_ ? 0 : kH3NoError, "done");
  }
  to_close_.clear();
  if (options_.handshake_only) check_confirmed();
  open_slots(now);
  if (idle_mode_) check_all_established(now);
  for (endpoint::ConnectionHandle handle : to_close_) {
    io_.endpoint().close(now, handle, perf_ ? 0 : kH3NoError, "done");
  }
  to_close_.clear();
  settle_unsent();
}

bool LoadWorker::live(const Slot& slot) const {
  return slot.state == SlotState::kConnecting || slot.state == SlotState::kEstablished;
}

LiveConnection LoadWorker::live_connection(const Slot& slot) {
  return {slot.state == SlotState::kConnecting, slot.in_flight, slot.issued};
}

bool LoadWorker::can_issue() const {
  return !stopping_ && !options_.handshake_only && !idle_mode_ && (unbounded_ || remaining_ > 0);
}

bool LoadWorker::reopen_allowed() const {
  return !stopping_ && !idle_mode_ && (unbounded_ || remaining_ > 0);
}

void LoadWorker::check_all_established(Instant now) {
  if (all_established_at_ != 0 || stopping_ || !idle_.empty() || connecting_ != 0) return;
  all_established_at_ = now;
  counters_.idle_connections = live_slots_;
  plan_.end = now + options_.idle;
}

void LoadWorker::open_slots(Instant now) {
  if (idle_.empty() || now < reconnect_at_) return;
  // Requests the connections under way will take (connection_promise.h).
  // No connection is opened that would get none.
  uint64_t promised = 0;
  const bool bounded = !unbounded_ && !options_.handshake_only && !idle_mode_;
  if (bounded) {
    for (const Slot& slot : slots_) {
      if (live(slot)) promised += requests_promised(live_connection(slot), options_.per_connection);
    }
  }
  while (!idle_.empty()) {
    const uint32_t index = idle_.back();
    if (idle_mode_) {
      if (stopping_) {
        slots_[index].state = SlotState::kDone;
        idle_.pop_back();
        continue;
      }
      if (connecting_ >= options_.connections_in_flight) return;
    } else if (!reopen_allowed() || (!unbounded_ && remaining_ <= promised)) {
      // Nothing left for it to do: done for good.
      if (stopping_ || (!unbounded_ && remaining_ == 0)) {
        slots_[index].state = SlotState::kDone;
        idle_.pop_back();
        continue;
      }
      return;  // the connections under way may still fail and leave work
    }
    // --resume: the first connection fetches a ticket before any other starts.
    // (Or, from a server that sends none, once one connection ended.)
    if (options_.resume && !ticket_seen_ && !first_ended_ && live_slots_ > 0) return;
    if (!connect(index, now)) return;  // the pool is full: later
    idle_.pop_back();
    if (options_.handshake_only && !unbounded_) --remaining_;
    if (bounded)
      promised += requests_promised(live_connection(slots_[index]), options_.per_connection);
  }
}

bool LoadWorker::connect(uint32_t index, Instant now) {
  const std::optional<conn::SocketAddress> local = io_.open_local();
  if (!local) return false;
  const bool ticket = options_.resume && offer_ticket();
  if (!options_.resume) tls_.take_session(options_.server_name);  // no resumption
  const conn::PathAddresses path{*local, options_.server};
  const auto handle = io_.endpoint().connect(now, path, options_.server_name);
  if (!handle) {
    io_.close_local(*local);
    return false;
  }
  if (local_of_handle_[*handle].valid()) {
    // The endpoint reused the handle: the connection before is gone.
    release_local(*handle);
    std::erase(closing_, *handle);
  }
  local_of_handle_[*handle] = *local;
  source_ports_[local->port / 64] |= uint64_t{1} << (local->port % 64);
  Slot& slot = slots_[index];
  slot.state = SlotState::kConnecting;
  slot.handle = *handle;
  ++slot.generation;
  slot.connect_at = now;
  slot.in_flight = 0;
  slot.issued = 0;
  slot.early = false;
  slot_of_handle_[*handle] = static_cast<int32_t>(index);
  ++live_slots_;
  ++connecting_;
  ++counters_.connections_opened;
  if (ticket && options_.zero_rtt && !options_.handshake_only) {
    slot.early = true;  // the requests go out in 0-RTT
    fill(index, now);
  }
  return true;
}

// --- Tickets ----------------------------------------------------------------------------

bool LoadWorker::offer_ticket() {
  collect_tickets();
  if (!tickets_.empty()) {
    tls_.store_session(options_.server_name, std::move(tickets_.back()));
    tickets_.pop_back();
    return true;
  }
  // A ticket used twice still resumes; only 0-RTT must not replay one
  // (RFC 8446 §8; the server would refuse it).
  if (!options_.zero_rtt && last_ticket_) {
    tls_.store_session(options_.server_name, share(*last_ticket_));
    return true;
  }
  return false;
}

void LoadWorker::collect_tickets() {
  // The context keeps the latest ticket per server name; connect() takes
  // it, so tickets are moved out as they arrive and handed out one by one.
  if (!options_.resume) return;
  std::optional<crypto::CachedSession> ticket = tls_.take_session(options_.server_name);
  if (!ticket) return;
  ticket_seen_ = true;
  if (!options_.zero_rtt) last_ticket_ = share(*ticket);
  if (tickets_.size() >= kMaxTickets) tickets_.erase(tickets_.begin());
  tickets_.push_back(std::move(*ticket));
}

// --- Requests ---------------------------------------------------------------------------

void LoadWorker::fill(uint32_t index, Instant now) {
  Slot& slot = slots_[index];
  if (!live(slot)) return;
  while (slot.in_flight < options_.streams && can_issue() &&
         (options_.per_connection == 0 || slot.issued < options_.per_connection)) {
    if (!issue(index, now)) break;
  }
  if (slot.in_flight == 0 && slot.state == SlotState::kEstablished) finish_connection(index);
}

bool LoadWorker::issue(uint32_t index, Instant now) {
  Slot& slot = slots_[index];
  const uint32_t target = next_target();
  const LoadTarget& url = options_.targets[target];
  const uint64_t id =
      perf_ ? perf_->request(slot.handle, url.synthetic_size.value_or(0), options_.upload, this)
            : h3_->request(slot.handle, h3_requests_[target], this);
  if (id == 0) return false;
  if (!retry_targets_.empty()) {
    retry_targets_.pop_back();
  } else {
    next_target_ = (next_target_ + 1) % static_cast<uint32_t>(options_.targets.size());
  }
  RequestRecord* record = requests_.insert(id);
  if (record == nullptr) return false;  // cannot happen: sized for every slot's streams
  record->slot = index;
  record->generation = slot.generation;
  record->target = target;
  record->issued = now;
  if (verify_ != nullptr) {
    record->has_expected = true;
    record->expected = verify_->size();
  } else if (url.synthetic_size) {
    record->has_expected = true;
    record->expected = *url.synthetic_size;
  }
  ++slot.in_flight;
  ++slot.issued;
  if (!unbounded_) --remaining_;
  return true;
}

void LoadWorker::complete(uint64_t id, std::optional<ErrorKind> error) {
  RequestRecord* record = requests_.find(id);
  if (record == nullptr) return;  // abandoned
  const Instant now = dataplane::monotonic_now();
  if (error) {
    ++counters_.requests_failed;
    counters_.count(*error);
  } else {
    ++counters_.requests_ok;
    latency_.record(now - record->issued);
  }
  const uint32_t index = record->slot;
  const uint32_t generation = record->generation;
  requests_.erase(id);
  settle(index, generation, now);
}

void LoadWorker::settle(uint32_t index, uint32_t generation, Instant now) {
  Slot& slot = slots_[index];
  if (live(slot) && slot.generation == generation) {
    --slot.in_flight;
    fill(index, now);
    return;
  }
  for (size_t i = 0; i < retiring_.size(); ++i) {
    Retiring& retiring = retiring_[i];
    if (retiring.slot != index || retiring.generation != generation) continue;
    if (--retiring.in_flight == 0) {
      to_close_.push_back(retiring.handle);
      retiring_[i] = retiring_.back();
      retiring_.pop_back();
    }
    return;
  }
}

void LoadWorker::retry(uint64_t id) {
  RequestRecord* record = requests_.find(id);
  if (record == nullptr) return;
  if (stopping_) {
    ++counters_.requests_abandoned;  // no new request goes out any more
  } else {
    ++counters_.requests_retried_after_goaway;
    retry_targets_.push_back(record->target);
    if (!unbounded_) ++remaining_;
  }
  const uint32_t index = record->slot;
  const uint32_t generation = record->generation;
  requests_.erase(id);
  settle(index, generation, dataplane::monotonic_now());
  // Every slot may have finished meanwhile: one opens again to carry it.
  if (stopping_ || live_slots_ != 0 || !idle_.empty()) return;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state != SlotState::kDone) continue;
    slots_[i].state = SlotState::kIdle;
    idle_.push_back(i);
    return;
  }
}

uint32_t LoadWorker::next_target() const {
  return retry_targets_.empty() ? next_target_ : retry_targets_.back();
}

void LoadWorker::on_headers(uint64_t id, int status, std::optional<uint64_t> content_length) {
  RequestRecord* record = requests_.find(id);
  if (record == nullptr) return;
  record->status = status;
  if (!content_length) return;
  if (!record->has_expected) {
    record->has_expected = true;
    record->expected = *content_length;
  } else if (*content_length != record->expected) {
    record->content_ok = false;
  }
}

void LoadWorker::on_body(uint64_t id, std::span<const uint8_t> bytes) {
  counters_.bytes_received += bytes.size();
  RequestRecord* record = requests_.find(id);
  if (record == nullptr) return;
  if (record->content_ok && record->status == 200) {
    if (verify_ != nullptr) {
      record->content_ok = verify_->matches(record->received, bytes);
    } else if (options_.targets[record->target].synthetic_size) {
      record->content_ok = dataplane::matches_synthetic(record->received, bytes);
    }
  }
  record->received += bytes.size();
}

void LoadWorker::on_complete(uint64_t id, dataplane::H3Outcome outcome) {
  std::optional<ErrorKind> error;
  switch (outcome.result) {
    case dataplane::H3Result::kOk: {
      const RequestRecord* record = requests_.find(id);
      if (record == nullptr) return;
      if (record->status != 200) {
        error = ErrorKind::kStatus;
      } else if (!record->content_ok ||
                 (record->has_expected && record->received != record->expected)) {
        error = ErrorKind::kMismatch;
      }
      break;
    }
    case dataplane::H3Result::kReset: error = ErrorKind::kReset; break;
    case dataplane::H3Result::kConnectionClosed: error = ErrorKind::kClosed; break;
    case dataplane::H3Result::kProtocolError: error = ErrorKind::kProtocol; break;
    case dataplane::H3Result::kRefused: return retry(id);
  }
  complete(id, error);
}

void LoadWorker::on_complete(uint64_t id, const dataplane::PerfOutcome& outcome) {
  std::optional<ErrorKind> error;
  switch (outcome.result) {
    case dataplane::PerfResult::kOk: break;
    case dataplane::PerfResult::kSizeMismatch:
    case dataplane::PerfResult::kContentMismatch: error = ErrorKind::kMismatch; break;
    case dataplane::PerfResult::kReset: error = ErrorKind::kReset; break;
    case dataplane::PerfResult::kClosed: error = ErrorKind::kClosed; break;
  }
  complete(id, error);
}

// --- The end ----------------------------------------------------------------------------

void LoadWorker::begin_stop(Instant abandon_at) {
  stopping_ = true;
  abandon_at_ = abandon_at;
  for (uint32_t index = 0; index < slots_.size(); ++index) {
    const Slot& slot = slots_[index];
    // Handshakes under way are not waited for; idle connections close.
    if (live(slot) && slot.in_flight == 0) finish_connection(index);
  }
}

void LoadWorker::abandon_all() {
  abandon_at_ = kNever;
  requests_.for_each([this](RequestRecord& record) {
    ++counters_.requests_abandoned;
    requests_.erase(record.id);
  });
  for (uint32_t index = 0; index < slots_.size(); ++index) {
    if (live(slots_[index])) finish_connection(index);
  }
  for (const Retiring& retiring : retiring_) to_close_.push_back(retiring.handle);
  retiring_.clear();
}

void LoadWorker::settle_unsent() {
  // A request count no connection is left to carry: those requests failed.
  if (unbounded_ || options_.handshake_only || remaining_ == 0) return;
  if (live_slots_ != 0 || !idle_.empty()) return;
  counters_.requests_not_sent += remaining_;
  counters_.requests_failed += remaining_;
  remaining_ = 0;
}

bool LoadWorker::all_done() const {
  return live_slots_ == 0 && idle_.empty() && to_close_.empty() && retiring_.empty();
}

void LoadWorker::drain(Instant now) {
  // Let the CONNECTION_CLOSE frames go out and the closing periods end.
  const Instant limit = now + kDrainLimit;
  while (io_.endpoint().connection_count() > 0 && now < limit) {
    io_.turn(now, std::min(limit, now + 10 * kMillisecond));
    now = dataplane::monotonic_now();
  }
  io_.endpoint().reset_connections();
  for (endpoint::ConnectionHandle handle = 0; handle < local_of_handle_.size(); ++handle) {
    release_local(handle);
  }
  closing_.clear();
  if (perf_) perf_->forget_connections();
  requests_.for_each([this](RequestRecord& record) {
    ++counters_.requests_abandoned;
    requests_.erase(record.id);
  });
}

void LoadWorker::publish(Instant now, bool force) {
  if (!force && now < next_publish_) return;
  next_publish_ = now + kPublishInterval;
  if (perf_) {
    counters_.bytes_received = perf_->counters().response_bytes_received;
    counters_.bytes_sent = perf_->counters().upload_bytes_sent;
  }
  std::lock_guard<std::mutex> lock(published_mutex_);
  published_ = counters_;
  published_latency_ = latency_;
}

void LoadWorker::snapshot(LoadCounters& counters, LatencyHistogram& latency) const {
  std::lock_guard<std::mutex> lock(published_mutex_);
  counters = published_;
  latency = published_latency_;
}

}  // namespace dpquic::tools
