#include "crypto/tls_context.h"

#include <fcntl.h>
#include <openssl/bytestring.h>
#include <openssl/cipher.h>
#include <openssl/digest.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/mem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "crypto/ssl_errors.h"

namespace dpquic::crypto {
namespace {

constexpr size_t kReplayProbeLength = 8;

int context_ex_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// RFC 7301 §3.1 protocol name list: each name 1..255 bytes, length-prefixed.
std::vector<uint8_t> encode_alpn(const std::vector<std::string>& protocols, std::string_view what) {
  if (protocols.empty()) throw_configuration_error(what, "ALPN list is empty (QUIC requires ALPN)");
  std::vector<uint8_t> wire;
  for (const std::string& protocol : protocols) {
    if (protocol.empty() || protocol.size() > 255) {
      throw_configuration_error(what, "ALPN protocol \"" + protocol + "\" must be 1 to 255 bytes");
    }
    wire.push_back(static_cast<uint8_t>(protocol.size()));
    wire.insert(wire.end(), protocol.begin(), protocol.end());
  }
  return wire;
}

uint64_t steady_seconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// The first PSK identity of a ClientHello pre_shared_key extension
// (RFC 8446 §4.2.11), the one BoringSSL tries to resume.
bool first_psk_identity(const uint8_t* extension, size_t length, CBS* identity) {
  CBS contents, identities;
  CBS_init(&contents, extension, length);
  return CBS_get_u16_length_prefixed(&contents, &identities) &&
         CBS_get_u16_length_prefixed(&identities, identity) && CBS_len(identity) > 0;
}

}  // namespace

// --- EarlyDataReplayFilter --------------------------------------------------

EarlyDataReplayFilter::EarlyDataReplayFilter(size_t capacity)
    : slots_(std::bit_ceil(std::max<size_t>(capacity, kReplayProbeLength))) {}

bool EarlyDataReplayFilter::admit(std::span<const uint8_t> identity, uint64_t now_seconds) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(identity.data(), identity.size(), digest);
  uint64_t fingerprint = 0;
  std::memcpy(&fingerprint, digest, sizeof(fingerprint));
  const size_t mask = slots_.size() - 1;
  Slot* free_slot = nullptr;
  for (size_t probe = 0; probe < kReplayProbeLength; ++probe) {
    Slot& slot = slots_[(fingerprint + probe) & mask];
    bool live = slot.expires_at > now_seconds;
    if (live && slot.fingerprint == fingerprint) return false;  // seen: a replay
    if (!live && free_slot == nullptr) free_slot = &slot;
  }
  if (free_slot == nullptr) return false;  // full: refuse 0-RTT rather than risk it
  free_slot->fingerprint = fingerprint;
  free_slot->expires_at = now_seconds + kWindowSeconds;
  return true;
}

size_t EarlyDataReplayFilter::recorded(uint64_t now_seconds) const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [&](const Slot& slot) {
    return slot.expires_at > now_seconds;
  }));
}

// --- TlsContext ---------------------------------------------------------------

TlsContext::TlsContext(wire::Role role, bool with_x509)
    : role_(role), ctx_(SSL_CTX_new(with_x509 ? TLS_method() : TLS_with_buffers_method())) {
  if (ctx_ == nullptr)
    throw_configuration_error("TLS context", "SSL_CTX_new failed: " + last_ssl_error());
  SSL_CTX_set_ex_data(ctx_.get(), context_ex_index(), this);
}

TlsContext::~TlsContext() {
  if (keylog_ != nullptr) std::fclose(keylog_);
}

TlsContext* TlsContext::from_ssl_ctx(const SSL_CTX* ctx) {
  return static_cast<TlsContext*>(SSL_CTX_get_ex_data(ctx, context_ex_index()));
}

