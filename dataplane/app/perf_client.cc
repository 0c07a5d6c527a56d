#include "dataplane/app/perf_client.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace dpquic::dataplane {

namespace {

using conn::ConnectionEventType;

constexpr size_t kRequestHeaderSize = 8;

const PerfClientConfig& validated(const PerfClientConfig& config) {
  if (config.chunk_size == 0 || config.chunk_size > kSyntheticBlockSize - kSyntheticPeriod) {
    throw std::invalid_argument("perf client: chunk_size must be in [1, " +
                                std::to_string(kSyntheticBlockSize - kSyntheticPeriod) + "]");
  }
  if (config.adopt_records == 0 || config.header_buffers == 0) {
    throw std::invalid_argument("perf client: adopt_records and header_buffers must be at least 1");
  }
  return config;
}

}  // namespace

PerfClient::PerfClient(endpoint::Endpoint& endpoint, const PerfClientConfig& config)
    : endpoint_(endpoint),
      config_(validated(config)),
      pool_(kRequestHeaderSize, config_.header_buffers, config_.adopt_records) {}

PerfClient::~PerfClient() = default;

PerfClient::ConnectionState& PerfClient::state_of(endpoint::ConnectionHandle handle) {
  // Grows to the highest handle seen (bounded by the endpoint's pool).
  if (handle >= connections_.size()) connections_.resize(size_t{handle} + 1);
  return connections_[handle];
}

void PerfClient::queue_connection(endpoint::ConnectionHandle handle) {
  ConnectionState& state = state_of(handle);
  if (state.queued) return;
  state.queued = true;
  pending_connections_.push_back(handle);
}

uint64_t PerfClient::request(endpoint::ConnectionHandle handle, uint64_t response_size,
                             uint64_t upload_size, PerfResponseHandler* handler) {
  Request* request = requests_.take();
  // The slot finds the record; the sequence tells this request from the
  // slot's earlier ones.
  if ((++sequence_ & 0xffffffffu) == 0) ++sequence_;
  request->id = (sequence_ & 0xffffffffu) << 32 | request->slot;
  request->handle = handle;
  request->handler = handler;
  request->response_size = response_size;
  request->upload_size = upload_size;
  ConnectionState& state = state_of(handle);
  state.requests.push_back(request);
  state.pending.push_back(request);
  queue_connection(handle);
  const uint64_t id = request->id;
  // At once if a stream can be opened (0-RTT included); a connection that is
  // gone is reported from pump(), not from inside this call.
  open_pending(handle, /*complete_if_gone=*/false);
  return id;
}

void PerfClient::open_pending(endpoint::ConnectionHandle handle, bool complete_if_gone) {
  // Closing or draining: no stream will open any more (kClosed may still
  // be on its way, or already delivered).
  if (!endpoint_.is_open(handle)) {
    if (!complete_if_gone) return;
    // Only the requests there now: a handler may queue new ones.
    size_t count = 0;
    for (Request* r = connections_[handle].pending.front(); r != nullptr;
         r = PendingList::next(r)) {
      ++count;
    }
    for (; count != 0; --count) {
      finish(connections_[handle].pending.front(), PerfResult::kClosed, 0, false);
    }
    return;
  }
  // connections_ is indexed again after each handler call, which may grow it.
  while (Request* request = connections_[handle].pending.front()) {
    const auto stream = endpoint_.open_stream(handle, conn::StreamDirection::kBidirectional);
    if (!stream) break;  // stream limit (or keys) not there yet: pump() tries again
    connections_[handle].pending.remove(request);
    request->has_stream = true;
    request->stream_id = *stream;
    table_.insert(handle, *stream, request);
    ++counters_.requests_sent;
    ready_.push_back(request);
    if (!write(request)) out_of_records_ = true;
    request->handler->on_stream_opened(request->id, handle, *stream);
  }
}

