#pragma once
// The client side of the perf protocol (see perf_server.h), for the interop
// and bench clients and the load generator.
//
// request() queues a request on a connection; it goes out as soon as a
// bidirectional stream can be opened (at once when 0-RTT keys or 1-RTT keys
// are there, later when the peer's stream limit allows): the 8-byte
// big-endian response size, `upload_size` synthetic bytes, FIN. Every
// response byte is checked against synthetic_byte(offset) as it is read,
// without being stored, and the handler hears the outcome once.
//
// When the server refuses 0-RTT (kZeroRttRejected) the requests that went
// out on the rejected streams are sent again, in order, on new streams.
// When the connection closes, its requests complete with kClosed.
//
// Requests are pooled records found by (connection, stream) in a hash map;
// upload bytes are zero-copy views of the synthetic block; nothing is
// allocated per request once warm. Like PerfServer, the client must outlive
// the connections holding its chunks.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/app/application.h"
#include "dataplane/app/perf_streams.h"
#include "dataplane/app/synthetic_body.h"
#include "quic/endpoint/endpoint.h"
#include "quic/transmit/chunk.h"

namespace dpquic::dataplane {

// Application error code of streams the client abandons (its upload when
// the response ended early, a response larger than asked for).
inline constexpr uint64_t kPerfRequestCancelled = 0x2;

enum class PerfResult : uint8_t {
  kOk,               // exactly response_size bytes, all matching, then FIN
  kSizeMismatch,     // the bytes matched but there were fewer or more
  kContentMismatch,  // some byte differed from synthetic_byte(offset)
  kReset,            // the server reset the response or stopped the upload
  kClosed,           // the connection closed first
};

struct PerfOutcome {
  PerfResult result = PerfResult::kOk;
  uint64_t bytes_received = 0;
  uint64_t error_code = 0;  // kReset: the stream's code; kClosed: the connection's
};

// Told about each request; the handler may call request() from inside.
class PerfResponseHandler {
 public:
  virtual ~PerfResponseHandler() = default;
  virtual void on_complete(uint64_t request_id, const PerfOutcome& outcome) = 0;
  // The request went out on `stream_id` (again, on a new stream, after a
  // 0-RTT rejection).
  virtual void on_stream_opened(uint64_t request_id, endpoint::ConnectionHandle handle,
                                uint64_t stream_id) {
    (void)request_id, (void)handle, (void)stream_id;
  }
};

struct PerfClientConfig {
  // Bytes per upload chunk (at most kSyntheticBlockSize - kSyntheticPeriod).
  size_t chunk_size = 64 * 1024 - kSyntheticPeriod;
  // Upload chunks in flight across all connections (never grown).
  size_t adopt_records = 4096;
  // 8-byte request headers in flight at first (grown when exhausted).
  size_t header_buffers = 256;
};

struct PerfClientCounters {
  uint64_t requests_sent = 0;  // streams opened for requests (resends included)
  uint64_t requests_ok = 0;
  uint64_t requests_failed = 0;  // every other outcome
  // Response bytes read on live and finished requests (bytes of streams
  // rejected with 0-RTT are taken back out).
  uint64_t response_bytes_received = 0;
  uint64_t upload_bytes_sent = 0;  // queued, after the 8-byte headers
  uint64_t zero_rtt_rejections = 0;
};

// Where a request is.
struct PerfProgress {
  endpoint::ConnectionHandle handle = 0;
  std::optional<uint64_t> stream_id;  // none while waiting for a stream
  uint64_t bytes_received = 0;
  uint64_t upload_sent = 0;
};

class PerfClient final : public Application {
 public:
  // Throws std::invalid_argument on a chunk_size of 0 or above the limit.
  PerfClient(endpoint::Endpoint& endpoint, const PerfClientConfig& config = PerfClientConfig());
  ~PerfClient() override;
  PerfClient(const PerfClient&) = delete;
  PerfClient& operator=(const PerfClient&) = delete;

  // Queues a request and returns its id (never 0). `handler` (not null)
  // must outlive the request.
  uint64_t request(endpoint::ConnectionHandle handle, uint64_t response_size, uint64_t upload_size,
                   PerfResponseHandler* handler);

  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  // True while an upload could write but no adopt record was free.
  bool wants_pump() const override { return out_of_records_; }

  // Completes every request as kClosed (after Endpoint::reset_connections(),
  // which delivers no kClosed).
  void forget_connections();

  // A live request's state; nullopt once it completed (or for an unknown id).
  std::optional<PerfProgress> progress(uint64_t request_id) const;
  const PerfClientCounters& counters() const { return counters_; }
  size_t live_requests() const { return requests_.live(); }

 private:
  struct Request {
    uint32_t slot = 0;
    uint64_t id = 0;  // 0: free
    endpoint::ConnectionHandle handle = 0;
    PerfResponseHandler* handler = nullptr;
    uint64_t response_size = 0;
    uint64_t upload_size = 0;
    bool has_stream = false;
    uint64_t stream_id = 0;
    bool header_sent = false;
    uint64_t upload_sent = 0;
    bool fin_sent = false;
    uint64_t received = 0;
    bool content_ok = true;
    bool closing = false;                 // being completed by kClosed
    ListLinks<Request> connection_links;  // every request of the connection, in order
    ListLinks<Request> pending_links;     // waiting for a stream
    ListLinks<Request> ready_links;       // an upload pump() may write
  };
  using RequestList = IntrusiveList<Request, &Request::connection_links>;
  using PendingList = IntrusiveList<Request, &Request::pending_links>;
  using ReadyList = IntrusiveList<Request, &Request::ready_links>;
  struct ConnectionState {
    RequestList requests;
    PendingList pending;
    bool queued = false;  // on pending_connections_
  };

  ConnectionState& state_of(endpoint::ConnectionHandle handle);
  void queue_connection(endpoint::ConnectionHandle handle);
  // Opens streams for the connection's pending requests while it can;
  // `complete_if_gone`: a connection that no longer exists fails them.
  void open_pending(endpoint::ConnectionHandle handle, bool complete_if_gone);
  // Writes header and upload; false if the pool had no adopt record.
  bool write(Request* request);
  void on_readable(Request* request);
  void on_zero_rtt_rejected(endpoint::ConnectionHandle handle);
  // Completes every request of the connection that is there now.
  void close_connection(endpoint::ConnectionHandle handle, uint64_t error_code);
  // Reports the outcome and frees the request; abandons what is left of the
  // stream (`stop_receiving`: the response is not read to its end).
  void finish(Request* request, PerfResult result, uint64_t error_code, bool stop_receiving);

  endpoint::Endpoint& endpoint_;
  PerfClientConfig config_;
  transmit::ChunkPool pool_;  // 8-byte header buffers and upload adopt records
  RecordPool<Request> requests_;
  StreamTable<Request> table_;
  std::vector<ConnectionState> connections_;  // indexed by handle
  std::vector<endpoint::ConnectionHandle> pending_connections_;
  ReadyList ready_;
  uint64_t sequence_ = 0;
  bool out_of_records_ = false;
  PerfClientCounters counters_;
};

}  // namespace dpquic::dataplane
