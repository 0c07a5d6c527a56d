#pragma once
// One TLS 1.3 handshake for one QUIC connection, on BoringSSL's QUIC API
// (RFC 9001 §4). TLS does no I/O itself:
//  - CRYPTO frame data the connection receives goes in with
//    provide_handshake_data(level, bytes) followed by advance();
//  - CRYPTO data to send comes out per level through
//    pending_handshake_data(level) / consume(level, n), with stream offsets
//    tracked per level;
//  - traffic secrets go to the SecretSink as BoringSSL derives them
//    (handshake, 0-RTT and 1-RTT; never Initial: QUIC derives those from
//    the client's Destination Connection ID itself);
//  - a TLS alert becomes CRYPTO_ERROR 0x100 + alert (RFC 9001 §4.8).
//
// Nothing here throws. A failure is sticky: failed() turns true, error_code()
// is the QUIC transport error to close the connection with and
// error_reason() says why. Memory is per connection and bounded: at most
// kMaxOutgoingBytesPerLevel of outgoing CRYPTO data is held per level, and
// BoringSSL bounds what it buffers from the peer (max_incoming_bytes()).

#include <openssl/ssl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/secret_sink.h"
#include "crypto/tls_context.h"
#include "crypto/types.h"

namespace dpquic::crypto {

// Transport error codes a TLS session reports (RFC 9000 §20.1).
inline constexpr uint64_t kTlsInternalError = 0x01;
inline constexpr uint64_t kTlsProtocolViolation = 0x0a;
inline constexpr uint64_t kTlsCryptoBufferExceeded = 0x0d;
inline constexpr uint64_t kTlsCryptoErrorBase = 0x100;

class TlsSession {
 public:
  // Outgoing CRYPTO data held per level (sent but not yet acknowledged, plus
  // not yet sent). A certificate chain of a few kB fits many times over.
  static constexpr size_t kMaxOutgoingBytesPerLevel = 64 * 1024;

  // `context` and `sink` must outlive the session. Creation never fails
  // except by running out of memory, which shows as failed().
  static std::unique_ptr<TlsSession> create_server(TlsContext& context, SecretSink& sink);
  // `server_name` is sent as SNI unless it is an IP literal, is checked
  // against the certificate when the context verifies peers, and keys the
  // session cache: a cached ticket for it is offered (with 0-RTT if the
  // ticket allows it and the context enables early data).
  static std::unique_ptr<TlsSession> create_client(TlsContext& context, SecretSink& sink,
                                                   std::string_view server_name);

  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;
  ~TlsSession();

  // --- Before the first advance() ------------------------------------------
  // The encoded quic_transport_parameters extension (quic/wire encodes it).
  bool set_local_transport_parameters(std::span<const uint8_t> encoded);
  // Server only: BoringSSL accepts 0-RTT only if this matches the value of
  // the connection that minted the ticket. It must cover the transport
  // parameters a client remembers (RFC 9000 §7.4.1: not the connection IDs
  // or the stateless reset token, which change per connection) and any
  // application state such as HTTP/3 SETTINGS. Unset: 0-RTT is rejected.
  bool set_early_data_context(std::span<const uint8_t> context);
  // Server: `hook` (which must outlive the session) is called once with the
  // ClientHello.
  void set_client_hello_hook(ClientHelloHook* hook);

  // --- Driving the handshake -------------------------------------------------
  // Hands received CRYPTO bytes (in stream order, no gaps) to TLS. Data is
  // only accepted at TLS's current read level; call advance() after each
  // call so the next level's keys get installed. Fails with
  // CRYPTO_BUFFER_EXCEEDED beyond max_incoming_bytes(level) buffered.
  bool provide_handshake_data(EncryptionLevel level, std::span<const uint8_t> data);
  // Runs the handshake as far as the data allows (the client's first call
  // writes the ClientHello); after completion, processes post-handshake
  // messages (NewSessionTicket). Returns false once failed.
  bool advance();

