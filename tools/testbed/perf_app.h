#pragma once
// The perf protocol (draft-banks-quic-performance) for the scenario tests:
// thin adapters over the dataplane's PerfServer and PerfClient
// (dataplane/app/perf_server.h, perf_client.h) that poll their endpoint for
// events themselves, so a test drives each with run(now) after every input.
// Responses are the synthetic body; the client checks every byte against it
// without storing them.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/app/synthetic_body.h"
#include "quic/endpoint/endpoint.h"
#include "quic/wire/connection_id.h"

namespace dpquic::harness {

// The byte at `offset` of every response.
inline uint8_t perf_byte(uint64_t offset) { return dataplane::synthetic_byte(offset); }

// Which connection a handle names: Endpoint::reset_connections() frees
// connections without a kClosed event, and a handle then names a new one.
// Keyed by the connection's original DCID, which is random per connection.
class HandleIdentity {
 public:
  // Whether `handle` now names another connection than when last seen.
  bool changed(endpoint::Endpoint& endpoint, endpoint::ConnectionHandle handle);
  void forget(endpoint::ConnectionHandle handle);

 private:
  std::vector<std::optional<wire::ConnectionId>> ids_;  // indexed by handle
};

class PerfServer {
 public:
  // `chunk_size` is capped at what the synthetic block serves in one view.
  explicit PerfServer(endpoint::Endpoint& endpoint, size_t chunk_size = 16 * 1024);
  // Connections may still hold the app's chunks (tests declare it after the
  // endpoints): the dataplane app lives on until the process exits.
  ~PerfServer();
  PerfServer(const PerfServer&) = delete;
  PerfServer& operator=(const PerfServer&) = delete;

  // Reads events, answers requests, writes as much as the streams allow.
  void run(Instant now);

  uint64_t responses_completed() const { return app_->streams_completed(); }
  uint64_t bytes_queued() const { return app_->bytes_sent(); }
  uint64_t established() const { return established_; }
  dataplane::PerfServer& app() { return *app_; }

 private:
  endpoint::Endpoint& endpoint_;
  std::unique_ptr<dataplane::PerfServer> app_;
  HandleIdentity identity_;
  uint64_t established_ = 0;
};

class PerfClient final : private dataplane::PerfResponseHandler {
 public:
  explicit PerfClient(endpoint::Endpoint& endpoint);
  ~PerfClient() override;
  PerfClient(const PerfClient&) = delete;
  PerfClient& operator=(const PerfClient&) = delete;

  // Queues a download of `size` bytes on `handle`, sent once the connection
  // can open a stream (at once with 0-RTT keys).
  void request(endpoint::ConnectionHandle handle, uint64_t size);
  void run(Instant now);

  // Downloads that ended with FIN (whether or not their bytes were right).
  uint64_t completed() const { return completed_; }
  uint64_t bytes_received() const { return app_->counters().response_bytes_received; }
  // Downloads whose bytes or size were wrong.
  uint64_t mismatches() const { return mismatches_; }
  uint64_t established() const { return established_; }
  uint64_t closed() const { return closed_; }
  uint64_t zero_rtt_rejections() const { return app_->counters().zero_rtt_rejections; }
  const std::vector<conn::ConnectionEvent>& close_events() const { return close_events_; }
  // Bytes received so far on one download (0 if unknown), and whether it
  // finished.
  uint64_t received_on(endpoint::ConnectionHandle handle, uint64_t stream) const;
  bool done_on(endpoint::ConnectionHandle handle, uint64_t stream) const;
  dataplane::PerfClient& app() { return *app_; }

 private:
  struct Request {
    endpoint::ConnectionHandle handle;
    uint64_t size;
    std::optional<uint64_t> stream;
  };
  struct Download {
    uint64_t request_id = 0;
    uint64_t received = 0;  // once finished
    bool finished = false;  // completed, reset or closed
    bool done = false;      // ended with FIN
  };
  void end_stale_connection(Instant now, endpoint::ConnectionHandle handle);
  void on_complete(uint64_t request_id, const dataplane::PerfOutcome& outcome) override;
  void on_stream_opened(uint64_t request_id, endpoint::ConnectionHandle handle,
                        uint64_t stream_id) override;

  endpoint::Endpoint& endpoint_;
  std::unique_ptr<dataplane::PerfClient> app_;
  HandleIdentity identity_;
  std::unordered_map<uint64_t, Request> requests_;  // live, by request id
  std::optional<Request> pending_request_;          // inside request()
  std::map<std::pair<endpoint::ConnectionHandle, uint64_t>, Download> downloads_;
  uint64_t completed_ = 0;
  uint64_t mismatches_ = 0;
  uint64_t established_ = 0;
  uint64_t closed_ = 0;
  std::vector<conn::ConnectionEvent> close_events_;
};

// Runs the two applications after every input of their endpoints in `pair`.
template <typename Pair>
void attach(Pair& pair, PerfServer& server, PerfClient& client) {
  pair.server_node->set_application([&server](Instant now) { server.run(now); });
  pair.client_node->set_application([&client](Instant now) { client.run(now); });
}

}  // namespace dpquic::harness
