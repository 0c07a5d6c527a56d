// The application's verbs and queries on one connection. Every verb that
// changes a connection ends in after_call(), so the endpoint polls it again;
// every query answers false, 0 or empty without such a connection.

#include "quic/endpoint/endpoint.h"
#include "quic/endpoint/endpoint_slot.h"

namespace dpquic::endpoint {

using conn::Connection;

Connection* Endpoint::connection(ConnectionHandle handle) {
  if (handle >= slots_.size() || !slots_[handle]) return nullptr;
  return slots_[handle]->connection.get();
}

void Endpoint::wake(ConnectionHandle handle) {
  if (connection(handle) != nullptr) after_call(handle);
}

std::optional<uint64_t> Endpoint::open_stream(ConnectionHandle handle,
                                              conn::StreamDirection direction) {
  Connection* c = connection(handle);
  if (c == nullptr) return std::nullopt;
  auto id = c->open_stream(direction);
  after_call(handle);
  return id;
}

conn::SendResult Endpoint::send(ConnectionHandle handle, uint64_t stream_id, transmit::Chunk chunk,
                                bool fin) {
  Connection* c = connection(handle);
  if (c == nullptr) return conn::SendResult::kClosed;
  const conn::SendResult result = c->send(stream_id, std::move(chunk), fin);
  after_call(handle);
  return result;
}

size_t Endpoint::read(ConnectionHandle handle, uint64_t stream_id, std::span<uint8_t> out,
                      bool& fin) {
  fin = false;
  Connection* c = connection(handle);
  if (c == nullptr) return 0;
  const size_t n = c->read(stream_id, out, fin);
  after_call(handle);
  return n;
}

std::span<const uint8_t> Endpoint::peek(ConnectionHandle handle, uint64_t stream_id, bool& fin) {
  fin = false;
  Connection* c = connection(handle);
  return c == nullptr ? std::span<const uint8_t>{} : c->peek(stream_id, fin);
}

size_t Endpoint::consume(ConnectionHandle handle, uint64_t stream_id, size_t n, bool& fin) {
  fin = false;
  Connection* c = connection(handle);
  if (c == nullptr) return 0;
  const size_t consumed = c->consume(stream_id, n, fin);
  after_call(handle);
  return consumed;
}

bool Endpoint::set_stream_priority(ConnectionHandle handle, uint64_t stream_id,
                                   const conn::StreamPriority& priority) {
  Connection* c = connection(handle);
  if (c == nullptr) return false;
  const bool set = c->set_stream_priority(stream_id, priority);
  after_call(handle);
  return set;
}

uint64_t Endpoint::peer_stream_limit(ConnectionHandle handle, conn::StreamDirection direction) {
  const Connection* c = connection(handle);
  return c == nullptr ? 0 : c->stream_limits().advertised_max_streams(direction);
}

uint64_t Endpoint::peer_open_streams(ConnectionHandle handle, conn::StreamDirection direction) {
  const Connection* c = connection(handle);
  return c == nullptr ? 0 : c->stream_limits().peer_live_count(direction);
}

bool Endpoint::peer_unresponsive(ConnectionHandle handle, Instant now) {
  const Connection* c = connection(handle);
  return c != nullptr && c->peer_unresponsive(now);
}

bool Endpoint::is_open(ConnectionHandle handle) {
  const Connection* c = connection(handle);
  return c != nullptr && c->is_open();
}

void Endpoint::close(Instant now, ConnectionHandle handle, uint64_t error_code,
                     const char* reason) {
  Connection* c = connection(handle);
  if (c == nullptr) return;
  c->close(now, error_code, true, reason);
  after_call(handle);
}

bool Endpoint::reset_stream(ConnectionHandle handle, uint64_t stream_id, uint64_t error_code) {
  Connection* c = connection(handle);
  if (c == nullptr) return false;
  const bool reset = c->reset_stream(stream_id, error_code);
  after_call(handle);
  return reset;
}

bool Endpoint::stop_sending(ConnectionHandle handle, uint64_t stream_id, uint64_t error_code) {
  Connection* c = connection(handle);
  if (c == nullptr) return false;
  const bool stopped = c->stop_sending(stream_id, error_code);
  after_call(handle);
  return stopped;
}

bool Endpoint::exists(ConnectionHandle handle) { return connection(handle) != nullptr; }

bool Endpoint::is_established(ConnectionHandle handle) {
  const Connection* c = connection(handle);
  return c != nullptr && c->is_established();
}

std::string_view Endpoint::alpn(ConnectionHandle handle) {
  const Connection* c = connection(handle);
  const crypto::TlsSession* tls = c != nullptr ? c->tls() : nullptr;
  return tls != nullptr ? tls->alpn() : std::string_view();
}

uint64_t Endpoint::stream_writable_bytes(ConnectionHandle handle, uint64_t stream_id) {
  const Connection* c = connection(handle);
  return c == nullptr ? 0 : c->stream_writable_bytes(stream_id);
}

Duration Endpoint::smoothed_rtt(ConnectionHandle handle) {
  const Connection* c = connection(handle);
  return c == nullptr ? 0 : c->recovery().rtt().smoothed_rtt();
}

const conn::ConnectionStats* Endpoint::connection_stats(ConnectionHandle handle) {
  const Connection* c = connection(handle);
  return c == nullptr ? nullptr : &c->stats();
}

}  // namespace dpquic::endpoint