bool PerfClient::write(Request* request) {
  if (!endpoint_.exists(request->handle)) {
    ready_.remove(request);  // kClosed completes it
    return true;
  }
  if (!request->header_sent) {
    std::array<uint8_t, kRequestHeaderSize> header;
    for (size_t i = 0; i < header.size(); ++i) {
      header[i] = static_cast<uint8_t>(request->response_size >> (56 - 8 * i));
    }
    transmit::Chunk chunk = pool_.copy_from(header);
    if (!chunk.valid()) {
      // More requests in flight than ever before: warm-up growth.
      pool_.grow(config_.header_buffers, 0);
      chunk = pool_.copy_from(header);
    }
    const bool fin = request->upload_size == 0;
    const conn::SendResult result =
        endpoint_.send(request->handle, request->stream_id, std::move(chunk), fin);
    if (result != conn::SendResult::kOk) {
      // kBlocked: kStreamWritable brings it back; otherwise the stream's
      // reset or the connection's close completes it.
      ready_.remove(request);
      return true;
    }
    request->header_sent = true;
    if (fin) {
      request->fin_sent = true;
      ready_.remove(request);
      return true;
    }
  }
  const std::span<const uint8_t> block = synthetic_block();
  for (;;) {
    const uint64_t remaining = request->upload_size - request->upload_sent;
    size_t length = static_cast<size_t>(std::min<uint64_t>(config_.chunk_size, remaining));
    // No room: offer the chunk anyway, the kBlocked arms kStreamWritable.
    const uint64_t writable = endpoint_.stream_writable_bytes(request->handle, request->stream_id);
    if (writable != 0 && writable < length) length = static_cast<size_t>(writable);
    transmit::Chunk chunk =
        pool_.adopt(block.data() + request->upload_sent % kSyntheticPeriod, length, nullptr,
                    nullptr);  // static bytes: nothing to release
    if (!chunk.valid()) return false;
    const bool fin = length == remaining;
    const conn::SendResult result =
        endpoint_.send(request->handle, request->stream_id, std::move(chunk), fin);
    if (result != conn::SendResult::kOk) {
      ready_.remove(request);
      return true;
    }
    request->upload_sent += length;
    counters_.upload_bytes_sent += length;
    if (fin) {
      request->fin_sent = true;
      ready_.remove(request);
      return true;
    }
  }
}

void PerfClient::on_readable(Request* request) {
  bool fin = false;
  for (;;) {
    // Checked in place, then consumed: no copy.
    const std::span<const uint8_t> piece = endpoint_.peek(request->handle, request->stream_id, fin);
    if (request->content_ok && !matches_synthetic(request->received, piece)) {
      request->content_ok = false;
    }
    const size_t n = endpoint_.consume(request->handle, request->stream_id, piece.size(), fin);
    if (n != 0) {
      request->received += n;
      counters_.response_bytes_received += n;
      if (request->received > request->response_size) {
        // More than asked for: no need to read the rest.
        finish(request,
               request->content_ok ? PerfResult::kSizeMismatch : PerfResult::kContentMismatch, 0,
               /*stop_receiving=*/!fin);
        return;
      }
    }
    if (n == 0 || fin) break;
  }
  if (!fin) return;
  const PerfResult result = !request->content_ok ? PerfResult::kContentMismatch
                            : request->received != request->response_size
                                ? PerfResult::kSizeMismatch
                                : PerfResult::kOk;
  finish(request, result, 0, /*stop_receiving=*/false);
}

void PerfClient::finish(Request* request, PerfResult result, uint64_t error_code,
                        bool stop_receiving) {
  if (request->has_stream && result != PerfResult::kClosed) {
    // An upload still going (the response ended first) is abandoned.
    if (!request->fin_sent) {
      (void)endpoint_.reset_stream(request->handle, request->stream_id, kPerfRequestCancelled);
    }
    if (stop_receiving) {
      (void)endpoint_.stop_sending(request->handle, request->stream_id, kPerfRequestCancelled);
    }
  }
  const PerfOutcome outcome{result, request->received, error_code};
  const uint64_t id = request->id;
  PerfResponseHandler* handler = request->handler;
  if (request->has_stream) table_.erase(request->handle, request->stream_id);
  ready_.remove(request);
  ConnectionState& state = connections_[request->handle];
  state.pending.remove(request);
  state.requests.remove(request);
  requests_.give(request);
  if (result == PerfResult::kOk) {
    ++counters_.requests_ok;
  } else {
    ++counters_.requests_failed;
  }
  handler->on_complete(id, outcome);
}