  // --- Outgoing CRYPTO stream per level -------------------------------------
  // Bytes written by TLS not yet consumed, starting at stream offset
  // pending_offset(level). Valid until the next non-const call.
  std::span<const uint8_t> pending_handshake_data(EncryptionLevel level) const;
  uint64_t pending_offset(EncryptionLevel level) const;
  // Marks the first `n` pending bytes as sent (n <= pending size).
  void consume(EncryptionLevel level, size_t n);
  // Already-sent bytes [offset, offset + length) for retransmission; empty if
  // any part was released or never sent.
  std::span<const uint8_t> sent_handshake_data(EncryptionLevel level, uint64_t offset,
                                               size_t length) const;
  // Frees sent bytes below `offset` (acknowledged by the peer).
  void release_acknowledged(EncryptionLevel level, uint64_t offset);
  // Drops everything at `level` (its keys were discarded).
  void discard(EncryptionLevel level);
  // Total bytes written at `level` so far (the CRYPTO stream's end offset).
  uint64_t end_offset(EncryptionLevel level) const;
  // The most BoringSSL buffers from the peer at `level` (RFC 9000 §7.5).
  size_t max_incoming_bytes(EncryptionLevel level) const;

  // --- State -------------------------------------------------------------------
  wire::Role role() const { return role_; }
  bool handshake_complete() const { return handshake_complete_; }
  bool failed() const { return error_code_ != 0; }
  // 0 while not failed; else 0x01, 0x0a, 0x0d or 0x100 + TLS alert.
  uint64_t error_code() const { return error_code_; }
  const std::string& error_reason() const { return error_reason_; }

  // Negotiated ALPN protocol; empty until known.
  std::string_view alpn() const;
  // The peer's quic_transport_parameters extension, byte for byte; empty
  // until received.
  std::span<const uint8_t> peer_transport_parameters() const;
  // Client: the server's transport parameters remembered with the offered
  // ticket, which bound 0-RTT (RFC 9000 §7.4.1); empty without a ticket.
  std::span<const uint8_t> remembered_transport_parameters() const {
    return remembered_transport_parameters_;
  }
  // The suite of the handshake and 1-RTT keys, once the ServerHello is done.
  std::optional<CipherSuite> cipher_suite() const;
  // Server: the SNI the client sent; client: the name it connects to.
  std::string_view server_name() const;

  // The session resumed a ticket (PSK).
  bool session_resumed() const;
  // Client: 0-RTT was attempted (the early-data write secret was installed).
  bool early_data_offered() const { return early_data_offered_; }
  // Both: 0-RTT was accepted.
  bool early_data_accepted() const;
  // Client: the server rejected the 0-RTT attempt; 0-RTT keys must be dropped
  // and 0-RTT data resent in 1-RTT packets (RFC 9001 §4.6.2).
  bool early_data_rejected() const { return early_data_rejected_; }
  // BoringSSL's reason for accepting or rejecting 0-RTT (e.g. "accepted",
  // "session_not_resumed", "quic_parameter_mismatch").
  const char* early_data_reason() const;

  SSL* ssl() const { return ssl_.get(); }

 private:
  struct OutgoingBuffer {
    std::vector<uint8_t> bytes;  // from stream offset `base_offset`
    uint64_t base_offset = 0;
    size_t sent = 0;  // bytes[0, sent) were consumed
  };

  TlsSession(TlsContext& context, SecretSink& sink, wire::Role role);
  void fail(uint64_t code, std::string reason);
  void fail_from_ssl_error(uint64_t fallback_code, std::string_view what);
  bool install(EncryptionLevel level, Direction direction, const SSL_CIPHER* cipher,
               const uint8_t* secret, size_t length);
  bool append(EncryptionLevel level, const uint8_t* data, size_t length);

  static TlsSession* from_ssl(const SSL* ssl);
  static int on_set_read_secret(SSL* ssl, ssl_encryption_level_t level, const SSL_CIPHER* cipher,
                                const uint8_t* secret, size_t length);
  static int on_set_write_secret(SSL* ssl, ssl_encryption_level_t level, const SSL_CIPHER* cipher,
                                 const uint8_t* secret, size_t length);
  static int on_add_handshake_data(SSL* ssl, ssl_encryption_level_t level, const uint8_t* data,
                                   size_t length);
  static int on_flush_flight(SSL* ssl);
  static int on_send_alert(SSL* ssl, ssl_encryption_level_t level, uint8_t alert);
  static const SSL_QUIC_METHOD kQuicMethod;

  SecretSink& sink_;
  wire::Role role_;
  bssl::UniquePtr<SSL> ssl_;
  std::string server_name_;  // client: also the session cache key
  std::vector<uint8_t> remembered_transport_parameters_;
  std::array<OutgoingBuffer, kEncryptionLevelCount> outgoing_;
  bool handshake_complete_ = false;
  bool early_data_offered_ = false;
  bool early_data_rejected_ = false;
  uint64_t error_code_ = 0;
  std::string error_reason_;
};

}  // namespace dpquic::crypto
