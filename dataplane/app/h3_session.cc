#include "dataplane/app/h3_session.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace dpquic::dataplane {

// --- ChunkStager --------------------------------------------------------------------------------

transmit::Chunk ChunkStager::stage(std::span<const uint8_t> bytes) {
  // A piece that does not fit goes to a fresh buffer rather than being cut
  // into a sliver, unless no buffer is free.
  constexpr size_t kMinSplit = 256;
  if (bytes.empty()) return {};
  size_t room = current_.chunk.valid() ? current_.capacity - used_ : 0;
  if (room == 0 || (room < bytes.size() && room < kMinSplit)) {
    BufferPool::Lease lease;
    if (pool_.acquire(lease)) {
      current_ = std::move(lease);
      used_ = 0;
      room = current_.capacity;
    } else if (room == 0) {
      return {};
    }
  }
  const size_t n = std::min(room, bytes.size());
  std::memcpy(current_.data + used_, bytes.data(), n);
  transmit::Chunk piece = current_.chunk.slice(used_, n);
  used_ += n;
  return piece;
}

void ChunkStager::reset() {
  current_ = BufferPool::Lease();
  used_ = 0;
}

// --- H3Session ----------------------------------------------------------------------------------

int H3Session::create(bool server, const nghttp3_callbacks& callbacks,
                      const nghttp3_settings& settings, void* user_data) {
  destroy();
  return server ? nghttp3_conn_server_new(&conn_, &callbacks, &settings, nullptr, user_data)
                : nghttp3_conn_client_new(&conn_, &callbacks, &settings, nullptr, user_data);
}

void H3Session::destroy() {
  if (conn_ != nullptr) nghttp3_conn_del(conn_);
  conn_ = nullptr;
  control_.reset();
  encoder_.reset();
  decoder_.reset();
  bound_ = false;
}

int H3Session::open_local_streams() {
  if (bound_) return 0;
  for (std::optional<uint64_t>* stream : {&control_, &encoder_, &decoder_}) {
    if (!stream->has_value()) {
      *stream = endpoint_.open_stream(handle_, conn::StreamDirection::kUnidirectional);
      if (!stream->has_value()) return 1;
      // SETTINGS, GOAWAY and QPACK instructions go ahead of any response
      // (a HEADERS frame may depend on an encoder instruction).
      conn::StreamPriority critical;
      critical.critical = true;
      endpoint_.set_stream_priority(handle_, **stream, critical);
    }
  }
  int rv = nghttp3_conn_bind_control_stream(conn_, static_cast<int64_t>(*control_));
  if (rv != 0) return rv;
  rv = nghttp3_conn_bind_qpack_streams(conn_, static_cast<int64_t>(*encoder_),
                                       static_cast<int64_t>(*decoder_));
  if (rv != 0) return rv;
  bound_ = true;
  return 0;
}

bool H3Session::is_local_critical(uint64_t stream_id) const {
  return stream_id == control_ || stream_id == encoder_ || stream_id == decoder_;
}

int H3Session::read_stream(uint64_t stream_id, bool& fin) {
  fin = false;
  for (;;) {
    bool end = false;
    const std::span<const uint8_t> piece = endpoint_.peek(handle_, stream_id, end);
    if (piece.empty() && !end) {
      // Nothing, or a reset QUIC reports now: nghttp3 must not hear of it,
      // or of a stream QUIC has finished with.
      (void)endpoint_.consume(handle_, stream_id, 0, end);
      return 0;
    }
    reading_ = stream_id;
    const nghttp3_ssize rv = nghttp3_conn_read_stream(conn_, static_cast<int64_t>(stream_id),
                                                      piece.data(), piece.size(), end ? 1 : 0);
    reading_.reset();
    (void)endpoint_.consume(handle_, stream_id, piece.size(), end);
    if (deferred_stop_.has_value()) {
      (void)endpoint_.stop_sending(handle_, stream_id, *deferred_stop_);
      deferred_stop_.reset();
    }
    if (rv < 0) return static_cast<int>(rv);
    if (end) {
      fin = true;
      return 0;
    }
  }
}

