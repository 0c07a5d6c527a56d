#include "tests/quic/harness/perf_app.h"

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

namespace dpquic::harness {

namespace {

transmit::ChunkPool& pool_until_exit(size_t chunk_size) {
  static std::vector<std::unique_ptr<transmit::ChunkPool>> pools;
  pools.push_back(std::make_unique<transmit::ChunkPool>(chunk_size, 512));
  return *pools.back();
}

}  // namespace

PerfServer::PerfServer(endpoint::Endpoint& endpoint, size_t chunk_size)
    : endpoint_(endpoint), chunk_size_(chunk_size), pool_(pool_until_exit(chunk_size)) {}

void PerfServer::run(Instant) {
  endpoint::EndpointEvent event;
  std::array<uint8_t, 4096> scratch;
  while (endpoint_.poll_event(event)) {
    const auto handle = event.connection;
    const uint64_t stream = event.event.stream_id;
    switch (event.event.type) {
      case conn::ConnectionEventType::kEstablished:
      case conn::ConnectionEventType::kClosed:
        // A handle names a new connection later (after reset_connections
        // without any close event): forget the old one's responses.
        if (event.event.type == conn::ConnectionEventType::kEstablished) ++established_;
        std::erase_if(responses_, [&](const auto& entry) { return entry.first.first == handle; });
        break;
      case conn::ConnectionEventType::kStreamReadable: {
        Response& response = responses_[{handle, stream}];
        bool fin = false;
        for (;;) {
          const size_t n = endpoint_.read(handle, stream, scratch, fin);
          for (size_t i = 0; i < n && response.request_bytes < 8; ++i) {
            response.request[response.request_bytes++] = scratch[i];
          }
          if (n == 0 || fin) break;
        }
        if (fin && !response.request_done && response.request_bytes == 8) {
          response.request_done = true;
          for (int i = 0; i < 8; ++i) response.size = response.size << 8 | response.request[i];
        }
        break;
      }
      default: break;
    }
  }
  for (auto& [key, response] : responses_) {
    if (response.request_done && !response.finished) pump(key.first, key.second, response);
  }
}

void PerfServer::pump(endpoint::ConnectionHandle handle, uint64_t stream, Response& response) {
  conn::Connection* connection = endpoint_.connection(handle);
  if (connection == nullptr) return;
  while (response.queued < response.size) {
    const size_t length =
        static_cast<size_t>(std::min<uint64_t>(chunk_size_, response.size - response.queued));
    if (connection->stream_writable_bytes(stream) < length) break;
    std::array<uint8_t, 64 * 1024> bytes;
    for (size_t i = 0; i < length; ++i) bytes[i] = perf_byte(response.queued + i);
    transmit::Chunk chunk = pool_.copy_from({bytes.data(), length});
    if (!chunk.valid()) break;  // pool empty: wait for acknowledgments
    const bool fin = response.queued + length == response.size;
    if (endpoint_.send(handle, stream, std::move(chunk), fin) != conn::SendResult::kOk) break;
    response.queued += length;
    bytes_queued_ += length;
    if (fin) {
      response.finished = true;
      ++responses_completed_;
    }
  }
  if (response.size == 0 && !response.finished) {
    if (endpoint_.send(handle, stream, pool_.copy_from({}), true) == conn::SendResult::kOk) {
      response.finished = true;
      ++responses_completed_;
    }
  }
}

void PerfClient::request(endpoint::ConnectionHandle handle, uint64_t size) {
  pending_.push_back({handle, size});
  try_send_requests();
}

void PerfClient::try_send_requests() {
  for (size_t i = 0; i < pending_.size();) {
    const Pending request = pending_[i];
    const auto stream =
        endpoint_.open_stream(request.handle, conn::StreamDirection::kBidirectional);
    if (!stream) {
      ++i;
      continue;
    }
    std::array<uint8_t, 8> bytes;
    for (int b = 0; b < 8; ++b) bytes[b] = static_cast<uint8_t>(request.size >> (56 - 8 * b));
    transmit::Chunk chunk = transmit::Chunk::external(bytes.data(), 0, nullptr, nullptr);
    // Small requests: one owned copy per request (test code).
    auto* owned = new std::array<uint8_t, 8>(bytes);
    chunk = transmit::Chunk::external(
        owned->data(), owned->size(),
        [](void* context, const uint8_t*, size_t) {
          delete static_cast<std::array<uint8_t, 8>*>(context);
        },
        owned);
    (void)endpoint_.send(request.handle, *stream, std::move(chunk), true);
    // A fresh record: a handle (and its stream ids) may have served an
    // earlier, closed connection.
    downloads_[{request.handle, *stream}] = Download{.expected = request.size};
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void PerfClient::run(Instant) {
  endpoint::EndpointEvent event;
  std::array<uint8_t, 16 * 1024> scratch;
  while (endpoint_.poll_event(event)) {
    const auto handle = event.connection;
    switch (event.event.type) {
      case conn::ConnectionEventType::kEstablished: ++established_; break;
      case conn::ConnectionEventType::kClosed:
        ++closed_;
        close_events_.push_back(event.event);
        break;
      case conn::ConnectionEventType::kZeroRttRejected:
        // The streams are gone (RFC 9001 §4.6.2): ask again in 1-RTT.
        ++zero_rtt_rejections_;
        for (auto it = downloads_.begin(); it != downloads_.end();) {
          if (it->first.first == handle && !it->second.done) {
            pending_.push_back({handle, it->second.expected});
            bytes_received_ -= it->second.received;
            it = downloads_.erase(it);
          } else {
            ++it;
          }
        }
        break;
      case conn::ConnectionEventType::kStreamReadable: {
        auto it = downloads_.find({handle, event.event.stream_id});
        if (it == downloads_.end()) break;
        Download& download = it->second;
        bool fin = false;
        for (;;) {
          const size_t n = endpoint_.read(handle, event.event.stream_id, scratch, fin);
          for (size_t i = 0; i < n; ++i) {
            if (scratch[i] != perf_byte(download.received + i)) ++mismatches_;
          }
          download.received += n;
          bytes_received_ += n;
          if (n == 0 || fin) break;
        }
        if (fin && !download.done) {
          download.done = true;
          if (download.received != download.expected) ++mismatches_;
          ++completed_;
        }
        break;
      }
      default: break;
    }
  }
  try_send_requests();
}

}  // namespace dpquic::harness
