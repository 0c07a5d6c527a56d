#include "dataplane/app/h3_server.h"

#include <algorithm>
#include <stdexcept>

#include "dataplane/app/h3_server_state.h"
#include "dataplane/app/synthetic_body.h"
#include "quic/conn/send_stream.h"
#include "quic/conn/stream_id.h"

namespace dpquic::dataplane {

transmit::Chunk H3Server::StreamOwner::find_lent(int64_t stream_id, const uint8_t* data,
                                                 size_t length) {
  Request* request = connection_.find(stream_id);
  if (request == nullptr) return {};
  for (size_t i = 0; i < request->lent_count; ++i) {
    const transmit::Chunk& chunk = request->lent[(request->lent_head + i) % kLentSlots];
    if (data >= chunk.data() && data + length <= chunk.data() + chunk.size()) {
      return chunk.slice(static_cast<size_t>(data - chunk.data()), length);
    }
  }
  return {};
}

void H3Server::StreamOwner::on_fin_sent(int64_t stream_id) {
  if (Request* request = connection_.find(stream_id)) {
    request->write_done = true;
    server_.queue_reap(connection_, *request);
  }
}

void H3Server::StreamOwner::on_send_refused(int64_t stream_id) {
  if (Request* request = connection_.find(stream_id)) {
    if (!request->write_done) ++server_.stats_.streams_reset;
    request->write_done = true;
    server_.queue_reap(connection_, *request);
  }
}

// --- Set-up -------------------------------------------------------------------------------------

H3Server::H3Server(endpoint::Endpoint& endpoint, const H3ServerConfig& config)
    : endpoint_(endpoint),
      config_(config),
      limits_{config.max_path_length, config.max_conditional_field_length},
      pool_(config.chunk_size, config.chunk_count),
      stager_(pool_),
      responder_(H3ResponderConfig{config.root, config.mime_types, config.max_synthetic_bytes,
                                   config.max_buffers_per_response},
                 pool_.adopt_static(synthetic_block())),
      reserve_(
          std::min<size_t>(std::max<size_t>(8, config.chunk_count / 32), config.chunk_count / 2)),
      credit_margin_(config.chunk_size > conn::SendStream::kSendAheadOfCredit
                         ? config.chunk_size - conn::SendStream::kSendAheadOfCredit + 1
                         : 1),
      scratch_(kH3ReadScratchBytes),
      header_budget_(config.max_field_section_size + kHeaderSlack) {
  if (config.chunk_size < 1024) throw std::runtime_error("h3: chunk_size must be at least 1024");
  if (config.chunk_count < 16) throw std::runtime_error("h3: chunk_count must be at least 16");
  if (config.max_files_per_connection == 0 || config.max_buffers_per_connection == 0) {
    throw std::runtime_error("h3: a connection must be allowed a file and a buffer");
  }

  callbacks_.acked_stream_data = cb_acked_stream_data;
  callbacks_.stream_close = cb_stream_close;
  callbacks_.recv_data = cb_recv_data;
  callbacks_.deferred_consume = cb_deferred_consume;
  callbacks_.begin_headers = cb_begin_headers;
  callbacks_.recv_header = cb_recv_header;
  callbacks_.end_headers = cb_end_headers;
  callbacks_.stop_sending = cb_stop_sending;
  callbacks_.reset_stream = cb_reset_stream;
  nghttp3_settings_default(&settings_);
  settings_.max_field_section_size = config.max_field_section_size;
  settings_.qpack_max_dtable_capacity = config.qpack_table_capacity;
  settings_.qpack_blocked_streams = config.qpack_blocked_streams;
}

H3Server::~H3Server() { connections_.clear(); }

void H3Server::shutdown(Instant now) {
  for (size_t handle = 0; handle < connections_.size(); ++handle) {
    if (connections_[handle]) {
      endpoint_.close(now, static_cast<endpoint::ConnectionHandle>(handle), NGHTTP3_H3_NO_ERROR,
                      "server shutting down");
    }
  }
}

size_t H3Server::open_request_count() const {
  size_t count = 0;
  for (const auto& connection : connections_) {
    if (!connection) continue;
    for (const auto& entry : connection->requests) count += entry.second->settled ? 0 : 1;
  }
  return count;
}

H3Server::Connection* H3Server::find(endpoint::ConnectionHandle handle) {
  return handle < connections_.size() ? connections_[handle].get() : nullptr;
}

H3Server::Connection* H3Server::connection_for(Instant now, endpoint::ConnectionHandle handle) {
  if (Connection* existing = find(handle)) return existing;
  if (!endpoint_.exists(handle)) return nullptr;
  if (handle >= connections_.size()) connections_.resize(handle + 1);
  connections_[handle] = std::make_unique<Connection>(*this, endpoint_, handle, next_serial_++);
  ++connection_count_;
  ++stats_.connections;
  Connection& connection = *connections_[handle];
  const int rv = connection.session.create(true, callbacks_, settings_, &connection);
  if (rv != 0) {
    fail(now, connection, rv);
  } else {
    // The initial limit, and any raise reported before the ALPN was known
    // (such events reach no application): read, not only reported.
    sync_stream_limit(connection);
  }
  return &connection;
}

H3Server::Request* H3Server::find_request(const RequestKey& key) {
  Connection* connection = find(key.handle);
  if (connection == nullptr || connection->serial != key.serial) return nullptr;
  return connection->find(key.stream_id);
}

void H3Server::free_connection(endpoint::ConnectionHandle handle) {
  if (find(handle) == nullptr) return;
  connections_[handle].reset();
  --connection_count_;
}

H3Server::Request& H3Server::request_for(Connection& connection, int64_t stream_id) {
  std::unique_ptr<Request>& slot = connection.requests[stream_id];
  if (!slot) {
    slot = std::make_unique<Request>();
    slot->stream_id = stream_id;
    slot->server = this;
    slot->key = RequestKey{connection.session.handle(), connection.serial, stream_id};
    connection.highest_request = std::max(connection.highest_request, stream_id);
  }
  return *slot;
}

void H3Server::mark_ready(Connection& connection) { ready_.mark(connection.session); }

void H3Server::queue_reap(Connection& connection, Request& request) {
  connection.session.queue_reap(request.stream_id, request.reap_queued);
}

void H3Server::fail(Instant now, Connection& connection, int liberr) {
  if (!connection.session.failed()) ++stats_.connection_errors;
  connection.session.fail(now, liberr);
}

// --- Events -------------------------------------------------------------------------------------

void H3Server::on_event(Instant now, const endpoint::EndpointEvent& event) {
  using conn::ConnectionEventType;
  if (event.event.type == ConnectionEventType::kClosed) {
    free_connection(event.connection);
    return;
  }
  Connection* connection = connection_for(now, event.connection);
  if (connection == nullptr || connection->session.failed()) return;
  if (event.event.type == ConnectionEventType::kPeerStreamLimit) {
    return sync_stream_limit(*connection);
  }

  if (!connection->session.bound()) {
    const int rv = connection->session.open_local_streams();
    if (rv < 0) return fail(now, *connection, rv);
    if (rv == 1 && endpoint_.is_established(event.connection)) {
      // RFC 9114 §6.2: the peer must allow our three unidirectional streams.
      ++stats_.connection_errors;
      return connection->session.fail_with_code(now, NGHTTP3_H3_GENERAL_PROTOCOL_ERROR,
                                                "peer allows too few unidirectional streams");
    }
    // The connection cannot open streams (it is closing, or its peer's limit
    // is not there yet): no request is read, since nghttp3 answers one only
    // once the control and QPACK streams are bound.
    if (rv == 1) return;
    if (rv == 0) {
      mark_ready(*connection);
      if (draining_) send_goaway(now, *connection);
    }
  }

  const uint64_t stream_id = event.event.stream_id;
  switch (event.event.type) {
    case ConnectionEventType::kStreamReadable:
      on_stream_readable(now, *connection, stream_id);
      break;
    case ConnectionEventType::kStreamWritable: {
      const auto id = static_cast<int64_t>(stream_id);
      int rv = nghttp3_conn_unblock_stream(connection->session.conn(), id);
      if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, *connection, rv);
      Request* request = connection->find(id);
      if (request != nullptr && request->blocked_on_credit) {
        request->blocked_on_credit = false;
        rv = nghttp3_conn_resume_stream(connection->session.conn(), id);
        if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, *connection, rv);
      }
      mark_ready(*connection);
      break;
    }
    case ConnectionEventType::kStreamReset: on_stream_reset(now, *connection, stream_id); break;
    case ConnectionEventType::kStreamStopped: on_stream_stopped(now, *connection, stream_id); break;
    case ConnectionEventType::kStreamClosed: on_stream_closed(*connection, stream_id); break;
    default: break;
  }
  if (!connection->session.failed()) reap(now, *connection);
}

