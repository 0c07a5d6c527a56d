#include "dataplane/app/h3_client.h"

#include <algorithm>
#include <utility>

#include "quic/conn/stream_id.h"

namespace dpquic::dataplane {

struct H3Client::Request {
  uint64_t id = 0;
  H3Request request;
  H3ResponseHandler* handler = nullptr;
  int64_t stream_id = -1;
  int status = 0;
  std::optional<uint64_t> content_length;
  bool final_headers = false;
  bool read_done = false;
  bool write_done = false;
  bool write_aborted = false;
  bool completed = false;
  bool reap_queued = false;
  H3Client* client = nullptr;
};

class H3Client::StreamOwner final : public H3StreamOwner {
 public:
  StreamOwner(H3Client& client, Connection& connection)
      : client_(client), connection_(connection) {}
  // Requests carry no body: nothing is lent.
  transmit::Chunk find_lent(int64_t, const uint8_t*, size_t) override { return {}; }
  void on_fin_sent(int64_t stream_id) override;
  void on_send_refused(int64_t stream_id) override;
  H3Client& client() { return client_; }

 private:
  H3Client& client_;
  Connection& connection_;
};

struct H3Client::Connection {
  Connection(H3Client& client, endpoint::Endpoint& endpoint, endpoint::ConnectionHandle handle)
      : session(endpoint, handle), owner(client, *this) {}
  ~Connection() { session.destroy(); }

  H3Session session;
  StreamOwner owner;
  std::deque<uint64_t> queued;                      // request ids not sent yet, in order
  std::unordered_map<int64_t, uint64_t> by_stream;  // stream -> request id
  std::vector<nghttp3_nv> fields;  // a request's header fields while it is submitted
  bool in_limited = false;
  bool goaway_received = false;  // requests not sent yet will not be taken
  bool goaway_pending = false;   // a GOAWAY read but not yet applied
  uint64_t goaway_id = 0;        // the lowest stream ID a GOAWAY named

