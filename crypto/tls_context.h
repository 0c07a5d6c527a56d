#pragma once
// One SSL_CTX per process or per core, for the server or the client role:
// TLS 1.3 only, ALPN, session tickets and 0-RTT, SSLKEYLOGFILE, peer
// verification. Connections create their SSL from it (see tls_session.h).
//
// Cipher suites: BoringSSL hard-codes the TLS 1.3 suites and offers exactly
// the three QUIC uses (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
// TLS_CHACHA20_POLY1305_SHA256); there is no API to change that list. The
// client orders ChaCha20 first when the CPU has no AES instructions; the
// server prefers AES-256-GCM when the group is the post-quantum CECPQ2.
//
// 0-RTT anti-replay (RFC 8446 §8), what the server applies:
//  - BoringSSL accepts 0-RTT only on a resumed session whose ticket allowed
//    it, with the same ALPN, without HelloRetryRequest, with a matching QUIC
//    early-data context (TlsSession::set_early_data_context), and only if
//    the client's ticket age is within 60 s of the age the server computes
//    (RFC 8446 §8.3 freshness check). Tickets live `ticket_lifetime_seconds`.
//  - BoringSSL itself keeps no record of used tickets. This context adds a
//    bounded single-use record (RFC 8446 §8.2): a 0-RTT offer whose PSK
//    identity was already seen within the freshness window (120 s: 60 s skew
//    either way) is resumed without 0-RTT. When the record is full, 0-RTT is
//    refused rather than risked. Only tickets this context issued are
//    recorded (their HMAC under one of the context's ticket keys is checked
//    first, ticket_authentic), so made-up identities cannot fill the record
//    and turn 0-RTT off for everyone. The record is per context, so with one
//    context per core, or hosts sharing ticket keys, a replay steered to
//    another core or host is only bounded by the freshness window;
//    application data in 0-RTT must be idempotent.
//  - The amount of early data is not a TLS limit in QUIC (max_early_data_size
//    is always 0xffffffff, RFC 9001 §4.6.1); it is bounded by the transport
//    parameters (initial_max_data etc.), which the connection enforces.
//
// Threading: a context is used by one thread (its core). Creation throws
// std::runtime_error; nothing after creation throws.

#include <openssl/ssl.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/ticket_keys.h"
#include "quic/wire/role.h"

namespace dpquic::crypto {

// How the client checks the server's certificate. There is deliberately no
// "system store" default: this engine runs offline and against test
// servers, so the trust decision is always explicit.
enum class PeerVerification : uint8_t {
  // Chain must lead to one of the configured trusted certificates and the
  // leaf must match the server name (DNS name or IP literal).
  kTrustedCertificates,
  // Accept any certificate. For tests, benchmarks and interop only.
  kInsecureNoVerify,
};

struct TlsServerConfig {
  // Required. The SSL_CTX takes its own references; the chain need not
  // outlive the context.
  const CertificateChain* certificate = nullptr;
  // Offered in this order of preference; a client offering none of them
  // fails with no_application_protocol (CRYPTO_ERROR 0x178).
  std::vector<std::string> alpn_protocols{"h3", "perf"};
  bool early_data_enabled = true;
  // TLS 1.3 ticket (PSK) lifetime; BoringSSL's default is two days.
  uint32_t ticket_lifetime_seconds = 24 * 60 * 60;
  // Session-ticket keys (at most kMaxTicketKeys): the first encrypts new
  // tickets, every one decrypts; a ticket under a later key resumes and is
  // replaced by one under the first. Per-core contexts, and hosts that
  // resume each other's tickets, must share them. Empty: one random key for
  // this context alone.
  std::vector<TicketKey> ticket_keys;
  // Single-use record of 0-RTT PSK identities (rounded up to a power of 2).
  size_t replay_filter_capacity = 4096;
  // Key exchange groups in BoringSSL's curves-list syntax ("X25519:P-256");
  // empty keeps BoringSSL's default (X25519, P-256, P-384).
  std::string groups;
  // SSLKEYLOGFILE: when non-empty, secrets are appended to this file.
  std::string keylog_file;
};

struct TlsClientConfig {
  std::vector<std::string> alpn_protocols{"h3"};
  PeerVerification verification = PeerVerification::kTrustedCertificates;
  // Trust anchors for kTrustedCertificates: PEM file and/or PEM text; at
  // least one certificate is required in that mode.
  std::string trusted_certificates_file;
  std::string trusted_certificates_pem;
  bool early_data_enabled = true;
  // Latest ticket per server name; the least recently stored name is
  // evicted beyond this many.
  size_t session_cache_capacity = 256;
  std::string groups;
  std::string keylog_file;
};

// A resumption ticket and what the client must remember with it for 0-RTT
// (RFC 9000 §7.4.1): the server's transport parameters, as bytes.
struct CachedSession {
  bssl::UniquePtr<SSL_SESSION> session;
  std::vector<uint8_t> peer_transport_parameters;
};

// Bounded record of 0-RTT PSK identities (RFC 8446 §8.2). Fixed memory,
// allocated at construction; lookups probe a few slots only.
class EarlyDataReplayFilter {
 public:
  static constexpr uint64_t kWindowSeconds = 120;

