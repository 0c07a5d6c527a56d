#include "crypto/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>

namespace dpquic::crypto {
namespace {

// Bounds the loop in advance(): an early return (0-RTT / half-RTT) and an
// early-data reject each need one extra SSL_do_handshake call.
constexpr int kMaxHandshakeStepsPerAdvance = 4;

int session_ex_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::optional<EncryptionLevel> to_level(ssl_encryption_level_t level) {
  switch (level) {
    case ssl_encryption_initial: return EncryptionLevel::kInitial;
    case ssl_encryption_early_data: return EncryptionLevel::kEarlyData;
    case ssl_encryption_handshake: return EncryptionLevel::kHandshake;
    case ssl_encryption_application: return EncryptionLevel::kApplication;
  }
  return std::nullopt;
}

ssl_encryption_level_t to_ssl_level(EncryptionLevel level) {
  switch (level) {
    case EncryptionLevel::kInitial: return ssl_encryption_initial;
    case EncryptionLevel::kEarlyData: return ssl_encryption_early_data;
    case EncryptionLevel::kHandshake: return ssl_encryption_handshake;
    case EncryptionLevel::kApplication: break;
  }
  return ssl_encryption_application;
}

// RFC 8446 §B.4 cipher suite code points.
std::optional<CipherSuite> to_suite(const SSL_CIPHER* cipher) {
  if (cipher == nullptr) return std::nullopt;
  switch (SSL_CIPHER_get_protocol_id(cipher)) {
    case 0x1301: return CipherSuite::kAes128Gcm;
    case 0x1302: return CipherSuite::kAes256Gcm;
    case 0x1303: return CipherSuite::kChaCha20Poly1305;
    default: return std::nullopt;
  }
}

bool is_ip_literal(const std::string& name) {
  uint8_t address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

size_t index_of(EncryptionLevel level) { return static_cast<size_t>(level); }

}  // namespace

const SSL_QUIC_METHOD TlsSession::kQuicMethod = {
    TlsSession::on_set_read_secret, TlsSession::on_set_write_secret,
    TlsSession::on_add_handshake_data, TlsSession::on_flush_flight, TlsSession::on_send_alert};

TlsSession::TlsSession(TlsContext& context, SecretSink& sink, wire::Role role)
    : sink_(sink), role_(role), ssl_(SSL_new(context.ssl_ctx())) {
  if (ssl_ == nullptr) {
    fail(kTlsInternalError, "SSL_new failed");
    return;
  }
  SSL_set_ex_data(ssl_.get(), session_ex_index(), this);
  if (SSL_set_quic_method(ssl_.get(), &kQuicMethod) != 1) {
    fail(kTlsInternalError, "SSL_set_quic_method failed");
    return;
  }
  // QUIC v1 (RFC 9001 §8.2): extension code point 0x39, not the draft one.
  SSL_set_quic_use_legacy_codepoint(ssl_.get(), 0);
  // The SSL's copy of the context's configuration (certificate, ALPN, ...)
  // is freed once the handshake completes: an established connection keeps
  // only what the handshake produced (memory per idle connection).
  SSL_set_shed_handshake_config(ssl_.get(), 1);
  SSL_set_early_data_enabled(ssl_.get(), context.early_data_enabled() ? 1 : 0);
  if (role == wire::Role::kServer) {
    SSL_set_accept_state(ssl_.get());
  } else {
    SSL_set_connect_state(ssl_.get());
  }
}

TlsSession::~TlsSession() = default;

std::unique_ptr<TlsSession> TlsSession::create_server(TlsContext& context, SecretSink& sink) {
  std::unique_ptr<TlsSession> session(new TlsSession(context, sink, wire::Role::kServer));
  if (!session->failed() && context.role() != wire::Role::kServer) {
    session->fail(kTlsInternalError, "server session on a client TLS context");
  }
  return session;
}

std::unique_ptr<TlsSession> TlsSession::create_client(TlsContext& context, SecretSink& sink,
                                                      std::string_view server_name) {
  std::unique_ptr<TlsSession> session(new TlsSession(context, sink, wire::Role::kClient));
  if (session->failed()) return session;
  if (context.role() != wire::Role::kClient) {
    session->fail(kTlsInternalError, "client session on a server TLS context");
    return session;
  }
  session->server_name_.assign(server_name);
  SSL* ssl = session->ssl_.get();
  const std::string& name = session->server_name_;
  bool ip_literal = is_ip_literal(name);
  // RFC 6066 §3: literal IP addresses are not sent as SNI.
  if (!name.empty() && !ip_literal && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    session->fail_from_ssl_error(kTlsInternalError, "invalid server name");
    return session;
  }
  if (context.verify_peer()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    int ok = name.empty() ? 0
             : ip_literal ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                          : X509_VERIFY_PARAM_set1_host(param, name.data(), name.size());
    if (ok != 1) {
      session->fail(kTlsInternalError, "cannot verify the server without a valid server name");
      return session;
    }
  }
  SSL_set_ex_data(ssl, TlsContext::session_cache_key_index(), &session->server_name_);
  if (std::optional<CachedSession> cached = context.take_session(name)) {
    if (SSL_set_session(ssl, cached->session.get()) == 1) {
      session->remembered_transport_parameters_ = std::move(cached->peer_transport_parameters);
    }
  }
  return session;
}

void TlsSession::set_client_hello_hook(ClientHelloHook* hook) {
  if (ssl_ != nullptr) SSL_set_ex_data(ssl_.get(), TlsContext::client_hello_hook_index(), hook);
}

// --- Errors ---------------------------------------------------------------------

void TlsSession::fail(uint64_t code, std::string reason) {
  if (error_code_ != 0) return;  // the first cause is the one reported
  error_code_ = code;
  error_reason_ = std::move(reason);
}

void TlsSession::fail_from_ssl_error(uint64_t fallback_code, std::string_view what) {
  uint32_t packed = ERR_peek_last_error();
  ERR_clear_error();
  std::string detail(what);
  if (packed != 0) {
    char buffer[256];
    ERR_error_string_n(packed, buffer, sizeof(buffer));
    detail += ": ";
    detail += buffer;
  }
  if (error_code_ != 0) {
    // An alert (or a refused secret) came first; keep its code, add detail.
    if (error_reason_.find(detail) == std::string::npos) error_reason_ += " (" + detail + ")";
    return;
  }
  fail(fallback_code, std::move(detail));
}

// --- Inputs ---------------------------------------------------------------------

bool TlsSession::set_local_transport_parameters(std::span<const uint8_t> encoded) {
  if (failed()) return false;
  if (SSL_set_quic_transport_params(ssl_.get(), encoded.data(), encoded.size()) != 1) {
    fail_from_ssl_error(kTlsInternalError, "cannot set transport parameters");
    return false;
  }
  return true;
}

bool TlsSession::set_early_data_context(std::span<const uint8_t> context) {
  if (failed()) return false;
  if (role_ != wire::Role::kServer) {
    fail(kTlsInternalError, "the early data context is a server setting");
    return false;
  }
  if (SSL_set_quic_early_data_context(ssl_.get(), context.data(), context.size()) != 1) {
    fail_from_ssl_error(kTlsInternalError, "cannot set early data context");
    return false;
  }
  return true;
}

bool TlsSession::provide_handshake_data(EncryptionLevel level, std::span<const uint8_t> data) {
  if (failed()) return false;
  ERR_clear_error();
  if (SSL_provide_quic_data(ssl_.get(), to_ssl_level(level), data.data(), data.size()) == 1) {
    return true;
  }
  uint32_t packed = ERR_peek_last_error();
  if (ERR_GET_LIB(packed) == ERR_LIB_SSL &&
      ERR_GET_REASON(packed) == SSL_R_EXCESSIVE_MESSAGE_SIZE) {
    fail_from_ssl_error(kTlsCryptoBufferExceeded, "too much buffered CRYPTO data");
  } else if (ERR_GET_LIB(packed) == ERR_LIB_SSL &&
             ERR_GET_REASON(packed) == SSL_R_WRONG_ENCRYPTION_LEVEL_RECEIVED) {
    fail_from_ssl_error(kTlsProtocolViolation, "CRYPTO data at an unexpected encryption level");
  } else {
    fail_from_ssl_error(kTlsInternalError, "SSL_provide_quic_data failed");
  }
  return false;
}

bool TlsSession::advance() {
  if (failed()) return false;
  SSL* ssl = ssl_.get();
  for (int step = 0; !handshake_complete_ && step < kMaxHandshakeStepsPerAdvance; ++step) {
    ERR_clear_error();
    int result = SSL_do_handshake(ssl);
    if (result == 1) {
      // An early return (client may send 0-RTT, server may send half-RTT
      // data) leaves the handshake in progress: keep going until TLS needs
      // the peer's next flight.
      if (!SSL_in_init(ssl)) handshake_complete_ = true;
      continue;
    }
    int error = SSL_get_error(ssl, result);
    if (error == SSL_ERROR_WANT_READ) break;
    if (error == SSL_ERROR_EARLY_DATA_REJECTED) {
      early_data_rejected_ = true;
      SSL_reset_early_data_reject(ssl);
      continue;
    }
    fail_from_ssl_error(kTlsInternalError, "TLS handshake failed");
    return false;
  }
  if (handshake_complete_) {
    ERR_clear_error();
    if (SSL_process_quic_post_handshake(ssl) != 1) {
      fail_from_ssl_error(kTlsInternalError, "post-handshake message rejected");
      return false;
    }
  }
  return !failed();
}

// --- BoringSSL callbacks ----------------------------------------------------------

TlsSession* TlsSession::from_ssl(const SSL* ssl) {
  return static_cast<TlsSession*>(SSL_get_ex_data(ssl, session_ex_index()));
}

bool TlsSession::install(EncryptionLevel level, Direction direction, const SSL_CIPHER* cipher,
                         const uint8_t* secret, size_t length) {
  std::optional<CipherSuite> suite = to_suite(cipher);
  if (level == EncryptionLevel::kInitial || !suite.has_value() || length != secret_length(*suite)) {
    fail(kTlsInternalError, "unexpected secret from TLS");
    return false;
  }
  if (!sink_.install_secret(level, direction, *suite, std::span(secret, length))) {
    fail(kTlsInternalError, "packet protection refused the keys");
    return false;
  }
  if (level == EncryptionLevel::kEarlyData && direction == Direction::kWrite) {
    early_data_offered_ = true;
  }
  return true;
}

int TlsSession::on_set_read_secret(SSL* ssl, ssl_encryption_level_t level, const SSL_CIPHER* cipher,
                                   const uint8_t* secret, size_t secret_length) {
  TlsSession* session = from_ssl(ssl);
  std::optional<EncryptionLevel> ours = to_level(level);
  return session != nullptr && ours.has_value() &&
                 session->install(*ours, Direction::kRead, cipher, secret, secret_length)
             ? 1
             : 0;
}

int TlsSession::on_set_write_secret(SSL* ssl, ssl_encryption_level_t level,
                                    const SSL_CIPHER* cipher, const uint8_t* secret,
                                    size_t secret_length) {
  TlsSession* session = from_ssl(ssl);
  std::optional<EncryptionLevel> ours = to_level(level);
  return session != nullptr && ours.has_value() &&
                 session->install(*ours, Direction::kWrite, cipher, secret, secret_length)
             ? 1
             : 0;
}

bool TlsSession::append(EncryptionLevel level, const uint8_t* data, size_t length) {
  OutgoingBuffer& buffer = outgoing_[index_of(level)];
  if (buffer.bytes.size() + length > kMaxOutgoingBytesPerLevel) {
    fail(kTlsInternalError, "outgoing CRYPTO data exceeds the per-level limit");
    return false;
  }
  buffer.bytes.insert(buffer.bytes.end(), data, data + length);
  return true;
}

int TlsSession::on_add_handshake_data(SSL* ssl, ssl_encryption_level_t level, const uint8_t* data,
                                      size_t length) {
  TlsSession* session = from_ssl(ssl);
  std::optional<EncryptionLevel> ours = to_level(level);
  return session != nullptr && ours.has_value() && session->append(*ours, data, length) ? 1 : 0;
}

// The connection decides when to send; pending data is picked up after
// advance() returns.
int TlsSession::on_flush_flight(SSL*) { return 1; }

int TlsSession::on_send_alert(SSL* ssl, ssl_encryption_level_t, uint8_t alert) {
  TlsSession* session = from_ssl(ssl);
  if (session == nullptr) return 0;
  // RFC 9001 §4.8: the alert is not sent; it becomes CRYPTO_ERROR.
  const char* description = SSL_alert_desc_string_long(alert);
  session->fail(kTlsCryptoErrorBase + alert,
                std::string("TLS alert ") + description + " (" + std::to_string(alert) + ")");
  return 1;
}

// --- Outgoing CRYPTO stream -----------------------------------------------------

std::span<const uint8_t> TlsSession::pending_handshake_data(EncryptionLevel level) const {
  const OutgoingBuffer& buffer = outgoing_[index_of(level)];
  return std::span<const uint8_t>(buffer.bytes).subspan(buffer.sent);
}

uint64_t TlsSession::pending_offset(EncryptionLevel level) const {
  const OutgoingBuffer& buffer = outgoing_[index_of(level)];
  return buffer.base_offset + buffer.sent;
}

uint64_t TlsSession::end_offset(EncryptionLevel level) const {
  const OutgoingBuffer& buffer = outgoing_[index_of(level)];
  return buffer.base_offset + buffer.bytes.size();
}

void TlsSession::consume(EncryptionLevel level, size_t n) {
  OutgoingBuffer& buffer = outgoing_[index_of(level)];
  buffer.sent += std::min(n, buffer.bytes.size() - buffer.sent);
}

std::span<const uint8_t> TlsSession::sent_handshake_data(EncryptionLevel level, uint64_t offset,
                                                         size_t length) const {
  const OutgoingBuffer& buffer = outgoing_[index_of(level)];
  if (offset < buffer.base_offset || offset - buffer.base_offset > buffer.sent ||
      length > buffer.sent - (offset - buffer.base_offset)) {
    return {};
  }
  return std::span<const uint8_t>(buffer.bytes).subspan(offset - buffer.base_offset, length);
}

void TlsSession::release_acknowledged(EncryptionLevel level, uint64_t offset) {
  OutgoingBuffer& buffer = outgoing_[index_of(level)];
  if (offset <= buffer.base_offset) return;
  size_t count = static_cast<size_t>(std::min<uint64_t>(offset - buffer.base_offset, buffer.sent));
  buffer.bytes.erase(buffer.bytes.begin(), buffer.bytes.begin() + static_cast<ptrdiff_t>(count));
  buffer.base_offset += count;
  buffer.sent -= count;
}

void TlsSession::discard(EncryptionLevel level) {
  OutgoingBuffer& buffer = outgoing_[index_of(level)];
  buffer.base_offset += buffer.bytes.size();
  buffer.sent = 0;
  std::vector<uint8_t>().swap(buffer.bytes);  // give the memory back
}

size_t TlsSession::max_incoming_bytes(EncryptionLevel level) const {
  return ssl_ == nullptr ? 0 : SSL_quic_max_handshake_flight_len(ssl_.get(), to_ssl_level(level));
}

// --- State ------------------------------------------------------------------------

std::string_view TlsSession::alpn() const {
  const uint8_t* data = nullptr;
  unsigned length = 0;
  if (ssl_ != nullptr) SSL_get0_alpn_selected(ssl_.get(), &data, &length);
  return std::string_view(reinterpret_cast<const char*>(data), data == nullptr ? 0 : length);
}

std::span<const uint8_t> TlsSession::peer_transport_parameters() const {
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (ssl_ != nullptr) SSL_get_peer_quic_transport_params(ssl_.get(), &data, &length);
  return std::span<const uint8_t>(data, data == nullptr ? 0 : length);
}

std::optional<CipherSuite> TlsSession::cipher_suite() const {
  return ssl_ == nullptr ? std::nullopt : to_suite(SSL_get_current_cipher(ssl_.get()));
}

std::string_view TlsSession::server_name() const {
  if (role_ == wire::Role::kClient) return server_name_;
  const char* name =
      ssl_ == nullptr ? nullptr : SSL_get_servername(ssl_.get(), TLSEXT_NAMETYPE_host_name);
  return name == nullptr ? std::string_view() : std::string_view(name);
}

bool TlsSession::session_resumed() const {
  return ssl_ != nullptr && SSL_session_reused(ssl_.get()) == 1;
}

bool TlsSession::early_data_accepted() const {
  return ssl_ != nullptr && SSL_early_data_accepted(ssl_.get()) == 1;
}

const char* TlsSession::early_data_reason() const {
  const char* reason = ssl_ == nullptr
                           ? nullptr
                           : SSL_early_data_reason_string(SSL_get_early_data_reason(ssl_.get()));
  return reason != nullptr ? reason : "unknown";
}

}  // namespace dpquic::crypto