  uint64_t request_on_stream(int64_t stream_id) const {
    auto it = by_stream.find(stream_id);
    return it == by_stream.end() ? 0 : it->second;
  }
};

void H3Client::StreamOwner::on_fin_sent(int64_t stream_id) {
  if (Request* request = client_.request_on(connection_, stream_id)) {
    request->write_done = true;
    client_.queue_reap(connection_, *request);
  }
}

void H3Client::StreamOwner::on_send_refused(int64_t stream_id) {
  if (Request* request = client_.request_on(connection_, stream_id)) {
    request->write_done = true;
    client_.queue_reap(connection_, *request);
  }
}

// --- Set-up -------------------------------------------------------------------------------------

H3Client::H3Client(endpoint::Endpoint& endpoint, const H3ClientConfig& config)
    : endpoint_(endpoint),
      config_(config),
      pool_(config.chunk_size, config.chunk_count),
      stager_(pool_),
      scratch_(kH3ReadScratchBytes) {
  callbacks_.acked_stream_data = cb_acked_stream_data;
  callbacks_.stream_close = cb_stream_close;
  callbacks_.recv_data = cb_recv_data;
  callbacks_.deferred_consume = cb_deferred_consume;
  callbacks_.begin_headers = cb_begin_headers;
  callbacks_.recv_header = cb_recv_header;
  callbacks_.end_headers = cb_end_headers;
  callbacks_.end_stream = cb_end_stream;
  callbacks_.stop_sending = cb_stop_sending;
  callbacks_.reset_stream = cb_reset_stream;
  callbacks_.shutdown = cb_shutdown;
  nghttp3_settings_default(&settings_);
  settings_.max_field_section_size = config.max_field_section_size;
}

H3Client::~H3Client() {
  connections_.clear();
  requests_.clear();
}

H3Client::Connection* H3Client::find(endpoint::ConnectionHandle handle) {
  return handle < connections_.size() ? connections_[handle].get() : nullptr;
}

H3Client::Connection* H3Client::connection_for(endpoint::ConnectionHandle handle) {
  if (Connection* existing = find(handle)) return existing;
  if (!endpoint_.is_open(handle)) return nullptr;
  if (handle >= connections_.size()) connections_.resize(handle + 1);
  auto connection = std::make_unique<Connection>(*this, endpoint_, handle);
  if (create_session(*connection) != 0) return nullptr;
  connections_[handle] = std::move(connection);
  return connections_[handle].get();
}

int H3Client::create_session(Connection& connection) {
  return connection.session.create(false, callbacks_, settings_, &connection);
}

H3Client::Request* H3Client::request_on(Connection& connection, int64_t stream_id) {
  auto it = connection.by_stream.find(stream_id);
  if (it == connection.by_stream.end()) return nullptr;
  auto request = requests_.find(it->second);
  return request == requests_.end() ? nullptr : request->second.get();
}

uint64_t H3Client::request(endpoint::ConnectionHandle handle, const H3Request& request,
                           H3ResponseHandler* handler) {
  Connection* connection = connection_for(handle);
  if (connection == nullptr || connection->session.failed()) return 0;
  const uint64_t id = next_id_++;
  auto pending = std::make_unique<Request>();
  pending->id = id;
  pending->request = request;
  pending->handler = handler;
  pending->client = this;
  requests_.emplace(id, std::move(pending));
  connection->queued.push_back(id);
  mark_ready(*connection);
  return id;
}

bool H3Client::cancel(endpoint::ConnectionHandle handle, uint64_t request_id) {
  Connection* connection = find(handle);
  auto it = requests_.find(request_id);
  if (connection == nullptr || it == requests_.end() || it->second->completed) return false;
  Request& request = *it->second;
  if (request.stream_id < 0) {
    auto queued = std::find(connection->queued.begin(), connection->queued.end(), request_id);
    if (queued == connection->queued.end()) return false;
    connection->queued.erase(queued);
    requests_.erase(it);
    ++stats_.cancelled;
    return true;
  }
  if (connection->request_on_stream(request.stream_id) != request_id) return false;
  // Both directions at once, whatever the state of our request's FIN:
  // reap() then settles the stream with nghttp3.
  const auto stream_id = static_cast<uint64_t>(request.stream_id);
  connection->session.stop_sending(stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
  connection->session.reset_stream(stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
  request.handler = nullptr;
  request.completed = true;
  request.write_done = request.write_aborted = true;
  ++stats_.cancelled;
  queue_reap(*connection, request);
  mark_ready(*connection);
  return true;
}

bool H3Client::accepts_requests(endpoint::ConnectionHandle handle) {
  if (const Connection* connection = find(handle)) {
    return !connection->goaway_received && !connection->session.failed();
  }
  return endpoint_.is_open(handle);
}

void H3Client::mark_ready(Connection& connection) { ready_.mark(connection.session); }

void H3Client::queue_reap(Connection& connection, Request& request) {
  if (request.stream_id < 0) return;  // not sent yet: nothing to settle
  connection.session.queue_reap(request.stream_id, request.reap_queued);
}

void H3Client::complete(Connection&, Request& request, H3Outcome outcome) {
  if (request.completed) return;
  request.completed = true;
  if (outcome.result == H3Result::kOk) {
    ++stats_.completed_ok;
  } else if (outcome.result == H3Result::kRefused) {
    ++stats_.refused;
  } else {
    ++stats_.failed;
  }
  if (request.handler != nullptr) request.handler->on_complete(request.id, outcome);
}

// --- Events -------------------------------------------------------------------------------------

void H3Client::on_event(Instant now, const endpoint::EndpointEvent& event) {
  using conn::ConnectionEventType;
  if (event.event.type == ConnectionEventType::kClosed) {
    on_closed(event.connection, event.event.error_code);
    return;
  }
  Connection* connection = connection_for(event.connection);
  if (connection == nullptr || connection->session.failed()) return;
  H3Session& session = connection->session;
  const uint64_t stream_id = event.event.stream_id;
  const auto id = static_cast<int64_t>(stream_id);
  switch (event.event.type) {
    case ConnectionEventType::kEstablished: mark_ready(*connection); break;
    case ConnectionEventType::kStreamReadable:
      on_stream_readable(now, *connection, stream_id);
      break;
    case ConnectionEventType::kStreamWritable: {
      const int rv = nghttp3_conn_unblock_stream(session.conn(), id);
      if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, *connection, rv);
      mark_ready(*connection);
      break;
    }
    case ConnectionEventType::kStreamReset:
      on_stream_reset(now, *connection, stream_id, event.event.error_code);
      break;
    case ConnectionEventType::kStreamStopped:
      if (session.is_local_critical(stream_id)) {
        session.fail_with_code(now, NGHTTP3_H3_CLOSED_CRITICAL_STREAM,
                               "peer stopped a critical stream");
        return on_closed(event.connection, NGHTTP3_H3_CLOSED_CRITICAL_STREAM);
      }
      if (Request* request = request_on(*connection, id)) {
        request->write_done = request->write_aborted = true;
        queue_reap(*connection, *request);
      }
      break;
    case ConnectionEventType::kZeroRttRejected: on_zero_rtt_rejected(now, *connection); break;
    default: break;
  }
  if (find(event.connection) == connection && !session.failed()) reap(now, *connection);
}

void H3Client::on_stream_readable(Instant now, Connection& connection, uint64_t stream_id) {
  H3Session& session = connection.session;
  bool fin = false;
  if (conn::is_client_bidirectional(stream_id)) {
    Request* request = request_on(connection, static_cast<int64_t>(stream_id));
    if (request == nullptr || request->read_done) {
      // A stream nghttp3 no longer knows (or never did): drain, never feed.
      while (endpoint_.read(session.handle(), stream_id, scratch_, fin) != 0 && !fin) {
      }
      return;
    }
    const uint64_t id = request->id;
    const int rv = session.read_stream(stream_id, fin);
    if (rv < 0) return fail(now, connection, rv);
    auto it = requests_.find(id);
    if (fin && it != requests_.end()) {
      it->second->read_done = true;
      queue_reap(connection, *it->second);
    }
  } else {
    const int rv = session.read_stream(stream_id, fin);
    if (rv < 0) return fail(now, connection, rv);
    if (connection.goaway_pending) apply_goaway(connection);
  }
  mark_ready(connection);
}

void H3Client::on_stream_reset(Instant now, Connection& connection, uint64_t stream_id,
                               uint64_t code) {
  H3Session& session = connection.session;
  const auto id = static_cast<int64_t>(stream_id);
  int rv = nghttp3_conn_shutdown_stream_read(session.conn(), id);
  if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, connection, rv);
  bool fin = false;
  endpoint_.read(session.handle(), stream_id, scratch_, fin);  // reports the reset to QUIC
  if (conn::is_server_unidirectional(stream_id)) {
    rv = nghttp3_conn_close_stream(session.conn(), id, NGHTTP3_H3_NO_ERROR);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(now, connection, rv);
    return;
  }
  Request* request = request_on(connection, id);
  if (request == nullptr) return;
  request->read_done = true;
  // RFC 9114 §8.1: a rejected request was not processed (nothing of a
  // response may have come).
  const bool rejected = code == NGHTTP3_H3_REQUEST_REJECTED && request->status == 0;
  complete(connection, *request, H3Outcome{rejected ? H3Result::kRefused : H3Result::kReset, code});
  queue_reap(connection, *request);
}

void H3Client::apply_goaway(Connection& connection) {
  connection.goaway_pending = false;
  const uint64_t last = connection.goaway_id;
  if (goaway_handler_ != nullptr) goaway_handler_->on_goaway(connection.session.handle(), last);
  std::vector<uint64_t> refused(connection.queued.begin(), connection.queued.end());
  connection.queued.clear();
  for (const auto& [stream, id] : connection.by_stream) {
    if (static_cast<uint64_t>(stream) >= last) refused.push_back(id);
  }
  std::sort(refused.begin(), refused.end());
  for (uint64_t id : refused) refuse(connection, id);
}

void H3Client::refuse(Connection& connection, uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->completed || it->second->status != 0) return;
  const H3Outcome refused{H3Result::kRefused, NGHTTP3_H3_REQUEST_REJECTED};
  if (it->second->stream_id < 0) {
    // Never sent: nothing to settle on the connection.
    std::unique_ptr<Request> request = std::move(it->second);
    requests_.erase(it);
    complete(connection, *request, refused);
    return;
  }
  // Sent: reap() cancels both directions of its stream, then forgets it.
  Request& request = *it->second;
  complete(connection, request, refused);
  queue_reap(connection, request);
}

