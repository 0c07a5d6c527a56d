#pragma once
// The HTTP/3 client application (nghttp3): requests without bodies (GET,
// HEAD, ...) on connections the caller opened with Endpoint::connect, for
// interop tests and the load generator.
//
// request() queues; pump() sends once the connection can open a
// bidirectional stream (at once with 0-RTT keys). The nghttp3 client
// connection is created at the first event of the handle or the first
// request, whichever comes first. If the server refuses 0-RTT, every request
// not yet answered is sent again; when the connection closes, every open
// request completes with kConnectionClosed. A server's GOAWAY (RFC 9114
// §5.2) goes to the H3GoawayHandler: the connection takes no new request,
// and the requests the server did not process (not sent yet, or on a stream
// at or above the GOAWAY's ID) complete with kRefused, for the owner to send
// on another connection; the others complete as usual.
//
// Handlers are called from on_event()/pump(); they may call request() (it
// only queues). Lifetime as for H3Server: destroy the client after
// Endpoint::reset_connections() or after the endpoint.

#include <nghttp3/nghttp3.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dataplane/app/application.h"
#include "dataplane/app/body_source.h"
#include "dataplane/app/h3_session.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

struct H3Request {
  std::string method = "GET";
  std::string scheme = "https";
  std::string authority;
  std::string path = "/";
  // Sent after the pseudo-header fields and user-agent, in order (names in
  // lowercase, e.g. range, if-none-match, priority).
  std::vector<std::pair<std::string, std::string>> fields;
};

enum class H3Result : uint8_t {
  kOk,                // the whole response arrived
  kReset,             // the server reset the response stream (error_code)
  kConnectionClosed,  // the connection ended first (error_code: its close code)
  kProtocolError,     // malformed response or HTTP/3 error (error_code: H3 code)
  // Not processed by the server, and nothing of a response arrived: its
  // GOAWAY came first or named a lower stream ID, or it reset the stream
  // with H3_REQUEST_REJECTED (error_code). Safe to send on another connection.
  kRefused,
};

struct H3Outcome {
  H3Result result = H3Result::kOk;
  uint64_t error_code = 0;
};

class H3ResponseHandler {
 public:
  virtual ~H3ResponseHandler() = default;
  // The final response's header section (interim 1xx responses are not
  // reported).
  virtual void on_headers(uint64_t request_id, int status,
                          std::optional<uint64_t> content_length) = 0;
  // Each field of the final response's header section, before on_headers
  // (optional).
  virtual void on_header(uint64_t /*request_id*/, std::string_view /*name*/,
                         std::string_view /*value*/) {}
  virtual void on_body(uint64_t request_id, std::span<const uint8_t> bytes) = 0;
  // Last call for the request.
  virtual void on_complete(uint64_t request_id, H3Outcome outcome) = 0;
};

// Told when a server stops taking requests on a connection (GOAWAY).
class H3GoawayHandler {
 public:
  virtual ~H3GoawayHandler() = default;
  // From now on the connection takes no new request (accepts_requests() is
  // false). Requests not sent yet and those on streams at or above
  // `stream_id` without a response complete with kRefused right after this
  // call. Once per GOAWAY frame: a draining server sends two, the second
  // with the lower ID.
  virtual void on_goaway(endpoint::ConnectionHandle handle, uint64_t stream_id) = 0;
};

struct H3ClientConfig {
  // Buffers for the bytes sent (HEADERS, control and QPACK streams).
  size_t chunk_size = 16 * 1024;
  size_t chunk_count = 256;
  uint64_t max_field_section_size = 64 * 1024;
};

struct H3ClientStats {
  uint64_t requests_sent = 0;  // a request sent twice after a 0-RTT refusal counts twice
  uint64_t completed_ok = 0;
  uint64_t failed = 0;
  uint64_t refused = 0;  // completed with kRefused
  uint64_t body_bytes_received = 0;
  uint64_t zero_rtt_resends = 0;
  uint64_t goaways_received = 0;  // GOAWAY frames (RFC 9114 §5.2)
  uint64_t cancelled = 0;
};

class H3Client final : public Application {
 public:
  explicit H3Client(endpoint::Endpoint& endpoint, const H3ClientConfig& config = {});
  ~H3Client() override;
  H3Client(const H3Client&) = delete;
  H3Client& operator=(const H3Client&) = delete;

