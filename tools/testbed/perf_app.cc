#include "tools/testbed/perf_app.h"

#include <algorithm>

namespace dpquic::harness {

namespace {

// Apps whose adapter is gone, kept until the process exits: their chunk
// pools must outlive every connection still holding their chunks.
template <typename App>
void keep_until_exit(std::unique_ptr<App> app) {
  static std::vector<std::unique_ptr<App>> apps;
  apps.push_back(std::move(app));
}

}  // namespace

bool HandleIdentity::changed(endpoint::Endpoint& endpoint, endpoint::ConnectionHandle handle) {
  const conn::Connection* connection = endpoint.connection(handle);
  if (connection == nullptr) return false;
  if (handle >= ids_.size()) ids_.resize(size_t{handle} + 1);
  std::optional<wire::ConnectionId>& id = ids_[handle];
  if (id && *id == connection->original_dcid()) return false;
  const bool was_known = id.has_value();
  id = connection->original_dcid();
  return was_known;
}

void HandleIdentity::forget(endpoint::ConnectionHandle handle) {
  if (handle < ids_.size()) ids_[handle].reset();
}

// --- PerfServer -------------------------------------------------------------------------------

PerfServer::PerfServer(endpoint::Endpoint& endpoint, size_t chunk_size)
    : endpoint_(endpoint),
      app_(std::make_unique<dataplane::PerfServer>(
          endpoint, dataplane::PerfServerConfig{
                        .chunk_size = std::min(chunk_size, dataplane::kSyntheticBlockSize -
                                                               dataplane::kSyntheticPeriod)})) {}

PerfServer::~PerfServer() { keep_until_exit(std::move(app_)); }

void PerfServer::run(Instant now) {
  endpoint::EndpointEvent event;
  while (endpoint_.poll_event(event)) {
    if (identity_.changed(endpoint_, event.connection)) {
      // The handle's old connection went without kClosed: end its state.
      endpoint::EndpointEvent closed;
      closed.connection = event.connection;
      closed.event.type = conn::ConnectionEventType::kClosed;
      app_->on_event(now, closed);
    }
    if (event.event.type == conn::ConnectionEventType::kEstablished) ++established_;
    if (event.event.type == conn::ConnectionEventType::kClosed) identity_.forget(event.connection);
    app_->on_event(now, event);
  }
  app_->pump(now);
}

// --- PerfClient -------------------------------------------------------------------------------

PerfClient::PerfClient(endpoint::Endpoint& endpoint)
    : endpoint_(endpoint), app_(std::make_unique<dataplane::PerfClient>(endpoint)) {}

PerfClient::~PerfClient() { keep_until_exit(std::move(app_)); }

void PerfClient::end_stale_connection(Instant now, endpoint::ConnectionHandle handle) {
  if (!identity_.changed(endpoint_, handle)) return;
  endpoint::EndpointEvent closed;
  closed.connection = handle;
  closed.event.type = conn::ConnectionEventType::kClosed;
  app_->on_event(now, closed);
}

void PerfClient::request(endpoint::ConnectionHandle handle, uint64_t size) {
  end_stale_connection(0, handle);
  // The id is known only after the call, but the stream may open inside it:
  // on_stream_opened records the request under its id then.
  pending_request_ = Request{handle, size, std::nullopt};
  const uint64_t id = app_->request(handle, size, 0, this);
  if (pending_request_) requests_.emplace(id, *pending_request_);
  pending_request_.reset();
}

void PerfClient::on_stream_opened(uint64_t request_id, endpoint::ConnectionHandle handle,
                                  uint64_t stream_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) {
    // Opened inside request(), before it returned the id.
    it = requests_.emplace(request_id, *pending_request_).first;
    pending_request_.reset();
  }
  Request& request = it->second;
  // After a 0-RTT rejection the old stream is gone: forget its download.
  if (request.stream) downloads_.erase({handle, *request.stream});
  request.stream = stream_id;
  // A fresh record: a handle (and its stream ids) may have served an
  // earlier, closed connection.
  downloads_[{handle, stream_id}] = Download{.request_id = request_id};
}

void PerfClient::on_complete(uint64_t request_id, const dataplane::PerfOutcome& outcome) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;  // request() never completes one inside
  const Request request = it->second;
  requests_.erase(it);
  const bool fin = outcome.result == dataplane::PerfResult::kOk ||
                   outcome.result == dataplane::PerfResult::kSizeMismatch ||
                   outcome.result == dataplane::PerfResult::kContentMismatch;
  if (fin) {
    ++completed_;
    if (outcome.result != dataplane::PerfResult::kOk) ++mismatches_;
  }
  if (!request.stream) return;
  Download& download = downloads_[{request.handle, *request.stream}];
  download.received = outcome.bytes_received;
  download.finished = true;
  download.done = fin;
}

uint64_t PerfClient::received_on(endpoint::ConnectionHandle handle, uint64_t stream) const {
  const auto it = downloads_.find({handle, stream});
  if (it == downloads_.end()) return 0;
  if (it->second.finished) return it->second.received;
  const auto progress = app_->progress(it->second.request_id);
  return progress ? progress->bytes_received : 0;
}

bool PerfClient::done_on(endpoint::ConnectionHandle handle, uint64_t stream) const {
  const auto it = downloads_.find({handle, stream});
  return it != downloads_.end() && it->second.done;
}

void PerfClient::run(Instant now) {
  endpoint::EndpointEvent event;
  while (endpoint_.poll_event(event)) {
    end_stale_connection(now, event.connection);
    switch (event.event.type) {
      case conn::ConnectionEventType::kEstablished: ++established_; break;
      case conn::ConnectionEventType::kClosed:
        ++closed_;
        close_events_.push_back(event.event);
        identity_.forget(event.connection);
        break;
      default: break;
    }
    app_->on_event(now, event);
  }
  app_->pump(now);
}

}  // namespace dpquic::harness