void H3Client::on_zero_rtt_rejected(Instant now, Connection& connection) {
  // Every stream is gone (RFC 9001 §4.6.2): a new HTTP/3 connection, and
  // every request not answered yet goes again, in the original order.
  std::vector<uint64_t> resend;
  for (const auto& [stream, id] : connection.by_stream) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    if (it->second->completed) {
      requests_.erase(it);
      continue;
    }
    resend.push_back(id);
  }
  std::sort(resend.begin(), resend.end());
  for (uint64_t id : resend) {
    Request& request = *requests_[id];
    request.stream_id = -1;
    request.status = 0;
    request.content_length.reset();
    request.final_headers = request.read_done = request.write_done = false;
    request.write_aborted = request.reap_queued = false;
  }
  stats_.zero_rtt_resends += resend.size();
  connection.by_stream.clear();
  connection.session.clear_reaps();
  connection.queued.insert(connection.queued.begin(), resend.begin(), resend.end());
  const int rv = create_session(connection);
  if (rv != 0) return fail(now, connection, rv);
  mark_ready(connection);
}

void H3Client::on_closed(endpoint::ConnectionHandle handle, uint64_t code) {
  Connection* connection = find(handle);
  if (connection == nullptr) return;
  std::vector<uint64_t> open(connection->queued.begin(), connection->queued.end());
  for (const auto& [stream, id] : connection->by_stream) open.push_back(id);
  std::sort(open.begin(), open.end());
  // The state goes first: handlers may queue requests elsewhere.
  std::unique_ptr<Connection> gone = std::move(connections_[handle]);
  gone.reset();
  for (uint64_t id : open) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    std::unique_ptr<Request> request = std::move(it->second);
    requests_.erase(it);
    if (request->completed) continue;
    request->completed = true;
    ++stats_.failed;
    if (request->handler != nullptr) {
      request->handler->on_complete(id, H3Outcome{H3Result::kConnectionClosed, code});
    }
  }
}