void PerfClient::on_zero_rtt_rejected(endpoint::ConnectionHandle handle) {
  ++counters_.zero_rtt_rejections;
  ConnectionState& state = state_of(handle);
  // Every stream is gone (RFC 9001 §4.6.2): the requests start over, in the
  // order they were made.
  for (Request* r = state.requests.front(); r != nullptr; r = RequestList::next(r)) {
    if (!r->has_stream) continue;
    table_.erase(handle, r->stream_id);
    ready_.remove(r);
    counters_.response_bytes_received -= r->received;
    counters_.upload_bytes_sent -= r->upload_sent;
    r->has_stream = false;
    r->stream_id = 0;
    r->header_sent = false;
    r->upload_sent = 0;
    r->fin_sent = false;
    r->received = 0;
    r->content_ok = true;
  }
  while (Request* r = state.pending.front()) state.pending.remove(r);
  for (Request* r = state.requests.front(); r != nullptr; r = RequestList::next(r)) {
    if (!r->has_stream) state.pending.push_back(r);
  }
  queue_connection(handle);
}

void PerfClient::close_connection(endpoint::ConnectionHandle handle, uint64_t error_code) {
  if (handle >= connections_.size()) return;
  // Requests a handler makes meanwhile are not part of this connection's end.
  for (Request* r = connections_[handle].requests.front(); r != nullptr; r = RequestList::next(r)) {
    r->closing = true;
  }
  while (Request* r = connections_[handle].requests.front()) {
    if (!r->closing) break;
    finish(r, PerfResult::kClosed, error_code, false);
  }
}

void PerfClient::forget_connections() {
  for (size_t handle = 0; handle < connections_.size(); ++handle) {
    close_connection(static_cast<endpoint::ConnectionHandle>(handle), 0);
  }
}

void PerfClient::on_event(Instant, const endpoint::EndpointEvent& event) {
  const endpoint::ConnectionHandle handle = event.connection;
  const uint64_t stream_id = event.event.stream_id;
  switch (event.event.type) {
    case ConnectionEventType::kStreamReadable:
      if (Request* request = table_.find(handle, stream_id)) on_readable(request);
      break;
    case ConnectionEventType::kStreamWritable:
      if (Request* request = table_.find(handle, stream_id);
          request != nullptr && !request->fin_sent) {
        ready_.push_back(request);
      }
      break;
    case ConnectionEventType::kStreamReset:
      if (Request* request = table_.find(handle, stream_id)) {
        bool fin = false;
        (void)endpoint_.consume(handle, stream_id, 0, fin);  // ends the receive side
        finish(request, PerfResult::kReset, event.event.error_code, false);
      }
      break;
    case ConnectionEventType::kStreamStopped:
      // The server will not read the rest of the upload, so no answer can
      // come (the connection has reset our side already).
      if (Request* request = table_.find(handle, stream_id);
          request != nullptr && !request->fin_sent) {
        request->fin_sent = true;  // nothing left to reset
        finish(request, PerfResult::kReset, event.event.error_code, /*stop_receiving=*/true);
      }
      break;
    case ConnectionEventType::kZeroRttRejected: on_zero_rtt_rejected(handle); break;
    case ConnectionEventType::kClosed: close_connection(handle, event.event.error_code); break;
    default: break;
  }
}

void PerfClient::pump(Instant) {
  out_of_records_ = false;
  for (size_t i = 0; i < pending_connections_.size();) {
    const endpoint::ConnectionHandle handle = pending_connections_[i];
    open_pending(handle, /*complete_if_gone=*/true);
    if (connections_[handle].pending.empty()) {
      connections_[handle].queued = false;
      pending_connections_[i] = pending_connections_.back();
      pending_connections_.pop_back();
    } else {
      ++i;
    }
  }
  Request* request = ready_.front();
  while (request != nullptr) {
    Request* next = ReadyList::next(request);
    if (!write(request)) {
      out_of_records_ = true;
      ready_.remove(request);
      ready_.push_back(request);
      break;
    }
    request = next;
  }
}

std::optional<PerfProgress> PerfClient::progress(uint64_t request_id) const {
  const Request* request = requests_.at(static_cast<uint32_t>(request_id & 0xffffffffu));
  if (request == nullptr || request->id == 0 || request->id != request_id) return std::nullopt;
  PerfProgress progress;
  progress.handle = request->handle;
  if (request->has_stream) progress.stream_id = request->stream_id;
  progress.bytes_received = request->received;
  progress.upload_sent = request->upload_sent;
  return progress;
}

}  // namespace dpquic::dataplane
