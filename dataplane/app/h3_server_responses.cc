// H3Server: answering requests and streaming their bodies within what one
// connection may hold: its file slots (requests beyond them wait, most
// urgent first), its pool buffers, and its client's flow-control credit on
// each stream (read_limit()).

#include <nghttp3/nghttp3.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <ctime>
#include <span>
#include <utility>
#include <vector>

#include "dataplane/app/h3_server_state.h"

namespace dpquic::dataplane {

size_t H3Server::open_files(endpoint::ConnectionHandle handle) const {
  return handle < connections_.size() && connections_[handle] ? connections_[handle]->open_files
                                                              : 0;
}

size_t H3Server::buffers_in_flight(endpoint::ConnectionHandle handle) const {
  return handle < connections_.size() && connections_[handle]
             ? connections_[handle]->buffers->in_flight
             : 0;
}

// --- Requests -----------------------------------------------------------------------------------

void H3Server::respond(Connection& connection, Request& request) {
  H3Response response;
  const bool file_slot = connection.open_files < config_.max_files_per_connection;
  responder_.respond(request.head, static_cast<int64_t>(std::time(nullptr)), file_slot, response,
                     on_buffer_returned, &request);
  if (response.waits_for_file) {
    ++stats_.file_waits;
    request.waiting_for_file = true;
    connection.waiting_for_file.push_back(request.stream_id);
    return;
  }
  request.waiting_for_file = false;
  ++stats_.requests;
  if (response.with_body) {
    request.body = std::move(response.body);
    if (request.body.is_file()) {
      request.body.join_group(connection.buffers, config_.max_buffers_per_connection);
      request.holds_file = true;
      ++connection.open_files;
    }
  }
  submit(connection, request, response.headers, response.with_body);
}

namespace {

// The request of `waiting` (stream IDs) that goes first: the most urgent
// (RFC 9218), then the oldest. Entries whose request no longer waits
// (`still_waits` false) are dropped; null when none is left.
template <typename Request, typename Find, typename StillWaits>
Request* take_most_urgent(nghttp3_conn* conn, std::vector<int64_t>& waiting, Find find,
                          StillWaits still_waits) {
  std::erase_if(waiting, [&](int64_t id) {
    const Request* request = find(id);
    return request == nullptr || !still_waits(*request);
  });
  if (waiting.empty()) return nullptr;
  size_t best = 0;
  uint32_t best_urgency = NGHTTP3_URGENCY_LEVELS;
  for (size_t i = 0; i < waiting.size(); ++i) {
    nghttp3_pri pri{NGHTTP3_DEFAULT_URGENCY, 0};
    nghttp3_conn_get_stream_priority(conn, &pri, waiting[i]);
    if (pri.urgency < best_urgency || (pri.urgency == best_urgency && waiting[i] < waiting[best])) {
      best = i;
      best_urgency = pri.urgency;
    }
  }
  Request* request = find(waiting[best]);
  waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(best));
  return request;
}

}  // namespace

void H3Server::serve_waiting(Connection& connection) {
  const auto find = [&connection](int64_t id) { return connection.find(id); };
  const auto waits = [](const Request& request) { return request.waiting_for_file; };
  while (connection.open_files < config_.max_files_per_connection &&
         !connection.waiting_for_file.empty()) {
    Request* request = take_most_urgent<Request>(connection.session.conn(),
                                                 connection.waiting_for_file, find, waits);
    if (request == nullptr) break;
    respond(connection, *request);
    if (request->response_submitted) {
      apply_priority(connection, *request);
    } else {
      // nghttp3 refused the response: the stream is reset.
      request->waiting_for_file = false;
      request->io_failed = true;
      queue_reap(connection, *request);
    }
  }
}

void H3Server::resume_buffer_waiters(Connection& connection) {
  const auto find = [&connection](int64_t id) { return connection.find(id); };
  const auto waits = [](const Request& request) { return request.blocked_on_connection_cap; };
  const uint32_t cap = config_.max_buffers_per_connection;
  for (uint32_t free = cap - std::min(cap, connection.buffers->in_flight); free != 0; --free) {
    Request* request = take_most_urgent<Request>(connection.session.conn(),
                                                 connection.waiting_for_buffers, find, waits);
    if (request == nullptr) break;
    request->blocked_on_connection_cap = false;
    nghttp3_conn_resume_stream(connection.session.conn(), request->stream_id);
    mark_ready(connection);
  }
}

uint64_t H3Server::read_limit(Connection& connection, const Request& request) {
  // The transport takes what the client's credit on the stream allows plus
  // kSendAheadOfCredit (or less, if its buffer is full), and reports
  // kStreamWritable, which resumes a body waiting for credit, only after it
  // refused a write. So a body waits only when the writes of what nghttp3
  // already holds of it (request.lent_bytes) are certain to meet a refusal:
  // when they exceed what the transport takes by more than it may accept
  // past that (one piece, at most a buffer, while nothing waits for
  // credit). Reading goes that far and no further: at most the credit plus
  // kSendAheadOfCredit plus a buffer is read ahead.
  const uint64_t writable = endpoint_.stream_writable_bytes(
      connection.session.handle(), static_cast<uint64_t>(request.stream_id));
  const uint64_t bound = writable + credit_margin_;
  return bound > request.lent_bytes ? bound - request.lent_bytes : 0;
}