  explicit EarlyDataReplayFilter(size_t capacity);
  // True if `identity` was not seen in the last kWindowSeconds and has now
  // been recorded; false for a replay, or when no slot is free.
  bool admit(std::span<const uint8_t> identity, uint64_t now_seconds);
  // Identities recorded and not yet expired at `now_seconds`.
  size_t recorded(uint64_t now_seconds) const;

 private:
  struct Slot {
    uint64_t fingerprint = 0;
    uint64_t expires_at = 0;  // 0: empty
  };
  std::vector<Slot> slots_;
};

// Server: sees the client's quic_transport_parameters extension when the
// ClientHello arrives, before TLS reads or writes anything else of the
// handshake, so the server may still change its own parameters (e.g. the
// chosen version of compatible version negotiation, RFC 9368 §4) with
// TlsSession::set_local_transport_parameters. Returning false fails the
// handshake.
class ClientHelloHook {
 public:
  virtual ~ClientHelloHook() = default;
  // `encoded`: the extension's contents, empty if the client sent none.
  virtual bool on_client_transport_parameters(std::span<const uint8_t> encoded) = 0;
};

class TlsContext {
 public:
  static std::unique_ptr<TlsContext> create_server(const TlsServerConfig& config);
  static std::unique_ptr<TlsContext> create_client(const TlsClientConfig& config);

  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ~TlsContext();

  wire::Role role() const { return role_; }
  SSL_CTX* ssl_ctx() const { return ctx_.get(); }
  bool early_data_enabled() const { return early_data_enabled_; }
  bool verify_peer() const { return verify_peer_; }
  // Server with 0-RTT: PSK identities in the single-use record now.
  size_t replay_records() const;
  // Server: the certificate chain and key for handshakes that start from
  // now on (a session copies them when it is made, so handshakes under way
  // keep theirs), and the ticket keys, unless `ticket_keys` is empty. On
  // the thread that uses the context. False, with the context unchanged,
  // when the key does not match the certificate or a ticket key is
  // malformed; check the chain with create_server first to avoid that.
  bool replace_server_credentials(const CertificateChain& chain,
                                  const std::vector<TicketKey>& ticket_keys);

  // Client session cache. take_session removes the entry: RFC 8446 §C.4,
  // clients should not reuse a ticket; the new connection stores a fresh one.
  std::optional<CachedSession> take_session(const std::string& server_name);
  void store_session(const std::string& server_name, CachedSession session);
  size_t cached_session_count() const { return sessions_.size(); }

  // The context that created `ctx`, or nullptr.
  static TlsContext* from_ssl_ctx(const SSL_CTX* ctx);
  // SSL ex-data slot a client TlsSession fills with a `const std::string*`
  // (its session cache key) so new tickets are stored under it.
  static int session_cache_key_index();
  // SSL ex-data slot a server TlsSession fills with its ClientHelloHook*.
  static int client_hello_hook_index();

 private:
  // `with_x509`: false builds the context on BoringSSL's CRYPTO_BUFFER-only
  // method (no X.509 parsing of the peer's certificates; a client that does
  // not verify its peer needs none of it).
  TlsContext(wire::Role role, bool with_x509);
  void configure_common(const std::vector<std::string>& alpn, bool early_data,
                        const std::string& groups, const std::string& keylog_file);
  void configure_server(const TlsServerConfig& config);
  void configure_ticket_keys(const std::vector<TicketKey>& keys);
  // Empty when `keys` are usable, else why not.
  static std::string ticket_keys_problem(const std::vector<TicketKey>& keys);
  // Installs `chain` in ctx_; empty on success, else why it failed.
  std::string use_certificate(const CertificateChain& chain);
  void configure_client(const TlsClientConfig& config);

  static int select_alpn(SSL* ssl, const uint8_t** out, uint8_t* out_length, const uint8_t* in,
                         unsigned in_length, void* arg);
  static enum ssl_select_cert_result_t on_client_hello(const SSL_CLIENT_HELLO* client_hello);
  static int on_new_session(SSL* ssl, SSL_SESSION* session);
  static int on_ticket_key(SSL* ssl, uint8_t* key_name, uint8_t* iv, EVP_CIPHER_CTX* cipher_ctx,
                           HMAC_CTX* hmac_ctx, int encrypt);
  static void on_keylog_line(const SSL* ssl, const char* line);

  wire::Role role_;
  bssl::UniquePtr<SSL_CTX> ctx_;
  std::vector<uint8_t> alpn_wire_;  // length-prefixed, in preference order
  bool early_data_enabled_ = false;
  bool verify_peer_ = false;
  std::FILE* keylog_ = nullptr;
  std::optional<EarlyDataReplayFilter> replay_filter_;
  std::vector<TicketKey> ticket_keys_;  // server: the first issues tickets

  struct CacheEntry {
    CachedSession cached;
    uint64_t stored_sequence = 0;
  };
  std::unordered_map<std::string, CacheEntry> sessions_;
  size_t session_cache_capacity_ = 0;
  uint64_t store_sequence_ = 0;
};

}  // namespace dpquic::crypto