void H3Client::fail(Instant now, Connection& connection, int liberr) {
  const uint64_t code = nghttp3_err_infer_quic_app_error_code(liberr);
  connection.session.fail(now, liberr);
  std::vector<uint64_t> open(connection.queued.begin(), connection.queued.end());
  for (const auto& [stream, id] : connection.by_stream) open.push_back(id);
  std::sort(open.begin(), open.end());
  connection.queued.clear();
  connection.by_stream.clear();
  connection.session.clear_reaps();
  for (uint64_t id : open) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    std::unique_ptr<Request> request = std::move(it->second);
    requests_.erase(it);
    complete(connection, *request, H3Outcome{H3Result::kProtocolError, code});
  }
}

// Settles requests outside nghttp3 callbacks.
void H3Client::reap(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  int64_t stream_id = -1;
  while (!session.failed() && session.next_reap(stream_id)) {
    Request* request = request_on(connection, stream_id);
    if (request == nullptr) continue;
    request->reap_queued = false;
    const auto quic_stream = static_cast<uint64_t>(stream_id);
    if (request->read_done && !request->completed) {
      // The stream ended without a complete response nghttp3 accepted.
      complete(connection, *request,
               H3Outcome{H3Result::kProtocolError, NGHTTP3_H3_GENERAL_PROTOCOL_ERROR});
    }
    if (request->completed && !request->write_done) {
      session.reset_stream(quic_stream, NGHTTP3_H3_REQUEST_CANCELLED);
      request->write_done = request->write_aborted = true;
    }
    if (request->write_aborted) nghttp3_conn_shutdown_stream_write(session.conn(), stream_id);
    if (request->completed && !request->read_done) {
      session.stop_sending(quic_stream, NGHTTP3_H3_REQUEST_CANCELLED);
      const int rv = nghttp3_conn_shutdown_stream_read(session.conn(), stream_id);
      if (rv != 0 && nghttp3_err_is_fatal(rv)) return fail(now, connection, rv);
      request->read_done = true;
    }
    if (request->completed && request->read_done && request->write_done) {
      const int rv = nghttp3_conn_close_stream(session.conn(), stream_id, NGHTTP3_H3_NO_ERROR);
      if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(now, connection, rv);
      const uint64_t request_id = request->id;
      connection.by_stream.erase(stream_id);
      requests_.erase(request_id);
    }
  }
}

// --- Writing ------------------------------------------------------------------------------------