int H3Server::submit(Connection& connection, Request& request, const H3ResponseHeaders& headers,
                     bool with_body) {
  nghttp3_data_reader reader{cb_read_data};
  const int rv =
      nghttp3_conn_submit_response(connection.session.conn(), request.stream_id, headers.data(),
                                   headers.size(), with_body ? &reader : nullptr);
  if (rv != 0) return rv;
  request.response_submitted = true;
  switch (headers.status() / 100) {
    case 2: ++stats_.responses_2xx; break;
    case 3: ++stats_.responses_3xx; break;
    case 4: ++stats_.responses_4xx; break;
    default: ++stats_.responses_5xx; break;
  }
  mark_ready(connection);
  return 0;
}

nghttp3_ssize H3Server::read_body(Connection& connection, Request& request, nghttp3_vec* vec,
                                  size_t veccnt, uint32_t* flags) {
  if (request.io_failed) return NGHTTP3_ERR_WOULDBLOCK;
  uint64_t max_bytes = UINT64_MAX;
  if (request.body.is_file() && request.body.remaining() != 0) {
    max_bytes = read_limit(connection, request);
    if (max_bytes == 0) {
      ++stats_.credit_waits;
      request.blocked_on_credit = true;
      return NGHTTP3_ERR_WOULDBLOCK;
    }
  }
  const size_t room = kLentSlots - request.lent_count;
  const size_t limit = std::min({veccnt, room, kMaxChunksPerRead});
  std::array<transmit::Chunk, kMaxChunksPerRead> chunks;
  size_t count = 0;
  const BodyFill fill =
      limit == 0
          ? BodyFill::kNoBuffers
          : request.body.fill(pool_, reserve_, std::span(chunks.data(), limit), count, max_bytes);
  switch (fill) {
    case BodyFill::kOk:
      for (size_t i = 0; i < count; ++i) {
        vec[i].base = const_cast<uint8_t*>(chunks[i].data());
        vec[i].len = chunks[i].size();
        request.lent_bytes += chunks[i].size();
        request.lent[(request.lent_head + request.lent_count) % kLentSlots] = std::move(chunks[i]);
        ++request.lent_count;
      }
      if (request.body.remaining() == 0) *flags |= NGHTTP3_DATA_FLAG_EOF;
      return static_cast<nghttp3_ssize>(count);
    case BodyFill::kEnd: *flags |= NGHTTP3_DATA_FLAG_EOF; return 0;
    case BodyFill::kNoBuffers:
      ++stats_.body_waits;
      request.blocked_on_pool = true;
      starved_.push_back(request.key);
      return NGHTTP3_ERR_WOULDBLOCK;
    case BodyFill::kCapped:
      ++stats_.body_waits;
      request.blocked_on_cap = true;
      return NGHTTP3_ERR_WOULDBLOCK;
    case BodyFill::kGroupCapped:
      ++stats_.body_waits;
      request.blocked_on_connection_cap = true;
      connection.waiting_for_buffers.push_back(request.stream_id);
      return NGHTTP3_ERR_WOULDBLOCK;
    case BodyFill::kIoError:
      request.io_failed = true;
      queue_reap(connection, request);
      return NGHTTP3_ERR_WOULDBLOCK;
  }
  return NGHTTP3_ERR_WOULDBLOCK;
}

// Runs inside the endpoint (a chunk's last reference dropped): only notes.
void H3Server::on_buffer_returned(void* context) {
  auto* request = static_cast<Request*>(context);
  if (!request->blocked_on_cap || request->return_queued) return;
  request->return_queued = true;
  request->server->returned_.push_back(request->key);
}

// The same, for a buffer of any of a connection's file bodies.
void H3Server::on_connection_buffer_returned(void* context) {
  auto* connection = static_cast<Connection*>(context);
  if (connection->waiting_for_buffers.empty() || connection->buffers_return_queued) return;
  connection->buffers_return_queued = true;
  connection->server.connection_returns_.push_back(
      ConnectionKey{connection->session.handle(), connection->serial});
}

void H3Server::settle(Connection& connection, Request& request) {
  request.settled = true;
  request.waiting_for_file = false;
  // The file and the pool buffers go back now; the bytes the transport
  // still needs are held by its own references (and still counted in the
  // connection's buffers).
  request.body = ResponseBody();
  if (request.holds_file) {
    request.holds_file = false;
    --connection.open_files;
  }
  for (transmit::Chunk& chunk : request.lent) chunk.reset();
  request.lent_count = 0;
  request.lent_bytes = 0;
}

}  // namespace dpquic::dataplane