void H3Server::on_stream_readable(Instant now, Connection& connection, uint64_t stream_id) {
  if (conn::is_client_bidirectional(stream_id))
    return on_request_readable(now, connection, stream_id);
  bool fin = false;
  const int rv = connection.session.read_stream(stream_id, fin);
  if (rv < 0) return fail(now, connection, rv);
  // The control stream may have carried PRIORITY_UPDATE frames (the QPACK
  // encoder stream, read far more often, cannot).
  if (!nghttp3_conn_is_remote_qpack_encoder_stream(connection.session.conn(),
                                                   static_cast<int64_t>(stream_id))) {
    apply_priorities(connection);
  }
  mark_ready(connection);
}

void H3Server::on_request_readable(Instant now, Connection& connection, uint64_t stream_id) {
  H3Session& session = connection.session;
  const auto id = static_cast<int64_t>(stream_id);
  Request* request = connection.find(id);
  bool fin = false;
  if (request != nullptr && request->read_done) {
    // nghttp3 is done with this side: drain, never feed it.
    while (endpoint_.read(session.handle(), stream_id, scratch_, fin) != 0 && !fin) {
    }
    return;
  }
  for (;;) {
    // Until its header section ends a request feeds nghttp3 a bounded
    // amount: nghttp3 keeps a stream blocked on QPACK encoder instructions
    // in a buffer of its own, however much arrives.
    const uint64_t budget = request != nullptr ? request->header_budget : header_budget_;
    if (budget == 0) return refuse_excessive(now, connection, *request);
    const size_t room = std::min<uint64_t>(scratch_.size(), budget);
    const size_t n = endpoint_.read(session.handle(), stream_id, {scratch_.data(), room}, fin);
    if (n == 0 && !fin) break;
    if (request == nullptr) {
      // State only for a stream that delivers something: a readable event
      // may follow the end of a stream already freed. A new stream that
      // ends without a byte has no request (RFC 9114 §4.1).
      if (n == 0) {
        if (id > connection.highest_request) {
          session.reset_stream(stream_id, NGHTTP3_H3_REQUEST_INCOMPLETE);
        }
        return;
      }
      request = &request_for(connection, id);
      request->header_budget = header_budget_;
    }
    if (!request->response_submitted && !request->waiting_for_file) request->header_budget -= n;
    const nghttp3_ssize rv =
        nghttp3_conn_read_stream(session.conn(), id, scratch_.data(), n, fin ? 1 : 0);
    if (rv < 0) return fail(now, connection, static_cast<int>(rv));
    request = connection.find(id);  // callbacks may have queued it for reaping only
    if (fin || request == nullptr || request->read_done) break;
  }
  if (fin && request != nullptr) {
    request->read_done = true;
    queue_reap(connection, *request);
  }
  mark_ready(connection);
}