int TlsContext::client_hello_hook_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int TlsContext::session_cache_key_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::unique_ptr<TlsContext> TlsContext::create_server(const TlsServerConfig& config) {
  std::unique_ptr<TlsContext> context(new TlsContext(wire::Role::kServer, true));
  context->configure_common(config.alpn_protocols, config.early_data_enabled, config.groups,
                            config.keylog_file);
  context->configure_server(config);
  return context;
}

std::unique_ptr<TlsContext> TlsContext::create_client(const TlsClientConfig& config) {
  std::unique_ptr<TlsContext> context(new TlsContext(
      wire::Role::kClient, config.verification != PeerVerification::kInsecureNoVerify));
  context->configure_common(config.alpn_protocols, config.early_data_enabled, config.groups,
                            config.keylog_file);
  context->configure_client(config);
  return context;
}

void TlsContext::configure_common(const std::vector<std::string>& alpn, bool early_data,
                                  const std::string& groups, const std::string& keylog_file) {
  const char* what = role_ == wire::Role::kServer ? "TLS server" : "TLS client";
  SSL_CTX* ctx = ctx_.get();
  // QUIC requires TLS 1.3 (RFC 9001 §4.2); the suites are BoringSSL's fixed
  // TLS 1.3 list, exactly the three QUIC defines.
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
    throw_configuration_error(what, "cannot restrict to TLS 1.3: " + last_ssl_error());
  }
  alpn_wire_ = encode_alpn(alpn, what);
  early_data_enabled_ = early_data;
  SSL_CTX_set_early_data_enabled(ctx, early_data ? 1 : 0);
  if (!groups.empty() && SSL_CTX_set1_curves_list(ctx, groups.c_str()) != 1) {
    throw_configuration_error(
        what, "invalid key exchange groups \"" + groups + "\": " + last_ssl_error());
  }
  if (!keylog_file.empty()) {
    // Secrets: owner-only, appended so several contexts (cores) can share it.
    int fd = ::open(keylog_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || (keylog_ = ::fdopen(fd, "a")) == nullptr) {
      int error = errno;
      if (fd >= 0) ::close(fd);
      throw_configuration_error(keylog_file,
                                std::string("cannot open SSLKEYLOGFILE: ") + std::strerror(error));
    }
    SSL_CTX_set_keylog_callback(ctx, on_keylog_line);
  }
}

void TlsContext::configure_server(const TlsServerConfig& config) {
  SSL_CTX* ctx = ctx_.get();
  if (config.certificate == nullptr)
    throw_configuration_error("TLS server", "no certificate configured");
  const std::string problem = use_certificate(*config.certificate);
  if (!problem.empty()) throw_configuration_error("TLS server", problem);
  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, this);

  // Stateless tickets only: no internal session-ID cache to grow.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_set_session_psk_dhe_timeout(ctx, config.ticket_lifetime_seconds);
  configure_ticket_keys(config.ticket_keys);
  if (config.early_data_enabled) replay_filter_.emplace(config.replay_filter_capacity);
  // Always: sessions may hook the ClientHello (TlsSession::ClientHelloHook).
  SSL_CTX_set_select_certificate_cb(ctx, on_client_hello);
}

std::string TlsContext::use_certificate(const CertificateChain& chain) {
  SSL_CTX* ctx = ctx_.get();
  if (SSL_CTX_use_certificate(ctx, chain.leaf()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, chain.private_key()) != 1) {
    return "cannot use certificate: " + last_ssl_error();
  }
  SSL_CTX_clear_chain_certs(ctx);
  for (size_t i = 1; i < chain.chain().size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain.chain()[i].get()) != 1) {
      return "cannot add intermediate certificate: " + last_ssl_error();
    }
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return "private key does not match certificate: " + last_ssl_error();
  }
  return {};
}