  // Queues a request; returns its id (> 0), or 0 when `handle` names no
  // live connection (the handler is then never called).
  uint64_t request(endpoint::ConnectionHandle handle, const H3Request& request,
                   H3ResponseHandler* handler);
  // Sends a PRIORITY_UPDATE (RFC 9218 §7) for a request already sent;
  // false if it is not (yet) on a stream.
  bool update_priority(endpoint::ConnectionHandle handle, uint64_t request_id, uint8_t urgency,
                       bool incremental);
  // Cancels a request the way a browser does: STOP_SENDING and RESET_STREAM
  // with H3_REQUEST_CANCELLED on its stream (a request not sent yet is
  // dropped). The request is complete at once and its handler is not called
  // again. False when `request_id` names no open request of `handle`.
  bool cancel(endpoint::ConnectionHandle handle, uint64_t request_id);
  // Whether `handle` is a live connection that takes new requests (no
  // GOAWAY received, no HTTP/3 error).
  bool accepts_requests(endpoint::ConnectionHandle handle);
  // Null (the default): GOAWAYs show only as kRefused outcomes.
  void set_goaway_handler(H3GoawayHandler* handler) { goaway_handler_ = handler; }

  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  bool wants_pump() const override;

  const H3ClientStats& stats() const { return stats_; }
  // Requests queued or in progress (all connections).
  size_t open_requests() const { return requests_.size(); }

 private:
  struct Request;
  struct Connection;
  class StreamOwner;

  Connection* find(endpoint::ConnectionHandle handle);
  Connection* connection_for(endpoint::ConnectionHandle handle);
  Request* request_on(Connection& connection, int64_t stream_id);
  int create_session(Connection& connection);
  void mark_ready(Connection& connection);
  void drive(Instant now, Connection& connection);
  void send_queued(Instant now, Connection& connection);
  void on_stream_readable(Instant now, Connection& connection, uint64_t stream_id);
  void on_stream_reset(Instant now, Connection& connection, uint64_t stream_id, uint64_t code);
  void on_zero_rtt_rejected(Instant now, Connection& connection);
  // After a GOAWAY frame was read: the handler, then the refused requests.
  void apply_goaway(Connection& connection);
  // Completes request `id` with kRefused unless its response has begun.
  void refuse(Connection& connection, uint64_t id);
  void on_closed(endpoint::ConnectionHandle handle, uint64_t code);
  void fail(Instant now, Connection& connection, int liberr);
  void complete(Connection& connection, Request& request, H3Outcome outcome);
  void queue_reap(Connection& connection, Request& request);
  void reap(Instant now, Connection& connection);

  static int cb_acked_stream_data(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int cb_stream_close(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int cb_recv_data(nghttp3_conn*, int64_t, const uint8_t*, size_t, void*, void*);
  static int cb_deferred_consume(nghttp3_conn*, int64_t, size_t, void*, void*);
  static int cb_begin_headers(nghttp3_conn*, int64_t, void*, void*);
  static int cb_recv_header(nghttp3_conn*, int64_t, int32_t, nghttp3_rcbuf*, nghttp3_rcbuf*,
                            uint8_t, void*, void*);
  static int cb_end_headers(nghttp3_conn*, int64_t, int, void*, void*);
  static int cb_end_stream(nghttp3_conn*, int64_t, void*, void*);
  static int cb_stop_sending(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int cb_reset_stream(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int cb_shutdown(nghttp3_conn*, int64_t, void*);

  endpoint::Endpoint& endpoint_;
  H3ClientConfig config_;
  BufferPool pool_;
  ChunkStager stager_;
  nghttp3_callbacks callbacks_{};
  nghttp3_settings settings_{};
  std::vector<uint8_t> scratch_;
  std::vector<std::unique_ptr<Connection>> connections_;             // by handle
  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;  // by id
  H3ReadyList ready_;  // connections with writing to do
  H3GoawayHandler* goaway_handler_ = nullptr;
  // Requests queued but the peer's stream limit reached: tried each pump
  // (no event tells when MAX_STREAMS raised it).
  std::vector<endpoint::ConnectionHandle> stream_limited_;
  uint64_t next_id_ = 1;
  H3ClientStats stats_;
};

}  // namespace dpquic::dataplane