H3WriteStatus H3Session::write(ChunkStager& stager, H3StreamOwner& owner) {
  std::array<nghttp3_vec, 16> vecs;
  for (;;) {
    int64_t stream_id = -1;
    int fin = 0;
    const nghttp3_ssize count =
        nghttp3_conn_writev_stream(conn_, &stream_id, &fin, vecs.data(), vecs.size());
    if (count < 0) {
      error_ = static_cast<int>(count);
      return H3WriteStatus::kFatal;
    }
    if (stream_id < 0) return H3WriteStatus::kIdle;
    const StreamWrite sent =
        send_vecs(stream_id, {vecs.data(), static_cast<size_t>(count)}, fin != 0, stager, owner);
    int rv = nghttp3_conn_add_write_offset(conn_, stream_id, sent.accepted);
    // The chunks given to the endpoint keep the bytes: nghttp3 may free its
    // copies at once.
    if (rv == 0 && sent.accepted != 0) {
      rv = nghttp3_conn_add_ack_offset(conn_, stream_id, sent.accepted);
    }
    if (rv != 0) {
      error_ = rv;
      return H3WriteStatus::kFatal;
    }
    switch (sent.outcome) {
      case Outcome::kAll:
        if (sent.fin_sent) owner.on_fin_sent(stream_id);
        break;
      case Outcome::kBlocked: nghttp3_conn_block_stream(conn_, stream_id); break;
      case Outcome::kRefused:
        nghttp3_conn_shutdown_stream_write(conn_, stream_id);
        if (is_local_critical(static_cast<uint64_t>(stream_id))) {
          error_ = NGHTTP3_ERR_H3_CLOSED_CRITICAL_STREAM;
          return H3WriteStatus::kFatal;
        }
        owner.on_send_refused(stream_id);
        break;
      case Outcome::kNoBuffers: return H3WriteStatus::kNoBuffers;
      case Outcome::kClosing: return H3WriteStatus::kClosing;
    }
  }
}

H3Session::StreamWrite H3Session::send_vecs(int64_t stream_id, std::span<const nghttp3_vec> vecs,
                                            bool fin, ChunkStager& stager, H3StreamOwner& owner) {
  const auto id = static_cast<uint64_t>(stream_id);
  StreamWrite sent;
  auto note = [&sent](conn::SendResult result) {
    switch (result) {
      case conn::SendResult::kOk: break;
      case conn::SendResult::kBlocked: sent.outcome = Outcome::kBlocked; break;
      case conn::SendResult::kInvalidStream: sent.outcome = Outcome::kRefused; break;
      case conn::SendResult::kClosed: sent.outcome = Outcome::kClosing; break;
    }
  };
  for (size_t i = 0; i < vecs.size() && sent.outcome == Outcome::kAll; ++i) {
    const uint8_t* data = vecs[i].base;
    size_t left = vecs[i].len;
    while (left != 0) {
      transmit::Chunk piece = owner.find_lent(stream_id, data, left);
      if (!piece.valid()) piece = stager.stage({data, left});
      if (!piece.valid()) {
        sent.outcome = Outcome::kNoBuffers;
        break;
      }
      const size_t size = piece.size();
      const bool last = fin && i + 1 == vecs.size() && size == left;
      note(endpoint_.send(handle_, id, std::move(piece), last));
      if (sent.outcome != Outcome::kAll) break;
      sent.accepted += size;
      data += size;
      left -= size;
      sent.fin_sent = last;
    }
  }
  if (sent.outcome == Outcome::kAll && fin && !sent.fin_sent) {
    note(endpoint_.send(handle_, id, transmit::Chunk(), true));
    sent.fin_sent = sent.outcome == Outcome::kAll;
  }
  return sent;
}

void H3Session::fail(Instant now, int liberr) {
  fail_with_code(now, nghttp3_err_infer_quic_app_error_code(liberr), nghttp3_strerror(liberr));
}

void H3Session::fail_with_code(Instant now, uint64_t code, const char* reason) {
  if (failed_) return;
  failed_ = true;
  endpoint_.close(now, handle_, code, reason);
}

void H3Session::queue_reap(int64_t stream_id, bool& queued) {
  if (queued) return;
  queued = true;
  reap_list_.push_back(stream_id);
}

bool H3Session::next_reap(int64_t& stream_id) {
  if (reap_list_.empty()) return false;
  stream_id = reap_list_.back();
  reap_list_.pop_back();
  return true;
}

void H3Session::reset_stream(uint64_t stream_id, uint64_t code) {
  (void)endpoint_.reset_stream(handle_, stream_id, code);
}

void H3Session::stop_sending(uint64_t stream_id, uint64_t code) {
  if (reading_ == stream_id) {
    if (!deferred_stop_.has_value()) deferred_stop_ = code;
    return;
  }
  (void)endpoint_.stop_sending(handle_, stream_id, code);
}

std::optional<uint64_t> parse_decimal(std::span<const uint8_t> value) {
  if (value.empty() || value.size() > 19) return std::nullopt;
  uint64_t result = 0;
  for (uint8_t c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    result = result * 10 + (c - '0');
  }
  return result;
}

nghttp3_nv make_nv(std::string_view name, std::string_view value) {
  nghttp3_nv nv;
  nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = NGHTTP3_NV_FLAG_NONE;
  return nv;
}

}  // namespace dpquic::dataplane