bool TlsContext::replace_server_credentials(const CertificateChain& chain,
                                            const std::vector<TicketKey>& ticket_keys) {
  if (role_ != wire::Role::kServer || !ticket_keys_problem(ticket_keys).empty()) return false;
  // Checked on a scratch context first, so a bad chain leaves this one as it
  // was. Its constructor throws only when BoringSSL cannot allocate.
  try {
    TlsContext scratch(wire::Role::kServer, true);
    if (!scratch.use_certificate(chain).empty()) return false;
  } catch (const std::exception&) {
    return false;
  }
  if (!use_certificate(chain).empty()) return false;
  if (!ticket_keys.empty()) ticket_keys_ = ticket_keys;
  return true;
}

std::string TlsContext::ticket_keys_problem(const std::vector<TicketKey>& keys) {
  if (keys.size() > kMaxTicketKeys) {
    return std::to_string(keys.size()) + " session-ticket keys; at most " +
           std::to_string(kMaxTicketKeys);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t hmac = keys[i].hmac_key.size(), aes = keys[i].aes_key.size();
    if ((hmac != 16 && hmac != 32) || (aes != 16 && aes != 32)) {
      return "session-ticket key " + std::to_string(i) +
             ": HMAC and AES keys must be 16 or 32 bytes";
    }
  }
  return {};
}

void TlsContext::configure_ticket_keys(const std::vector<TicketKey>& keys) {
  const std::string problem = ticket_keys_problem(keys);
  if (!problem.empty()) throw_configuration_error("TLS server", problem);
  ticket_keys_ = keys.empty() ? std::vector<TicketKey>{random_ticket_key()} : keys;
  SSL_CTX_set_tlsext_ticket_key_cb(ctx_.get(), on_ticket_key);
}

