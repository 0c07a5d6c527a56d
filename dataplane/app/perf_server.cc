#include "dataplane/app/perf_server.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "quic/conn/stream_id.h"

namespace dpquic::dataplane {

namespace {

using conn::ConnectionEventType;

// Client-initiated bidirectional streams are the only ones that carry
// requests.
bool is_request_stream(uint64_t stream_id) { return conn::is_client_bidirectional(stream_id); }

const PerfServerConfig& validated(const PerfServerConfig& config) {
  if (config.chunk_size == 0 || config.chunk_size > kSyntheticBlockSize - kSyntheticPeriod) {
    throw std::invalid_argument("perf server: chunk_size must be in [1, " +
                                std::to_string(kSyntheticBlockSize - kSyntheticPeriod) + "]");
  }
  if (config.adopt_records == 0) {
    throw std::invalid_argument("perf server: adopt_records must be at least 1");
  }
  return config;
}

}  // namespace

PerfServer::PerfServer(endpoint::Endpoint& endpoint, const PerfServerConfig& config)
    : endpoint_(endpoint),
      config_(validated(config)),
      // Only adopt records: response bytes are never copied.
      pool_(0, 0, config_.adopt_records) {}

PerfServer::~PerfServer() = default;

PerfServer::ConnectionList& PerfServer::streams_of(endpoint::ConnectionHandle handle) {
  // Grows to the highest handle seen (bounded by the endpoint's pool).
  if (handle >= connections_.size()) connections_.resize(size_t{handle} + 1);
  return connections_[handle];
}

PerfServer::Record* PerfServer::create(endpoint::ConnectionHandle handle, uint64_t stream_id) {
  Record* record = records_.take();
  record->handle = handle;
  record->stream_id = stream_id;
  table_.insert(handle, stream_id, record);
  streams_of(handle).push_back(record);
  return record;
}

void PerfServer::release(Record* record) {
  table_.erase(record->handle, record->stream_id);
  ready_.remove(record);
  streams_of(record->handle).remove(record);
  records_.give(record);
}

void PerfServer::refuse(endpoint::ConnectionHandle handle, uint64_t stream_id, bool stop_receiving,
                        uint64_t error_code) {
  (void)endpoint_.reset_stream(handle, stream_id, error_code);
  if (stop_receiving) (void)endpoint_.stop_sending(handle, stream_id, error_code);
}

void PerfServer::free_connection(endpoint::ConnectionHandle handle) {
  if (handle >= connections_.size()) return;
  ConnectionList& list = connections_[handle];
  while (Record* record = list.front()) {
    ++counters_.abandoned_streams;
    release(record);
  }
}

void PerfServer::forget_connections() {
  for (size_t handle = 0; handle < connections_.size(); ++handle) {
    free_connection(static_cast<endpoint::ConnectionHandle>(handle));
  }
}

bool PerfServer::abort_stream(endpoint::ConnectionHandle handle, uint64_t stream_id,
                              uint64_t error_code) {
  Record* record = table_.find(handle, stream_id);
  if (record == nullptr) return false;
  refuse(handle, stream_id, /*stop_receiving=*/!record->responding, error_code);
  ++counters_.abandoned_streams;
  release(record);
  return true;
}

void PerfServer::drain(Instant now) {
  draining_ = true;
  close_drained(now);
}

void PerfServer::close_drained(Instant now) {
  idle_since_.resize(open_.size(), kNever);
  next_close_ = kNever;
  for (size_t i = 0; i < open_.size(); ++i) {
    if (!open_[i]) continue;
    const auto handle = static_cast<endpoint::ConnectionHandle>(i);
    const bool busy =
        (i < connections_.size() && connections_[i].front() != nullptr) ||
        endpoint_.peer_open_streams(handle, conn::StreamDirection::kBidirectional) != 0;
    if (busy) {
      idle_since_[i] = kNever;
      continue;
    }
    if (idle_since_[i] == kNever) idle_since_[i] = now;
    if (now < idle_since_[i] + kDrainIdleGrace) {
      next_close_ = std::min(next_close_, idle_since_[i] + kDrainIdleGrace);
      continue;
    }
    open_[i] = false;
    endpoint_.close(now, handle, 0, "server draining");
  }
}

void PerfServer::on_event(Instant, const endpoint::EndpointEvent& event) {
  const endpoint::ConnectionHandle handle = event.connection;
  const uint64_t stream_id = event.event.stream_id;
  if (handle >= open_.size()) open_.resize(handle + 1, false);
  open_[handle] = event.event.type != ConnectionEventType::kClosed;
  switch (event.event.type) {
    case ConnectionEventType::kStreamOpened:
      if (draining_) {
        refuse(handle, stream_id, /*stop_receiving=*/true);
      } else if (is_request_stream(stream_id)) {
        if (table_.find(handle, stream_id) == nullptr) create(handle, stream_id);
      } else if (conn::is_client_unidirectional(stream_id)) {
        refuse(handle, stream_id, /*stop_receiving=*/true);
      }
      break;
    case ConnectionEventType::kStreamReadable: on_stream_readable(handle, stream_id); break;
    case ConnectionEventType::kStreamWritable:
      if (Record* record = table_.find(handle, stream_id);
          record != nullptr && record->responding) {
        ready_.push_back(record);
      }
      break;
    case ConnectionEventType::kStreamReset: {
      // The client abandoned its request: read() ends the receive side; the
      // response, if any is still owed, is abandoned too.
      bool fin = false;
      (void)endpoint_.consume(handle, stream_id, 0, fin);
      if (Record* record = table_.find(handle, stream_id)) {
        refuse(handle, stream_id, /*stop_receiving=*/false);
        ++counters_.abandoned_streams;
        release(record);
      }
      break;
    }
    case ConnectionEventType::kStreamStopped:
      // The connection already reset our send side; a request still being
      // read is not needed any more.
      if (Record* record = table_.find(handle, stream_id)) {
        if (!record->responding) refuse(handle, stream_id, /*stop_receiving=*/true);
        ++counters_.abandoned_streams;
        release(record);
      }
      break;
    case ConnectionEventType::kClosed: free_connection(handle); break;
    default: break;
  }
}

void PerfServer::on_stream_readable(endpoint::ConnectionHandle handle, uint64_t stream_id) {
  Record* record = table_.find(handle, stream_id);
  if (!is_request_stream(stream_id) || (draining_ && record == nullptr)) {
    // A refused stream: drop what arrived before the client saw
    // STOP_SENDING, which also ends the stream at FIN.
    bool fin = false;
    while (endpoint_.consume(handle, stream_id, SIZE_MAX, fin) != 0 && !fin) {
    }
    return;
  }
  const bool created = record == nullptr;
  if (created) record = create(handle, stream_id);
  if (!on_readable(record) && created) release(record);
}

bool PerfServer::on_readable(Record* record) {
  bool fin = false;
  bool progressed = false;
  for (;;) {
    // The request's size is read in place; upload bytes after it are
    // consumed unread.
    size_t used = 0;
    if (record->size_bytes_read < record->size_bytes.size()) {
      const std::span<const uint8_t> piece = endpoint_.peek(record->handle, record->stream_id, fin);
      while (used < piece.size() && record->size_bytes_read < record->size_bytes.size()) {
        record->size_bytes[record->size_bytes_read++] = piece[used++];
      }
    }
    const size_t n = endpoint_.consume(record->handle, record->stream_id, SIZE_MAX, fin);
    progressed = progressed || n != 0 || fin;
    counters_.uploads_bytes_received += n - used;
    if (n == 0 || fin) break;
  }
  if (!fin || record->responding) return progressed;
  if (record->size_bytes_read < record->size_bytes.size()) {
    // No request: nothing is answered on this stream.
    ++counters_.ignored_streams;
    refuse(record->handle, record->stream_id, /*stop_receiving=*/false);
    release(record);
    return true;
  }
  record->responding = true;
  for (uint8_t byte : record->size_bytes) record->response_size = record->response_size << 8 | byte;
  ready_.push_back(record);
  return true;
}

bool PerfServer::write(Record* record) {
  if (!endpoint_.exists(record->handle)) {
    ++counters_.abandoned_streams;
    release(record);
    return true;
  }
  const std::span<const uint8_t> block = synthetic_block();
  for (;;) {
    const uint64_t remaining = record->response_size - record->response_sent;
    size_t length = static_cast<size_t>(std::min<uint64_t>(config_.chunk_size, remaining));
    // With no room at all the full chunk is offered anyway: the kBlocked it
    // gets is what arms kStreamWritable.
    const uint64_t writable = endpoint_.stream_writable_bytes(record->handle, record->stream_id);
    if (writable != 0 && writable < length) length = static_cast<size_t>(writable);
    transmit::Chunk chunk =
        pool_.adopt(block.data() + record->response_sent % kSyntheticPeriod, length, nullptr,
                    nullptr);  // static bytes: nothing to release
    if (!chunk.valid()) return false;
    const bool fin = length == remaining;
    const conn::SendResult result =
        endpoint_.send(record->handle, record->stream_id, std::move(chunk), fin);
    if (result == conn::SendResult::kBlocked) {
      ready_.remove(record);
      return true;
    }
    if (result != conn::SendResult::kOk) {
      // Reset by the client's STOP_SENDING (its event follows), or closing.
      ++counters_.abandoned_streams;
      release(record);
      return true;
    }
    record->response_sent += length;
    counters_.bytes_sent += length;
    if (fin) {
      ++counters_.streams_completed;
      release(record);
      return true;
    }
  }
}

void PerfServer::pump(Instant now) {
  if (draining_) close_drained(now);
  out_of_records_ = false;
  Record* record = ready_.front();
  while (record != nullptr) {
    Record* next = ReadyList::next(record);
    if (!write(record)) {
      // Every record is in flight: the rest waits for acknowledgments, and
      // this stream goes last so that the streams take turns.
      out_of_records_ = true;
      ready_.remove(record);
      ready_.push_back(record);
      break;
    }
    record = next;
  }
}

}  // namespace dpquic::dataplane