void H3Client::pump(Instant now) {
  const size_t limited = stream_limited_.size();
  for (size_t i = 0; i < limited; ++i) {
    if (Connection* connection = find(stream_limited_[i])) {
      connection->in_limited = false;
      mark_ready(*connection);
    }
  }
  stream_limited_.erase(stream_limited_.begin(),
                        stream_limited_.begin() + static_cast<std::ptrdiff_t>(limited));

  ready_.run_batch([this](endpoint::ConnectionHandle handle) { return find(handle); },
                   [this, now](Connection& connection) { drive(now, connection); });
}

bool H3Client::wants_pump() const { return !ready_.empty() && pool_.free_buffers() > 0; }

void H3Client::drive(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  if (session.failed()) return;
  if (!session.bound()) {
    const int rv = session.open_local_streams();
    if (rv < 0) return fail(now, connection, rv);
    if (rv == 1) {
      if (endpoint_.is_established(session.handle())) {
        // RFC 9114 §6.2: the peer must allow our three unidirectional streams.
        session.fail_with_code(now, NGHTTP3_H3_GENERAL_PROTOCOL_ERROR,
                               "peer allows too few unidirectional streams");
        return on_closed(session.handle(), NGHTTP3_H3_GENERAL_PROTOCOL_ERROR);
      }
      return;  // retried at kEstablished (or with 0-RTT keys)
    }
  }
  send_queued(now, connection);
  if (session.failed()) return;
  switch (session.write(stager_, connection.owner)) {
    case H3WriteStatus::kIdle: break;
    case H3WriteStatus::kNoBuffers: mark_ready(connection); break;
    case H3WriteStatus::kClosing: break;
    case H3WriteStatus::kFatal: return fail(now, connection, session.error());
  }
  reap(now, connection);
}

void H3Client::send_queued(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  while (!connection.queued.empty()) {
    auto it = requests_.find(connection.queued.front());
    if (it == requests_.end()) {
      connection.queued.pop_front();
      continue;
    }
    Request& request = *it->second;
    if (connection.goaway_received) {
      // RFC 9114 §5.2: the server takes no new request on this connection;
      // the request was not processed and may be sent elsewhere.
      connection.queued.pop_front();
      refuse(connection, request.id);
      continue;
    }
    const std::optional<uint64_t> stream =
        endpoint_.open_stream(session.handle(), conn::StreamDirection::kBidirectional);
    if (!stream) {
      if (!connection.in_limited) {
        connection.in_limited = true;
        stream_limited_.push_back(session.handle());
      }
      return;
    }
    std::vector<nghttp3_nv>& headers = connection.fields;
    headers.clear();
    headers.push_back(make_nv(":method", request.request.method));
    headers.push_back(make_nv(":scheme", request.request.scheme));
    if (!request.request.authority.empty()) {
      headers.push_back(make_nv(":authority", request.request.authority));
    }
    headers.push_back(make_nv(":path", request.request.path));
    headers.push_back(make_nv("user-agent", "dpquic"));
    for (const auto& [name, value] : request.request.fields)
      headers.push_back(make_nv(name, value));
    const auto stream_id = static_cast<int64_t>(*stream);
    const int rv = nghttp3_conn_submit_request(session.conn(), stream_id, headers.data(),
                                               headers.size(), nullptr, &request);
    if (rv != 0) return fail(now, connection, rv);
    request.stream_id = stream_id;
    connection.by_stream[stream_id] = request.id;
    connection.queued.pop_front();
    ++stats_.requests_sent;
  }
}

bool H3Client::update_priority(endpoint::ConnectionHandle handle, uint64_t request_id,
                               uint8_t urgency, bool incremental) {
  Connection* connection = find(handle);
  auto it = requests_.find(request_id);
  if (connection == nullptr || it == requests_.end() || it->second->stream_id < 0) return false;
  const nghttp3_pri pri{std::min<uint32_t>(urgency, NGHTTP3_URGENCY_LOW), incremental ? 1 : 0};
  if (nghttp3_conn_set_stream_priority(connection->session.conn(), it->second->stream_id, &pri) !=
      0) {
    return false;
  }
  mark_ready(*connection);
  return true;
}

// --- nghttp3 callbacks --------------------------------------------------------------------------