void TlsContext::configure_client(const TlsClientConfig& config) {
  SSL_CTX* ctx = ctx_.get();
  // Unusual convention: SSL_CTX_set_alpn_protos returns 0 on success.
  if (SSL_CTX_set_alpn_protos(ctx, alpn_wire_.data(), alpn_wire_.size()) != 0) {
    throw_configuration_error("TLS client", "cannot set ALPN: " + last_ssl_error());
  }
  if (config.verification == PeerVerification::kInsecureNoVerify) {
    // The context has no X.509 layer (see create_client): its certificates
    // are accepted unparsed. BoringSSL still checks the CertificateVerify
    // signature with the leaf's key.
    SSL_CTX_set_custom_verify(ctx, SSL_VERIFY_PEER, [](SSL*, uint8_t*) { return ssl_verify_ok; });
    verify_peer_ = false;
  } else {
    std::vector<bssl::UniquePtr<X509>> anchors;
    if (!config.trusted_certificates_file.empty()) {
      anchors = parse_pem_certificates(
          read_file_or_throw(config.trusted_certificates_file, "trusted certificates file"),
          config.trusted_certificates_file);
    }
    if (!config.trusted_certificates_pem.empty()) {
      for (auto& certificate :
           parse_pem_certificates(config.trusted_certificates_pem, "trusted certificates PEM")) {
        anchors.push_back(std::move(certificate));
      }
    }
    if (anchors.empty()) {
      throw_configuration_error(
          "TLS client",
          "no trusted certificate configured: set trusted_certificates_file or "
          "trusted_certificates_pem, or choose PeerVerification::kInsecureNoVerify explicitly");
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const auto& anchor : anchors) {
      if (X509_STORE_add_cert(store, anchor.get()) != 1) {
        throw_configuration_error("TLS client",
                                  "cannot add trusted certificate: " + last_ssl_error());
      }
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    verify_peer_ = true;
  }
  // BoringSSL leaves Ed25519 out of the default verify list; servers here may
  // use Ed25519 certificates.
  static constexpr uint16_t kVerifyAlgorithms[] = {
      SSL_SIGN_ECDSA_SECP256R1_SHA256, SSL_SIGN_RSA_PSS_RSAE_SHA256, SSL_SIGN_RSA_PKCS1_SHA256,
      SSL_SIGN_ECDSA_SECP384R1_SHA384, SSL_SIGN_RSA_PSS_RSAE_SHA384, SSL_SIGN_RSA_PKCS1_SHA384,
      SSL_SIGN_RSA_PSS_RSAE_SHA512,    SSL_SIGN_RSA_PKCS1_SHA512,    SSL_SIGN_ED25519,
  };
  if (SSL_CTX_set_verify_algorithm_prefs(ctx, kVerifyAlgorithms,
                                         sizeof(kVerifyAlgorithms) / sizeof(uint16_t)) != 1) {
    throw_configuration_error("TLS client", "cannot set signature algorithms: " + last_ssl_error());
  }
  session_cache_capacity_ = config.session_cache_capacity;
  if (session_cache_capacity_ > 0) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
}

int TlsContext::select_alpn(SSL*, const uint8_t** out, uint8_t* out_length, const uint8_t* in,
                            unsigned in_length, void* arg) {
  const auto* context = static_cast<const TlsContext*>(arg);
  const std::vector<uint8_t>& ours = context->alpn_wire_;
  // Server preference order: the first of our protocols the client offers.
  for (size_t i = 0; i < ours.size(); i += 1 + ours[i]) {
    std::span<const uint8_t> candidate(&ours[i + 1], ours[i]);
    CBS offered;
    CBS_init(&offered, in, in_length);
    CBS name;
    while (CBS_get_u8_length_prefixed(&offered, &name)) {
      if (CBS_len(&name) == candidate.size() &&
          std::memcmp(CBS_data(&name), candidate.data(), candidate.size()) == 0) {
        *out = CBS_data(&name);
        *out_length = static_cast<uint8_t>(CBS_len(&name));
        return SSL_TLSEXT_ERR_OK;
      }
    }
  }
  // BoringSSL turns this into a fatal no_application_protocol alert (120).
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

enum ssl_select_cert_result_t TlsContext::on_client_hello(const SSL_CLIENT_HELLO* client_hello) {
  if (auto* hook = static_cast<ClientHelloHook*>(
          SSL_get_ex_data(client_hello->ssl, client_hello_hook_index()))) {
    const uint8_t* params = nullptr;
    size_t params_length = 0;
    // RFC 9001 §8.2: quic_transport_parameters is extension 0x39.
    if (SSL_early_callback_ctx_extension_get(client_hello, TLSEXT_TYPE_quic_transport_parameters,
                                             &params, &params_length) != 1) {
      params = nullptr;
      params_length = 0;
    }
    if (!hook->on_client_transport_parameters({params, params_length})) {
      return ssl_select_cert_error;
    }
  }
  TlsContext* context = from_ssl_ctx(SSL_get_SSL_CTX(client_hello->ssl));
  if (context == nullptr || !context->replay_filter_.has_value()) return ssl_select_cert_success;
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (SSL_early_callback_ctx_extension_get(client_hello, TLSEXT_TYPE_early_data, &data, &length) !=
      1) {
    return ssl_select_cert_success;  // no 0-RTT offered: nothing to replay
  }
  CBS identity;
  CBS_init(&identity, nullptr, 0);
  const bool offered = SSL_early_callback_ctx_extension_get(
                           client_hello, TLSEXT_TYPE_pre_shared_key, &data, &length) == 1 &&
                       first_psk_identity(data, length, &identity);
  const std::span<const uint8_t> ticket(CBS_data(&identity), offered ? CBS_len(&identity) : 0);
  // Only a ticket we issued is recorded: a made-up one cannot resume anyway
  // and must not take a slot.
  const bool admitted = offered && ticket_authentic(ticket, context->ticket_keys_) &&
                        context->replay_filter_->admit(ticket, steady_seconds());
  // A replayed, forged or unrecordable offer gets no 0-RTT (a genuine one
  // still resumes).
  if (!admitted) SSL_set_early_data_enabled(client_hello->ssl, 0);
  return ssl_select_cert_success;
}

size_t TlsContext::replay_records() const {
  return replay_filter_ ? replay_filter_->recorded(steady_seconds()) : 0;
}

int TlsContext::on_new_session(SSL* ssl, SSL_SESSION* session) {
  TlsContext* context = from_ssl_ctx(SSL_get_SSL_CTX(ssl));
  const auto* key =
      static_cast<const std::string*>(SSL_get_ex_data(ssl, session_cache_key_index()));
  if (context == nullptr || key == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  const uint8_t* params = nullptr;
  size_t params_length = 0;
  SSL_get_peer_quic_transport_params(ssl, &params, &params_length);
  CachedSession cached;
  cached.session.reset(session);  // returning 1 below hands us the reference
  cached.peer_transport_parameters.assign(params, params + params_length);
  context->store_session(*key, std::move(cached));
  return 1;
}

// BoringSSL's ticket-key callback: `encrypt` 1 picks the first key and a
// fresh IV; 0 looks the key up by name. Returns 1 (or 2: renew under the
// first key) with both contexts initialised, 0 for an unknown name (a full
// handshake), -1 on error.
int TlsContext::on_ticket_key(SSL* ssl, uint8_t* key_name, uint8_t* iv, EVP_CIPHER_CTX* cipher_ctx,
                              HMAC_CTX* hmac_ctx, int encrypt) {
  const TlsContext* context = from_ssl_ctx(SSL_get_SSL_CTX(ssl));
  if (context == nullptr || context->ticket_keys_.empty()) return -1;
  const std::vector<TicketKey>& keys = context->ticket_keys_;
  size_t index = 0;
  if (encrypt != 1) {
    while (index < keys.size() &&
           CRYPTO_memcmp(key_name, keys[index].name.data(), SSL_TICKET_KEY_NAME_LEN) != 0) {
      ++index;
    }
    if (index == keys.size()) return 0;
  }
  const TicketKey& key = keys[index];
  const EVP_CIPHER* cipher = key.aes_key.size() == 32 ? EVP_aes_256_cbc() : EVP_aes_128_cbc();
  if (encrypt == 1) {
    std::memcpy(key_name, key.name.data(), SSL_TICKET_KEY_NAME_LEN);
    if (RAND_bytes(iv, EVP_CIPHER_iv_length(cipher)) != 1) return -1;
  }
  const bool ready =
      EVP_CipherInit_ex(cipher_ctx, cipher, nullptr, key.aes_key.data(), iv, encrypt == 1) == 1 &&
      HMAC_Init_ex(hmac_ctx, key.hmac_key.data(), key.hmac_key.size(), EVP_sha256(), nullptr) == 1;
  if (!ready) return -1;
  return encrypt == 1 || index == 0 ? 1 : 2;
}

void TlsContext::on_keylog_line(const SSL* ssl, const char* line) {
  TlsContext* context = from_ssl_ctx(SSL_get_SSL_CTX(ssl));
  if (context == nullptr || context->keylog_ == nullptr) return;
  std::fputs(line, context->keylog_);
  std::fputc('\n', context->keylog_);
  std::fflush(context->keylog_);
}

std::optional<CachedSession> TlsContext::take_session(const std::string& server_name) {
  auto it = sessions_.find(server_name);
  if (it == sessions_.end()) return std::nullopt;
  CachedSession cached = std::move(it->second.cached);
  sessions_.erase(it);
  return cached;
}

void TlsContext::store_session(const std::string& server_name, CachedSession session) {
  if (session_cache_capacity_ == 0) return;
  auto it = sessions_.find(server_name);
  if (it == sessions_.end() && sessions_.size() >= session_cache_capacity_) {
    auto oldest = sessions_.begin();
    for (auto candidate = sessions_.begin(); candidate != sessions_.end(); ++candidate) {
      if (candidate->second.stored_sequence < oldest->second.stored_sequence) oldest = candidate;
    }
    sessions_.erase(oldest);
  }
  CacheEntry& entry = sessions_[server_name];
  entry.cached = std::move(session);
  entry.stored_sequence = ++store_sequence_;
}

}  // namespace dpquic::crypto