void H3Server::refuse_excessive(Instant now, Connection& connection, Request& request) {
  H3Session& session = connection.session;
  const auto stream_id = static_cast<uint64_t>(request.stream_id);
  const int rv = nghttp3_conn_shutdown_stream_read(session.conn(), request.stream_id);
  if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, connection, rv);
  session.stop_sending(stream_id, NGHTTP3_H3_EXCESSIVE_LOAD);
  session.reset_stream(stream_id, NGHTTP3_H3_EXCESSIVE_LOAD);
  ++stats_.streams_reset;
  request.read_done = request.write_done = request.write_aborted = true;
  queue_reap(connection, request);
  mark_ready(connection);
}

void H3Server::on_stream_reset(Instant now, Connection& connection, uint64_t stream_id) {
  H3Session& session = connection.session;
  const auto id = static_cast<int64_t>(stream_id);
  int rv = nghttp3_conn_shutdown_stream_read(session.conn(), id);
  if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, connection, rv);
  // Reading reports the reset to QUIC, which can then free the stream.
  bool fin = false;
  endpoint_.read(session.handle(), stream_id, scratch_, fin);
  if (conn::is_client_unidirectional(stream_id)) {
    // A critical stream must not end (H3_CLOSED_CRITICAL_STREAM); others
    // are simply forgotten.
    rv = nghttp3_conn_close_stream(session.conn(), id, NGHTTP3_H3_NO_ERROR);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(now, connection, rv);
    return;
  }
  if (!conn::is_client_bidirectional(stream_id)) return;
  Request* request = connection.find(id);
  if (request == nullptr) {
    // Reset before anything was read: no response will come. (A stream at
    // or below the highest one seen was answered and settled already.)
    if (id > connection.highest_request) {
      session.reset_stream(stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
    }
    return;
  }
  request->read_done = true;
  request->peer_reset = true;
  queue_reap(connection, *request);
}