int H3Client::cb_shutdown(nghttp3_conn*, int64_t id, void* conn_user_data) {
  // Applied once nghttp3 has returned (apply_goaway): handlers run outside
  // its callbacks.
  auto* connection = static_cast<Connection*>(conn_user_data);
  connection->goaway_received = true;
  connection->goaway_pending = true;
  connection->goaway_id = static_cast<uint64_t>(id);
  ++connection->owner.client().stats_.goaways_received;
  return 0;
}

int H3Client::cb_acked_stream_data(nghttp3_conn*, int64_t, uint64_t, void*, void*) { return 0; }

int H3Client::cb_stream_close(nghttp3_conn*, int64_t, uint64_t, void*, void*) { return 0; }

int H3Client::cb_deferred_consume(nghttp3_conn*, int64_t, size_t, void*, void*) {
  return 0;  // QUIC credit returns as the endpoint's stream is read
}

int H3Client::cb_begin_headers(nghttp3_conn*, int64_t, void*, void* stream_user_data) {
  auto* request = static_cast<Request*>(stream_user_data);
  if (request != nullptr && !request->final_headers) {
    request->status = 0;
    request->content_length.reset();
  }
  return 0;
}

int H3Client::cb_recv_header(nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf* name,
                             nghttp3_rcbuf* value, uint8_t, void*, void* stream_user_data) {
  auto* request = static_cast<Request*>(stream_user_data);
  if (request == nullptr) return 0;
  const nghttp3_vec bytes = nghttp3_rcbuf_get_buf(value);
  const std::span<const uint8_t> text(bytes.base, bytes.len);
  if (token == NGHTTP3_QPACK_TOKEN__STATUS) {
    request->status = static_cast<int>(parse_decimal(text).value_or(0));
  } else if (token == NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH) {
    request->content_length = parse_decimal(text);
  }
  // Interim responses start with a 1xx :status (always the first field).
  if (request->status >= 200 && request->handler != nullptr) {
    const nghttp3_vec field = nghttp3_rcbuf_get_buf(name);
    request->handler->on_header(
        request->id, std::string_view(reinterpret_cast<const char*>(field.base), field.len),
        std::string_view(reinterpret_cast<const char*>(bytes.base), bytes.len));
  }
  return 0;
}

int H3Client::cb_end_headers(nghttp3_conn*, int64_t, int, void*, void* stream_user_data) {
  auto* request = static_cast<Request*>(stream_user_data);
  // Interim (1xx) responses are not reported; nghttp3 checks the rest.
  if (request == nullptr || request->final_headers || request->status < 200) return 0;
  request->final_headers = true;
  if (request->handler != nullptr) {
    request->handler->on_headers(request->id, request->status, request->content_length);
  }
  return 0;
}

int H3Client::cb_recv_data(nghttp3_conn*, int64_t, const uint8_t* data, size_t length, void*,
                           void* stream_user_data) {
  auto* request = static_cast<Request*>(stream_user_data);
  if (request == nullptr) return 0;
  request->client->stats_.body_bytes_received += length;
  if (request->handler != nullptr) request->handler->on_body(request->id, {data, length});
  return 0;
}

int H3Client::cb_end_stream(nghttp3_conn*, int64_t, void* conn_user_data, void* stream_user_data) {
  auto* request = static_cast<Request*>(stream_user_data);
  if (request == nullptr) return 0;
  auto* connection = static_cast<Connection*>(conn_user_data);
  request->client->complete(*connection, *request, H3Outcome{H3Result::kOk, 0});
  return 0;
}

int H3Client::cb_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t code, void* conn_user_data,
                              void* stream_user_data) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  connection->session.stop_sending(static_cast<uint64_t>(stream_id), code);
  if (auto* request = static_cast<Request*>(stream_user_data)) {
    request->read_done = true;
    request->client->complete(*connection, *request, H3Outcome{H3Result::kProtocolError, code});
    request->client->queue_reap(*connection, *request);
  }
  return 0;
}

int H3Client::cb_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t code, void* conn_user_data,
                              void* stream_user_data) {
  auto* connection = static_cast<Connection*>(conn_user_data);
  connection->session.reset_stream(static_cast<uint64_t>(stream_id), code);
  if (auto* request = static_cast<Request*>(stream_user_data)) {
    request->write_done = request->write_aborted = true;
    request->client->complete(*connection, *request, H3Outcome{H3Result::kProtocolError, code});
    request->client->queue_reap(*connection, *request);
  }
  return 0;
}

}  // namespace dpquic::dataplane
