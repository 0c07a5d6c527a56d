#pragma once
// H3Server's per-connection and per-request state, shared by its
// implementation files (h3_server.cc: events, requests and writing;
// h3_server_control.cc: priorities and the graceful stop). Private to them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "dataplane/app/h3_server.h"
#include "quic/conn/stream_scheduler.h"

namespace dpquic::dataplane {

inline constexpr size_t kLentSlots = 16;
inline constexpr size_t kMaxChunksPerRead = 4;

// --- Per-connection and per-request state -------------------------------------------------------

struct H3Server::Request {
  int64_t stream_id = 0;
  H3RequestHead head;
  bool response_submitted = false;
  bool read_done = false;      // nghttp3 reads nothing more (FIN, reset, or stopped)
  bool write_done = false;     // nghttp3 writes nothing more (FIN taken, reset, or stopped)
  bool write_aborted = false;  // write_done by a reset: nghttp3 must be told
  bool peer_reset = false;
  bool io_failed = false;
  bool reap_queued = false;
  bool blocked_on_pool = false;
  bool blocked_on_cap = false;
  bool return_queued = false;
  bool blocked_on_connection_cap = false;  // in the connection's waiting_for_buffers
  bool blocked_on_credit = false;          // resumed by kStreamWritable
  // Its headers are in and it waits for a file slot (in waiting_for_file).
  bool waiting_for_file = false;
  bool holds_file = false;  // counted in the connection's open_files
  // Both directions are done (the body, its file and buffers are released);
  // the state stays until the transport frees the stream, so that a
  // PRIORITY_UPDATE still reorders the response bytes it holds.
  bool settled = false;
  uint64_t header_budget = 0;  // bytes it may still feed nghttp3 before its headers end
  bool stream_closed = false;  // kStreamClosed arrived
  // What the transport was last told of this response's priority.
  conn::StreamPriority priority;
  bool priority_set = false;
  RequestKey key{};
  H3Server* server = nullptr;
  // Body chunks lent to nghttp3, in stream order, until it reports them
  // acknowledged (which we do as soon as the endpoint took them).
  std::array<transmit::Chunk, kLentSlots> lent;
  size_t lent_head = 0;
  size_t lent_count = 0;
  uint64_t front_acked = 0;
  uint64_t lent_bytes = 0;  // of `lent`, not yet taken by the endpoint
  // After `lent`, so it is destroyed first: buffers released by the chunks
  // then do not report to this request any more.
  ResponseBody body;
};

class H3Server::StreamOwner final : public H3StreamOwner {
 public:
  StreamOwner(H3Server& server, Connection& connection)
      : server_(server), connection_(connection) {}
  transmit::Chunk find_lent(int64_t stream_id, const uint8_t* data, size_t length) override;
  void on_fin_sent(int64_t stream_id) override;
  void on_send_refused(int64_t stream_id) override;

 private:
  H3Server& server_;
  Connection& connection_;
};

struct H3Server::Connection {
  Connection(H3Server& owning_server, endpoint::Endpoint& endpoint,
             endpoint::ConnectionHandle handle, uint64_t connection_serial)
      : session(endpoint, handle),
        serial(connection_serial),
        owner(owning_server, *this),
        server(owning_server),
        buffers(new BufferFlight) {
    buffers->on_return = &H3Server::on_connection_buffer_returned;
    buffers->context = this;
  }
  ~Connection() {
    // nghttp3 first: nothing may call back into requests being destroyed.
    session.destroy();
    requests.clear();
    // Buffers the transport still holds are counted until they return.
    buffers->on_return = nullptr;
    buffers->context = nullptr;
    BufferPool::release_flight(buffers);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Request* find(int64_t stream_id) {
    auto it = requests.find(stream_id);
    return it == requests.end() ? nullptr : it->second.get();
  }

  H3Session session;
  uint64_t serial;
  StreamOwner owner;
  // Graceful stop: the GOAWAY announcing it was sent; the final one, naming
  // the last request taken, is due at final_goaway_at, then sent.
  bool goaway_notice_sent = false;
  bool final_goaway_sent = false;
  Instant final_goaway_at = kNever;
  Instant idle_since = kNever;  // after the final GOAWAY: nothing left to deliver
  std::unordered_map<int64_t, std::unique_ptr<Request>> requests;
  H3Server& server;
  // The group of its file bodies' buffer flights: every pool buffer they
  // have in flight (max_buffers_per_connection).
  BufferFlight* buffers;
  uint32_t open_files = 0;  // file bodies held (max_files_per_connection)
  // Requests waiting for a file slot, and bodies waiting for one of the
  // connection's buffers to come back (stream IDs; entries whose request
  // stopped waiting are skipped).
  std::vector<int64_t> waiting_for_file;
  std::vector<int64_t> waiting_for_buffers;
  bool buffers_return_queued = false;  // in H3Server::connection_returns_
  // The highest request stream that had state: a reset of a stream above
  // it was never answered, one below it was.
  int64_t highest_request = -1;
};

}  // namespace dpquic::dataplane
