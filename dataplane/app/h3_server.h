#pragma once
// The HTTP/3 server application (RFC 9114, nghttp3): GET and HEAD of files
// under a document root, with validators, conditional and range requests,
// and of `/<N>` synthetic bodies of exactly N bytes
// (dataplane/app/synthetic_body.h). Other methods get 405; anything else
// 404. What is answered is decided in dataplane/app/h3_response.h; this
// class moves requests and responses through nghttp3 and QUIC.
//
// One nghttp3 server connection per QUIC connection, created at the first
// event of its handle (with 0-RTT, stream events may precede kEstablished).
// Bodies move without copies: synthetic bodies are views of static memory,
// file bodies are read (pread) into pooled buffers as the send path takes
// them, never a whole file at once; a file stays open while its response is
// being sent. What a client can make the server hold is bounded three ways:
// - a file body is read no further ahead than the client's flow-control
//   credit on its stream allows, plus a margin (read_limit() in
//   h3_server_responses.cc): a client that grants no credit pins two
//   buffers per response, not the pool;
// - a response has at most `max_buffers_per_response` buffers in flight,
//   and a connection at most `max_buffers_per_connection`, whatever it
//   grants and acknowledges;
// - a connection holds at most `max_files_per_connection` files open;
//   further requests wait, most urgent first, for one of its responses to
//   end.
//
// Lifetime: chunks queued in the endpoint refer to this application's pool;
// destroy it only after Endpoint::reset_connections() (or after the
// endpoint).

#include <nghttp3/nghttp3.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataplane/app/application.h"
#include "dataplane/app/body_source.h"
#include "dataplane/app/h3_response.h"
#include "dataplane/app/h3_session.h"
#include "dataplane/app/mime_types.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

// What a request's HEADERS frame may take beyond the field section size
// (frame and QPACK prefixes, literal encodings).
inline constexpr uint64_t kHeaderSlack = 1024;

struct H3ServerConfig {
  // Document root; empty: synthetic bodies only.
  std::string root;
  // Media types of the files under root (required with a root). Loaded once
  // and shared read-only, e.g. by every shard.
  std::shared_ptr<const MimeTypes> mime_types;
  // The application's buffer pool: chunk_count buffers of chunk_size bytes.
  size_t chunk_size = 16 * 1024;
  size_t chunk_count = 4096;
  // The largest `/<N>` served.
  uint64_t max_synthetic_bytes = 1ull << 40;
  // Pool buffers one file response may have in flight at once.
  uint32_t max_buffers_per_response = 64;
  // Pool buffers the file responses of one connection may have in flight at
  // once, counting those the transport still holds after a response ended:
  // whatever a client grants or acknowledges, its connection takes at most
  // this much of the pool (1/32 of the default one). Two responses at full
  // speed; the transport sends non-incremental responses one after another
  // anyway.
  uint32_t max_buffers_per_connection = 128;
  // Files one connection's responses may hold open at once. A response keeps
  // its file until its last byte is handed to QUIC, which a client that
  // grants no credit can put off for as long as the connection lives: this
  // bounds its share of the process's descriptors (RLIMIT_NOFILE, raised to
  // the hard limit at start; a file that cannot be opened for want of one is
  // a 503). Further requests wait, not fail: they are answered, most urgent
  // first, as the connection's file responses end. A page's hundred
  // sub-resources lose nothing by it, since responses of one urgency go out
  // one after another, and a 503 would be a broken page.
  uint32_t max_files_per_connection = 32;
  // Longest :path accepted (longer: 414).
  size_t max_path_length = 4096;
  // Longest if-none-match, if-modified-since, range or if-range value
  // (longer: malformed, so the whole file is served).
  size_t max_conditional_field_length = 1024;
  // SETTINGS_MAX_FIELD_SECTION_SIZE we announce (and enforce).
  uint64_t max_field_section_size = 64 * 1024;
  // QPACK (RFC 9204) as the client's encoder may use it: a dynamic table of
  // this many bytes per connection, and this many request streams whose
  // header section waits for encoder instructions. Chromium uses the table
  // only when streams may block; with it a page's request headers shrink to
  // about a third. A blocked stream is buffered inside nghttp3, so each
  // request feeds at most max_field_section_size + kHeaderSlack bytes before
  // its header section ends: blocked streams hold at most
  // qpack_blocked_streams times that per connection.
  size_t qpack_table_capacity = 4096;
  size_t qpack_blocked_streams = 16;
};

struct H3ServerStats {
  uint64_t connections = 0;
  uint64_t requests = 0;
  uint64_t responses_2xx = 0;
  uint64_t responses_3xx = 0;
  uint64_t responses_4xx = 0;
  uint64_t responses_5xx = 0;
  uint64_t body_bytes_sent = 0;    // handed to QUIC
  uint64_t streams_reset = 0;      // responses we aborted (peer stop, file error)
  uint64_t connection_errors = 0;  // connections closed for an HTTP/3 error
  uint64_t buffer_shortages = 0;   // a write stopped for lack of pool buffers
  uint64_t body_waits = 0;    // a file body waited for buffers (pool, its cap or its connection's)
  uint64_t credit_waits = 0;  // a file body waited for the client's flow-control credit
  uint64_t file_waits = 0;    // a request waited for one of its connection's file slots
};