void H3Server::on_stream_stopped(Instant now, Connection& connection, uint64_t stream_id) {
  H3Session& session = connection.session;
  if (session.is_local_critical(stream_id)) {
    ++stats_.connection_errors;
    return session.fail_with_code(now, NGHTTP3_H3_CLOSED_CRITICAL_STREAM,
                                  "peer stopped a critical stream");
  }
  Request* request = connection.find(static_cast<int64_t>(stream_id));
  if (request == nullptr) return;
  // QUIC reset our sending part already.
  if (!request->write_done) ++stats_.streams_reset;
  request->write_done = true;
  request->write_aborted = true;
  queue_reap(connection, *request);
  mark_ready(connection);
}

// Settles requests outside nghttp3 callbacks: aborts, stops, and closes
// streams whose two directions are done.
void H3Server::reap(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  int64_t stream_id = -1;
  while (!session.failed() && session.next_reap(stream_id)) {
    Request* request = connection.find(stream_id);
    if (request == nullptr) continue;
    request->reap_queued = false;
    const auto quic_stream = static_cast<uint64_t>(stream_id);
    if (request->io_failed && !request->write_done) {
      session.reset_stream(quic_stream, NGHTTP3_H3_INTERNAL_ERROR);
      ++stats_.streams_reset;
      request->write_done = request->write_aborted = true;
    }
    // A request waiting for a file slot is whole: only a reset ends it.
    if (request->read_done && !request->response_submitted && !request->write_done &&
        (!request->waiting_for_file || request->peer_reset)) {
      session.reset_stream(quic_stream, request->peer_reset ? NGHTTP3_H3_REQUEST_CANCELLED
                                                            : NGHTTP3_H3_REQUEST_INCOMPLETE);
      request->write_done = request->write_aborted = true;
    }
    if (request->write_aborted) nghttp3_conn_shutdown_stream_write(session.conn(), stream_id);
    if (request->write_done && !request->read_done) {
      // The response is complete: the rest of the request is not needed
      // (RFC 9114 §4.1).
      session.stop_sending(quic_stream, NGHTTP3_H3_NO_ERROR);
      const int rv = nghttp3_conn_shutdown_stream_read(session.conn(), stream_id);
      if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, connection, rv);
      request->read_done = true;
    }
    if (request->write_done && request->read_done && !request->settled) {
      settle(connection, *request);
    }
    if (request->settled && request->stream_closed) {
      const int rv = nghttp3_conn_close_stream(session.conn(), stream_id, NGHTTP3_H3_NO_ERROR);
      if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(now, connection, rv);
      connection.requests.erase(stream_id);
    }
  }
  if (!session.failed()) serve_waiting(connection);
}

void H3Server::on_stream_closed(Connection& connection, uint64_t stream_id) {
  Request* request = connection.find(static_cast<int64_t>(stream_id));
  if (request == nullptr) return;
  request->stream_closed = true;
  queue_reap(connection, *request);
}

// --- Writing ------------------------------------------------------------------------------------

void H3Server::pump(Instant now) {
  if (draining_) advance_drain(now);
  for (const ConnectionKey& key : connection_returns_) {
    Connection* connection = find(key.handle);
    if (connection == nullptr || connection->serial != key.serial) continue;
    connection->buffers_return_queued = false;
    resume_buffer_waiters(*connection);
  }
  connection_returns_.clear();
  for (const RequestKey& key : returned_) {
    Request* request = find_request(key);
    if (request == nullptr) continue;
    request->return_queued = false;
    if (!request->blocked_on_cap) continue;
    request->blocked_on_cap = false;
    Connection& connection = *find(key.handle);
    nghttp3_conn_resume_stream(connection.session.conn(), key.stream_id);
    mark_ready(connection);
  }
  returned_.clear();

  size_t resumed = 0;
  while (resumed < starved_.size() && pool_.free_buffers() > reserve_) {
    const RequestKey key = starved_[resumed++];
    Request* request = find_request(key);
    if (request == nullptr || !request->blocked_on_pool) continue;
    request->blocked_on_pool = false;
    Connection& connection = *find(key.handle);
    nghttp3_conn_resume_stream(connection.session.conn(), key.stream_id);
    mark_ready(connection);
  }
  starved_.erase(starved_.begin(), starved_.begin() + static_cast<std::ptrdiff_t>(resumed));

  ready_.run_batch([this](endpoint::ConnectionHandle handle) { return find(handle); },
                   [this, now](Connection& connection) { drive(now, connection); });
}