class H3Server final : public Application {
 public:
  // Throws std::runtime_error for a bad configuration (e.g. root not a
  // directory, or no mime_types with a root).
  H3Server(endpoint::Endpoint& endpoint, const H3ServerConfig& config);
  ~H3Server() override;
  H3Server(const H3Server&) = delete;
  H3Server& operator=(const H3Server&) = delete;

  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  bool wants_pump() const override;
  // Closes every h3 connection with H3_NO_ERROR.
  void shutdown(Instant now) override;
  // Graceful stop (RFC 9114 §5.2): a GOAWAY announcing it at once, then,
  // a couple of round trips later, the final GOAWAY naming the last request
  // taken (later ones are rejected with H3_REQUEST_REJECTED, which a client
  // may retry elsewhere); requests taken finish, and each connection is
  // closed with H3_NO_ERROR once every response was acknowledged and it
  // stayed idle for kDrainIdleGrace (unless the client closed it first).
  void drain(Instant now) override;
  Instant next_deadline() const override { return next_drain_step_; }

  const H3ServerStats& stats() const { return stats_; }
  size_t connection_count() const { return connection_count_; }
  // Requests not yet settled, both directions (all connections).
  size_t open_request_count() const;
  const BufferPool& pool() const { return pool_; }
  // What one connection's file responses hold: open files, and pool buffers
  // in flight (0 for both without such a connection).
  size_t open_files(endpoint::ConnectionHandle handle) const;
  size_t buffers_in_flight(endpoint::ConnectionHandle handle) const;

 private:
  struct Request;
  struct Connection;
  // (connection serial, stream): names a request in the deferred lists
  // without a pointer that may dangle.
  struct RequestKey {
    endpoint::ConnectionHandle handle;
    uint64_t serial;
    int64_t stream_id;
  };
  struct ConnectionKey {
    endpoint::ConnectionHandle handle;
    uint64_t serial;
  };
  class StreamOwner;

  Connection* find(endpoint::ConnectionHandle handle);
  Connection* connection_for(Instant now, endpoint::ConnectionHandle handle);
  Request* find_request(const RequestKey& key);
  void free_connection(endpoint::ConnectionHandle handle);
  void mark_ready(Connection& connection);
  void drive(Instant now, Connection& connection);
  void on_stream_readable(Instant now, Connection& connection, uint64_t stream_id);
  void on_stream_reset(Instant now, Connection& connection, uint64_t stream_id);
  void on_stream_stopped(Instant now, Connection& connection, uint64_t stream_id);
  void on_request_readable(Instant now, Connection& connection, uint64_t stream_id);
  // A request whose header section outgrew its budget: both directions
  // reset with H3_EXCESSIVE_LOAD.
  void refuse_excessive(Instant now, Connection& connection, Request& request);
  void on_stream_closed(Connection& connection, uint64_t stream_id);
  Request& request_for(Connection& connection, int64_t stream_id);
  void reap(Instant now, Connection& connection);
  void queue_reap(Connection& connection, Request& request);
  // Both directions are done: the body, its file and buffers go back.
  void settle(Connection& connection, Request& request);
  void fail(Instant now, Connection& connection, int liberr);

  // Priorities and the graceful stop (h3_server_control.cc).
  // Tells nghttp3 how many request streams the client may open (it refuses
  // a PRIORITY_UPDATE naming any other).
  void sync_stream_limit(Connection& connection);
  // The transport sends responses in the order of RFC 9218 priorities:
  // from the request's `priority` header, then PRIORITY_UPDATE frames.
  void apply_priority(Connection& connection, Request& request);
  void apply_priorities(Connection& connection);
  void send_goaway(Instant now, Connection& connection);
  void advance_drain(Instant now);
  void send_final_goaway(Instant now, Connection& connection);
  void close_when_idle(Instant now, Connection& connection);

  // Request handling (from nghttp3 callbacks, and for requests that waited
  // for a file slot, from reap()).
  void respond(Connection& connection, Request& request);
  // Answers waiting requests, most urgent first, while the connection has
  // file slots free.
  void serve_waiting(Connection& connection);
  // Lets the most urgent of the requests waiting for buffers read again, as
  // many as the connection has buffers free.
  void resume_buffer_waiters(Connection& connection);
  // Bytes of a file body that may be read now (0: wait for credit).
  uint64_t read_limit(Connection& connection, const Request& request);
  int submit(Connection& connection, Request& request, const H3ResponseHeaders& headers,
             bool with_body);
  nghttp3_ssize read_body(Connection& connection, Request& request, nghttp3_vec* vec, size_t veccnt,
                          uint32_t* flags);
  static void on_buffer_returned(void* context);
  static void on_connection_buffer_returned(void* context);

  // nghttp3 callbacks.
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
  static nghttp3_ssize cb_read_data(nghttp3_conn*, int64_t, nghttp3_vec*, size_t, uint32_t*, void*,
                                    void*);

  endpoint::Endpoint& endpoint_;
  H3ServerConfig config_;
  H3RequestLimits limits_;
  BufferPool pool_;
  ChunkStager stager_;
  H3Responder responder_;   // after pool_: holds a chunk of it
  size_t reserve_;          // pool buffers file reads leave for headers and frames
  uint64_t credit_margin_;  // see read_limit()
  nghttp3_callbacks callbacks_{};
  nghttp3_settings settings_{};
  std::vector<uint8_t> scratch_;
  std::vector<std::unique_ptr<Connection>> connections_;  // by handle
  size_t connection_count_ = 0;
  uint64_t next_serial_ = 1;
  H3ReadyList ready_;                 // connections with writing to do
  std::vector<RequestKey> starved_;   // bodies waiting for pool buffers
  std::vector<RequestKey> returned_;  // capped bodies that got a buffer back
  // Connections that got a buffer back while some of their bodies wait for
  // one (max_buffers_per_connection).
  std::vector<ConnectionKey> connection_returns_;
  H3ServerStats stats_;
  uint64_t header_budget_;  // what a request may feed nghttp3 before its headers end
  bool draining_ = false;
  Instant next_drain_step_ = kNever;  // the earliest final GOAWAY or idle close due
};

}  // namespace dpquic::dataplane