bool H3Server::wants_pump() const {
  if (!returned_.empty() || !connection_returns_.empty()) return true;
  if (!ready_.empty() && pool_.free_buffers() > 0) return true;
  return !starved_.empty() && pool_.free_buffers() > reserve_;
}

void H3Server::drive(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  if (session.failed() || !session.bound()) return;
  switch (session.write(stager_, connection.owner)) {
    case H3WriteStatus::kIdle: break;
    case H3WriteStatus::kNoBuffers:
      ++stats_.buffer_shortages;
      mark_ready(connection);
      break;
    case H3WriteStatus::kClosing: break;
    case H3WriteStatus::kFatal: return fail(now, connection, session.error());
  }
  reap(now, connection);
}

// --- nghttp3 callbacks --------------------------------------------------------------------------

int H3Server::cb_acked_stream_data(nghttp3_conn*, int64_t stream_id, uint64_t length,
                                   void* conn_user_data, void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  Request* request = connection->find(stream_id);
  if (request == nullptr) return 0;
  request->server->stats_.body_bytes_sent += length;
  request->lent_bytes -= std::min(length, request->lent_bytes);
  uint64_t left = length;
  while (left != 0 && request->lent_count != 0) {
    transmit::Chunk& front = request->lent[request->lent_head];
    const uint64_t rest = front.size() - request->front_acked;
    if (left < rest) {
      request->front_acked += left;
      break;
    }
    left -= rest;
    front.reset();
    request->lent_head = (request->lent_head + 1) % kLentSlots;
    --request->lent_count;
    request->front_acked = 0;
  }
  return 0;
}

int H3Server::cb_stream_close(nghttp3_conn*, int64_t, uint64_t, void*, void*) { return 0; }

int H3Server::cb_recv_data(nghttp3_conn*, int64_t, const uint8_t*, size_t, void*, void*) {
  return 0;  // request bodies are not used (GET/HEAD have none; others get 405)
}

int H3Server::cb_deferred_consume(nghttp3_conn*, int64_t, size_t, void*, void*) {
  return 0;  // QUIC credit returns as the endpoint's stream is read
}

int H3Server::cb_begin_headers(nghttp3_conn*, int64_t stream_id, void* conn_user_data, void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  if (Request* request = connection->find(stream_id)) request->head.clear();
  return 0;
}

int H3Server::cb_recv_header(nghttp3_conn*, int64_t stream_id, int32_t token, nghttp3_rcbuf*,
                             nghttp3_rcbuf* value, uint8_t, void* conn_user_data, void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  Request* request = connection->find(stream_id);
  if (request == nullptr) return 0;
  const nghttp3_vec bytes = nghttp3_rcbuf_get_buf(value);
  const std::string_view text(reinterpret_cast<const char*>(bytes.base), bytes.len);
  request->head.add(token, text, request->server->limits_);
  return 0;
}

int H3Server::cb_end_headers(nghttp3_conn*, int64_t stream_id, int, void* conn_user_data, void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  Request* request = connection->find(stream_id);
  if (request == nullptr || request->response_submitted) return 0;
  H3Server& server = *request->server;
  const conn::Connection* transport = server.endpoint_.connection(connection->session.handle());
  request->head.early_data = transport != nullptr &&
                             transport->stream_opened_in_zero_rtt(static_cast<uint64_t>(stream_id));
  server.respond(*connection, *request);
  if (request->waiting_for_file) return 0;
  if (!request->response_submitted) return NGHTTP3_ERR_CALLBACK_FAILURE;
  server.apply_priority(*connection, *request);
  return 0;
}

int H3Server::cb_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t code, void* conn_user_data,
                              void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  connection->session.stop_sending(static_cast<uint64_t>(stream_id), code);
  if (Request* request = connection->find(stream_id)) {
    request->read_done = true;
    request->server->queue_reap(*connection, *request);
  }
  return 0;
}

int H3Server::cb_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t code, void* conn_user_data,
                              void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  connection->session.reset_stream(static_cast<uint64_t>(stream_id), code);
  if (Request* request = connection->find(stream_id)) {
    request->write_done = request->write_aborted = true;
    ++request->server->stats_.streams_reset;
    request->server->queue_reap(*connection, *request);
  }
  return 0;
}

nghttp3_ssize H3Server::cb_read_data(nghttp3_conn*, int64_t stream_id, nghttp3_vec* vec,
                                     size_t veccnt, uint32_t* flags, void* conn_user_data, void*) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  Request* request = connection->find(stream_id);
  if (request == nullptr) {
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    return 0;
  }
  return request->server->read_body(*connection, *request, vec, veccnt, flags);
}

}  // namespace dpquic::dataplane
