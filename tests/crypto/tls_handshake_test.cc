// Our TLS client against our TLS server over in-memory CRYPTO streams at all
// three levels, with the secrets each side hands to its SecretSink recorded.
#include <gtest/gtest.h>
#include <openssl/crypto.h>
#include <openssl/mem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "crypto/tls_context.h"
#include "crypto/tls_session.h"
#include "tests/util/hex.h"
#include "tools/testbed/test_keys.h"

namespace dpquic::crypto {
namespace {

using ::dpquic::testing::to_hex;

using Bytes = std::vector<uint8_t>;

struct InstalledSecret {
  CipherSuite suite;
  Bytes secret;
};

class RecordingSink : public SecretSink {
 public:
  bool install_secret(EncryptionLevel level, Direction direction, CipherSuite suite,
                      std::span<const uint8_t> secret) override {
    order.emplace_back(level, direction);
    secrets[{level, direction}] = {suite, Bytes(secret.begin(), secret.end())};
    return !refuse;
  }
  bool has(EncryptionLevel level, Direction direction) const {
    return secrets.count({level, direction}) != 0;
  }
  const InstalledSecret& get(EncryptionLevel level, Direction direction) const {
    return secrets.at({level, direction});
  }

  std::map<std::pair<EncryptionLevel, Direction>, InstalledSecret> secrets;
  std::vector<std::pair<EncryptionLevel, Direction>> order;
  bool refuse = false;
};

constexpr EncryptionLevel kCryptoLevels[] = {EncryptionLevel::kInitial, EncryptionLevel::kHandshake,
                                             EncryptionLevel::kApplication};

// Moves everything `from` wrote to `to`, level by level, advancing `to`
// after each level (its next read keys appear only then). Returns the number
// of bytes moved.
size_t shuttle(TlsSession& from, TlsSession& to) {
  size_t moved = 0;
  for (EncryptionLevel level : kCryptoLevels) {
    std::span<const uint8_t> data = from.pending_handshake_data(level);
    if (data.empty() || to.failed()) continue;
    EXPECT_EQ(from.pending_offset(level) + data.size(), from.end_offset(level));
    Bytes copy(data.begin(), data.end());
    from.consume(level, copy.size());
    moved += copy.size();
    if (to.provide_handshake_data(level, copy)) to.advance();
  }
  return moved;
}

void run_handshake(TlsSession& client, TlsSession& server) {
  client.advance();
  for (int round = 0; round < 8; ++round) {
    size_t moved = shuttle(client, server);
    moved += shuttle(server, client);
    if (moved == 0) break;
  }
}

const Bytes kClientParams = {0x01, 0x04, 0x80, 0x00, 0x75, 0x30,
                             0x04, 0x04, 0x81, 0x00, 0x00, 0x00};
const Bytes kServerParams = {0x00, 0x08, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                             0x77, 0x88, 0x03, 0x02, 0x45, 0xc0, 0x0f, 0x00};
const Bytes kEarlyDataContext = {'t', 'p', '+', 'h', '3', ' ', 's',
                                 'e', 't', 't', 'i', 'n', 'g', 's'};

struct Connection {
  RecordingSink client_sink;
  RecordingSink server_sink;
  std::unique_ptr<TlsSession> client;
  std::unique_ptr<TlsSession> server;
};

class TlsHandshakeTest : public ::testing::Test {
 protected:
  TlsHandshakeTest() : certificate_(CertificateChain::generate_self_signed()) {
    server_config_.certificate = &certificate_;
    client_config_.trusted_certificates_pem = certificate_.leaf_pem();
  }

  void make_contexts() {
    server_context_ = TlsContext::create_server(server_config_);
    client_context_ = TlsContext::create_client(client_config_);
  }

  std::unique_ptr<Connection> connect(const std::string& server_name = "localhost",
                                      const Bytes& early_data_context = kEarlyDataContext) {
    if (server_context_ == nullptr) make_contexts();
    auto connection = std::make_unique<Connection>();
    connection->client =
        TlsSession::create_client(*client_context_, connection->client_sink, server_name);
    connection->server = TlsSession::create_server(*server_context_, connection->server_sink);
    EXPECT_TRUE(connection->client->set_local_transport_parameters(kClientParams));
    EXPECT_TRUE(connection->server->set_local_transport_parameters(kServerParams));
    EXPECT_TRUE(connection->server->set_early_data_context(early_data_context));
    run_handshake(*connection->client, *connection->server);
    return connection;
  }

  CertificateChain certificate_;
  TlsServerConfig server_config_;
  TlsClientConfig client_config_;
  std::unique_ptr<TlsContext> server_context_;
  std::unique_ptr<TlsContext> client_context_;
};

void expect_secrets_match(const Connection& c, EncryptionLevel level) {
  ASSERT_TRUE(c.client_sink.has(level, Direction::kWrite));
  ASSERT_TRUE(c.server_sink.has(level, Direction::kRead));
  ASSERT_TRUE(c.client_sink.has(level, Direction::kRead));
  ASSERT_TRUE(c.server_sink.has(level, Direction::kWrite));
  const auto& client_write = c.client_sink.get(level, Direction::kWrite);
  const auto& server_read = c.server_sink.get(level, Direction::kRead);
  const auto& client_read = c.client_sink.get(level, Direction::kRead);
  const auto& server_write = c.server_sink.get(level, Direction::kWrite);
  EXPECT_EQ(client_write.secret, server_read.secret);
  EXPECT_EQ(client_read.secret, server_write.secret);
  EXPECT_NE(client_write.secret, client_read.secret);
  EXPECT_EQ(client_write.suite, server_read.suite);
  EXPECT_EQ(client_write.secret.size(), secret_length(client_write.suite));
}

TEST_F(TlsHandshakeTest, FullHandshakeReachesOneRttWithMatchingSecrets) {
  auto c = connect();
  TlsSession& client = *c->client;
  TlsSession& server = *c->server;
  ASSERT_FALSE(client.failed()) << client.error_reason();
  ASSERT_FALSE(server.failed()) << server.error_reason();
  EXPECT_TRUE(client.handshake_complete());
  EXPECT_TRUE(server.handshake_complete());

  expect_secrets_match(*c, EncryptionLevel::kHandshake);
  expect_secrets_match(*c, EncryptionLevel::kApplication);
  EXPECT_NE(c->client_sink.get(EncryptionLevel::kHandshake, Direction::kWrite).secret,
            c->client_sink.get(EncryptionLevel::kApplication, Direction::kWrite).secret);
  // QUIC derives Initial keys itself; no 0-RTT without a ticket.
  for (const RecordingSink* sink : {&c->client_sink, &c->server_sink}) {
    EXPECT_FALSE(sink->has(EncryptionLevel::kInitial, Direction::kRead));
    EXPECT_FALSE(sink->has(EncryptionLevel::kInitial, Direction::kWrite));
    EXPECT_FALSE(sink->has(EncryptionLevel::kEarlyData, Direction::kRead));
    EXPECT_FALSE(sink->has(EncryptionLevel::kEarlyData, Direction::kWrite));
    EXPECT_EQ(sink->order.size(), 4u);
    // Per direction, handshake keys come before 1-RTT keys. (The server
    // installs 1-RTT write keys before handshake read keys: half-RTT.)
    for (Direction direction : {Direction::kRead, Direction::kWrite}) {
      std::vector<EncryptionLevel> levels;
      for (const auto& [level, dir] : sink->order) {
        if (dir == direction) levels.push_back(level);
      }
      EXPECT_EQ(levels, (std::vector<EncryptionLevel>{EncryptionLevel::kHandshake,
                                                      EncryptionLevel::kApplication}));
    }
  }

  EXPECT_EQ(client.alpn(), "h3");
  EXPECT_EQ(server.alpn(), "h3");
  EXPECT_EQ(
      Bytes(server.peer_transport_parameters().begin(), server.peer_transport_parameters().end()),
      kClientParams);
  EXPECT_EQ(
      Bytes(client.peer_transport_parameters().begin(), client.peer_transport_parameters().end()),
      kServerParams);
  EXPECT_EQ(server.server_name(), "localhost");
  EXPECT_EQ(client.server_name(), "localhost");
  EXPECT_FALSE(client.session_resumed());
  EXPECT_FALSE(server.session_resumed());
  EXPECT_FALSE(client.early_data_offered());
  EXPECT_FALSE(client.early_data_accepted());
  EXPECT_TRUE(client.remembered_transport_parameters().empty());
  EXPECT_EQ(client.cipher_suite(), server.cipher_suite());
  EXPECT_EQ(client.cipher_suite(),
            c->client_sink.get(EncryptionLevel::kApplication, Direction::kWrite).suite);

  // Every byte written was consumed; the CRYPTO streams carried data at the
  // Initial and Handshake levels (and the tickets at the application level).
  for (EncryptionLevel level : kCryptoLevels) {
    EXPECT_TRUE(client.pending_handshake_data(level).empty());
    EXPECT_TRUE(server.pending_handshake_data(level).empty());
  }
  EXPECT_GT(client.end_offset(EncryptionLevel::kInitial), 0u);
  EXPECT_GT(client.end_offset(EncryptionLevel::kHandshake), 0u);  // client Finished
  EXPECT_GT(server.end_offset(EncryptionLevel::kInitial), 0u);    // ServerHello
  EXPECT_GT(server.end_offset(EncryptionLevel::kHandshake), 0u);
  EXPECT_GT(server.end_offset(EncryptionLevel::kApplication), 0u);  // NewSessionTicket
  EXPECT_EQ(client.end_offset(EncryptionLevel::kApplication), 0u);
  EXPECT_EQ(client_context_->cached_session_count(), 1u);
}

TEST_F(TlsHandshakeTest, ServerPrefersItsOwnAlpnOrder) {
  client_config_.alpn_protocols = {"perf", "h3"};
  auto c = connect();
  ASSERT_TRUE(c->server->handshake_complete()) << c->server->error_reason();
  EXPECT_EQ(c->server->alpn(), "h3");
  client_config_.alpn_protocols = {"perf"};
  make_contexts();
  auto d = connect();
  ASSERT_TRUE(d->client->handshake_complete()) << d->client->error_reason();
  EXPECT_EQ(d->client->alpn(), "perf");
}

TEST_F(TlsHandshakeTest, UnknownAlpnFailsWithNoApplicationProtocol) {
  client_config_.alpn_protocols = {"unknown-proto"};
  auto c = connect();
  EXPECT_FALSE(c->server->handshake_complete());
  EXPECT_FALSE(c->client->handshake_complete());
  EXPECT_TRUE(c->server->failed());
  EXPECT_EQ(c->server->error_code(), 0x178u);  // CRYPTO_ERROR 0x100 + 120
  EXPECT_EQ(c->server->error_reason().rfind("TLS alert ", 0), 0u) << c->server->error_reason();
  EXPECT_FALSE(c->server->advance());  // sticky
  EXPECT_TRUE(c->server_sink.secrets.empty());
}

TEST_F(TlsHandshakeTest, ResumesWithTicketAndAcceptsZeroRtt) {
  auto first = connect();
  ASSERT_TRUE(first->client->handshake_complete());
  ASSERT_EQ(client_context_->cached_session_count(), 1u);

  RecordingSink client_sink, server_sink;
  auto client = TlsSession::create_client(*client_context_, client_sink, "localhost");
  auto server = TlsSession::create_server(*server_context_, server_sink);
  EXPECT_EQ(client_context_->cached_session_count(), 0u);  // the ticket is used once
  ASSERT_TRUE(client->set_local_transport_parameters(kClientParams));
  ASSERT_TRUE(server->set_local_transport_parameters(kServerParams));
  ASSERT_TRUE(server->set_early_data_context(kEarlyDataContext));
  EXPECT_EQ(Bytes(client->remembered_transport_parameters().begin(),
                  client->remembered_transport_parameters().end()),
            kServerParams);

  // The ClientHello flight: the client may send 0-RTT before any reply.
  ASSERT_TRUE(client->advance());
  EXPECT_FALSE(client->handshake_complete());
  EXPECT_TRUE(client->early_data_offered());
  ASSERT_TRUE(client_sink.has(EncryptionLevel::kEarlyData, Direction::kWrite));
  EXPECT_FALSE(client_sink.has(EncryptionLevel::kHandshake, Direction::kWrite));
  EXPECT_EQ(client->alpn(), "h3");  // predicted from the ticket

  run_handshake(*client, *server);
  ASSERT_TRUE(client->handshake_complete()) << client->error_reason();
  ASSERT_TRUE(server->handshake_complete()) << server->error_reason();
  EXPECT_TRUE(client->session_resumed());
  EXPECT_TRUE(server->session_resumed());
  EXPECT_TRUE(server->early_data_accepted());
  EXPECT_TRUE(client->early_data_accepted());
  EXPECT_FALSE(client->early_data_rejected());
  EXPECT_STREQ(server->early_data_reason(), "accepted");
  ASSERT_TRUE(server_sink.has(EncryptionLevel::kEarlyData, Direction::kRead));
  EXPECT_EQ(client_sink.get(EncryptionLevel::kEarlyData, Direction::kWrite).secret,
            server_sink.get(EncryptionLevel::kEarlyData, Direction::kRead).secret);
  EXPECT_FALSE(server_sink.has(EncryptionLevel::kEarlyData, Direction::kWrite));
  EXPECT_EQ(
      Bytes(server->peer_transport_parameters().begin(), server->peer_transport_parameters().end()),
      kClientParams);
  EXPECT_EQ(client_context_->cached_session_count(), 1u);  // a fresh ticket
}

TEST_F(TlsHandshakeTest, ReplayedTicketResumesWithoutZeroRtt) {
  auto first = connect();
  ASSERT_TRUE(first->client->handshake_complete());
  std::optional<CachedSession> ticket = client_context_->take_session("localhost");
  ASSERT_TRUE(ticket.has_value());
  auto reuse = [&] {
    SSL_SESSION_up_ref(ticket->session.get());
    client_context_->store_session(
        "localhost", CachedSession{bssl::UniquePtr<SSL_SESSION>(ticket->session.get()),
                                   ticket->peer_transport_parameters});
    return connect();
  };
  auto second = reuse();
  ASSERT_TRUE(second->server->handshake_complete());
  EXPECT_TRUE(second->server->early_data_accepted());

  auto replay = reuse();
  ASSERT_TRUE(replay->client->handshake_complete()) << replay->client->error_reason();
  ASSERT_TRUE(replay->server->handshake_complete()) << replay->server->error_reason();
  EXPECT_TRUE(replay->server->session_resumed());
  EXPECT_TRUE(replay->client->early_data_offered());
  EXPECT_TRUE(replay->client->early_data_rejected());
  EXPECT_FALSE(replay->server->early_data_accepted());
  EXPECT_STREQ(replay->server->early_data_reason(), "disabled");
  EXPECT_FALSE(replay->server_sink.has(EncryptionLevel::kEarlyData, Direction::kRead));
  expect_secrets_match(*replay, EncryptionLevel::kApplication);
}

// Offers 0-RTT with `session`'s ticket replaced by `ticket` (the client
// still believes the session allows early data).
std::unique_ptr<Connection> offer_with_ticket(
    TlsContext& client_context, const CachedSession& session, const Bytes& ticket,
    const std::function<std::unique_ptr<Connection>()>& connect) {
  uint8_t* der = nullptr;
  size_t der_length = 0;
  EXPECT_EQ(SSL_SESSION_to_bytes(session.session.get(), &der, &der_length), 1);
  bssl::UniquePtr<uint8_t> der_owner(der);
  bssl::UniquePtr<SSL_SESSION> copy(
      SSL_SESSION_from_bytes(der, der_length, client_context.ssl_ctx()));
  EXPECT_NE(copy, nullptr);
  EXPECT_EQ(SSL_SESSION_set_ticket(copy.get(), ticket.data(), ticket.size()), 1);
  client_context.store_session("localhost",
                               CachedSession{std::move(copy), session.peer_transport_parameters});
  return connect();
}

// Made-up tickets (the right length, random bytes) offered with 0-RTT are
// not recorded as used: they cannot fill the single-use record, and a
// genuine ticket offered afterwards still gets 0-RTT.
TEST_F(TlsHandshakeTest, ForgedTicketsDoNotFillTheReplayRecord) {
  server_config_.replay_filter_capacity = 8;  // 8 slots, all probed
  server_config_.ticket_keys = {random_ticket_key()};
  auto first = connect();
  ASSERT_TRUE(first->client->handshake_complete());
  std::optional<CachedSession> genuine = client_context_->take_session("localhost");
  ASSERT_TRUE(genuine.has_value());
  const uint8_t* ticket_data = nullptr;
  size_t ticket_length = 0;
  SSL_SESSION_get0_ticket(genuine->session.get(), &ticket_data, &ticket_length);
  const Bytes ticket(ticket_data, ticket_data + ticket_length);
  EXPECT_TRUE(ticket_authentic(ticket, server_config_.ticket_keys));

  for (int i = 0; i < 20; ++i) {
    Bytes forged(ticket.size());
    RAND_bytes(forged.data(), forged.size());
    if (i % 2 == 1) {  // our key name, a bad HMAC
      forged = ticket;
      forged[20 + static_cast<size_t>(i)] ^= 0x01;
    }
    EXPECT_FALSE(ticket_authentic(forged, server_config_.ticket_keys));
    auto connection =
        offer_with_ticket(*client_context_, *genuine, forged, [&] { return connect(); });
    ASSERT_TRUE(connection->server->handshake_complete()) << connection->server->error_reason();
    EXPECT_TRUE(connection->client->early_data_offered());
    EXPECT_FALSE(connection->server->early_data_accepted());
    EXPECT_FALSE(connection->server->session_resumed());
  }
  EXPECT_EQ(server_context_->replay_records(), 0u);

  auto honest = offer_with_ticket(*client_context_, *genuine, ticket, [&] { return connect(); });
  ASSERT_TRUE(honest->server->handshake_complete());
  EXPECT_TRUE(honest->server->session_resumed());
  EXPECT_TRUE(honest->server->early_data_accepted());
  EXPECT_EQ(server_context_->replay_records(), 1u);
}

TEST_F(TlsHandshakeTest, ChangedEarlyDataContextRejectsZeroRttButResumes) {
  auto first = connect();
  ASSERT_TRUE(first->client->handshake_complete());
  auto second = connect("localhost", Bytes{'o', 't', 'h', 'e', 'r'});
  ASSERT_TRUE(second->client->handshake_complete()) << second->client->error_reason();
  EXPECT_TRUE(second->server->session_resumed());
  EXPECT_TRUE(second->client->early_data_rejected());
  EXPECT_STREQ(second->server->early_data_reason(), "quic_parameter_mismatch");
  expect_secrets_match(*second, EncryptionLevel::kApplication);
}

TEST_F(TlsHandshakeTest, ServerWithEarlyDataDisabledIssuesTicketsWithoutZeroRtt) {
  server_config_.early_data_enabled = false;
  auto first = connect();
  ASSERT_TRUE(first->client->handshake_complete());
  auto second = connect();
  ASSERT_TRUE(second->client->handshake_complete());
  EXPECT_TRUE(second->client->session_resumed());
  EXPECT_FALSE(second->client->early_data_offered());
  EXPECT_FALSE(second->client_sink.has(EncryptionLevel::kEarlyData, Direction::kWrite));
}

TEST_F(TlsHandshakeTest, KeylogFileGetsNssKeyLogLines) {
  const char* directory = std::getenv("TEST_TMPDIR");
  std::string path = std::string(directory != nullptr ? directory : "/tmp") + "/sslkeylog.txt";
  std::remove(path.c_str());
  client_config_.keylog_file = path;
  auto c = connect();
  ASSERT_TRUE(c->client->handshake_complete());

  std::ifstream file(path);
  std::map<std::string, std::string> secret_by_label;
  std::string label, client_random, secret;
  while (file >> label >> client_random >> secret) {
    EXPECT_EQ(client_random.size(), 64u);
    secret_by_label[label] = secret;
  }

  const RecordingSink& sink = c->client_sink;
  EXPECT_EQ(secret_by_label["CLIENT_HANDSHAKE_TRAFFIC_SECRET"],
            to_hex(sink.get(EncryptionLevel::kHandshake, Direction::kWrite).secret));
  EXPECT_EQ(secret_by_label["SERVER_HANDSHAKE_TRAFFIC_SECRET"],
            to_hex(sink.get(EncryptionLevel::kHandshake, Direction::kRead).secret));
  EXPECT_EQ(secret_by_label["CLIENT_TRAFFIC_SECRET_0"],
            to_hex(sink.get(EncryptionLevel::kApplication, Direction::kWrite).secret));
  EXPECT_EQ(secret_by_label["SERVER_TRAFFIC_SECRET_0"],
            to_hex(sink.get(EncryptionLevel::kApplication, Direction::kRead).secret));
  EXPECT_EQ(secret_by_label.count("EXPORTER_SECRET"), 1u);
}

// BoringSSL has no API to restrict TLS 1.3 suites. Its server picks by its
// built-in preference: AES-128-GCM with AES hardware, ChaCha20-Poly1305
// without it (see tls_handshake_no_aes_test), AES-256-GCM when the key
// exchange is the post-quantum CECPQ2.
TEST_F(TlsHandshakeTest, DefaultSuiteFollowsAesHardware) {
  auto c = connect();
  ASSERT_TRUE(c->client->handshake_complete());
  CipherSuite expected =
      EVP_has_aes_hardware() ? CipherSuite::kAes128Gcm : CipherSuite::kChaCha20Poly1305;
  EXPECT_EQ(c->server->cipher_suite(), expected);
  expect_secrets_match(*c, EncryptionLevel::kApplication);
  EXPECT_EQ(c->server_sink.get(EncryptionLevel::kApplication, Direction::kWrite).secret.size(),
            32u);
}

TEST_F(TlsHandshakeTest, Aes256GcmWithCecpq2) {
  if (!EVP_has_aes_hardware()) GTEST_SKIP() << "BoringSSL prefers ChaCha20 without AES hardware";
  server_config_.groups = "CECPQ2:X25519";
  client_config_.groups = "CECPQ2:X25519";
  auto c = connect();
  ASSERT_TRUE(c->client->handshake_complete()) << c->client->error_reason();
  EXPECT_EQ(c->server->cipher_suite(), CipherSuite::kAes256Gcm);
  expect_secrets_match(*c, EncryptionLevel::kHandshake);
  expect_secrets_match(*c, EncryptionLevel::kApplication);
  EXPECT_EQ(c->client_sink.get(EncryptionLevel::kApplication, Direction::kWrite).secret.size(),
            48u);  // SHA-384
}

TEST_F(TlsHandshakeTest, ChaCha20WithoutAesHardware) {
  if (EVP_has_aes_hardware()) GTEST_SKIP() << "runs in tls_handshake_no_aes_test";
  auto c = connect();
  ASSERT_TRUE(c->client->handshake_complete()) << c->client->error_reason();
  EXPECT_EQ(c->server->cipher_suite(), CipherSuite::kChaCha20Poly1305);
  expect_secrets_match(*c, EncryptionLevel::kHandshake);
  expect_secrets_match(*c, EncryptionLevel::kApplication);
}

class ServerKeyTypeTest : public TlsHandshakeTest, public ::testing::WithParamInterface<KeyType> {};

TEST_P(ServerKeyTypeTest, HandshakeSucceedsWithEachKeyType) {
  bssl::UniquePtr<EVP_PKEY> key = testing::generate_key(GetParam());
  bssl::UniquePtr<X509> leaf = testing::make_certificate(key.get(), "localhost", key.get());
  CertificateChain chain = CertificateChain::from_pem(testing::certificate_pem(leaf.get()), "cert",
                                                      testing::private_key_pem(key.get()), "key");
  server_config_.certificate = &chain;
  client_config_.trusted_certificates_pem = testing::certificate_pem(leaf.get());
  auto c = connect();
  ASSERT_TRUE(c->client->handshake_complete()) << c->client->error_reason();
  ASSERT_TRUE(c->server->handshake_complete()) << c->server->error_reason();
  expect_secrets_match(*c, EncryptionLevel::kApplication);
}

INSTANTIATE_TEST_SUITE_P(AllKeyTypes, ServerKeyTypeTest,
                         ::testing::Values(KeyType::kEcdsaP256, KeyType::kEd25519, KeyType::kRsa));

TEST_F(TlsHandshakeTest, UntrustedCertificateFailsWithUnknownCa) {
  client_config_.trusted_certificates_pem = CertificateChain::generate_self_signed().leaf_pem();
  auto c = connect();
  EXPECT_FALSE(c->client->handshake_complete());
  EXPECT_EQ(c->client->error_code(), 0x100u + SSL_AD_UNKNOWN_CA);
  EXPECT_NE(c->client->error_reason().find("CERTIFICATE_VERIFY_FAILED"), std::string::npos)
      << c->client->error_reason();
  // No 1-RTT keys for an unauthenticated server.
  EXPECT_FALSE(c->client_sink.has(EncryptionLevel::kApplication, Direction::kWrite));
}

TEST_F(TlsHandshakeTest, ServerNameMustMatchCertificate) {
  auto wrong_name = connect("example.com");
  EXPECT_FALSE(wrong_name->client->handshake_complete());
  EXPECT_TRUE(wrong_name->client->failed());
  EXPECT_EQ(wrong_name->client->error_code(), 0x100u + SSL_AD_BAD_CERTIFICATE);
  auto ip = connect("127.0.0.1");  // IP SAN; no SNI for IP literals
  ASSERT_TRUE(ip->client->handshake_complete()) << ip->client->error_reason();
  EXPECT_EQ(ip->server->server_name(), "");
}

TEST_F(TlsHandshakeTest, InsecureNoVerifyAcceptsAnyCertificate) {
  client_config_.trusted_certificates_pem.clear();
  client_config_.verification = PeerVerification::kInsecureNoVerify;
  auto c = connect("example.com");
  ASSERT_TRUE(c->client->handshake_complete()) << c->client->error_reason();
}

TEST_F(TlsHandshakeTest, ConfigurationErrorsThrowAtStartUp) {
  client_config_.trusted_certificates_pem.clear();
  try {
    TlsContext::create_client(client_config_);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "TLS client: no trusted certificate configured: set trusted_certificates_file "
                 "or trusted_certificates_pem, or choose PeerVerification::kInsecureNoVerify "
                 "explicitly");
  }
  server_config_.alpn_protocols = {};
  EXPECT_THROW(TlsContext::create_server(server_config_), std::runtime_error);
  server_config_.alpn_protocols = {"h3"};
  server_config_.certificate = nullptr;
  EXPECT_THROW(TlsContext::create_server(server_config_), std::runtime_error);
}

// The ClientHello as QUIC needs it: no middlebox compatibility mode (RFC 9001
// §8.4: legacy_session_id empty), TLS 1.3 only, and the transport parameters
// under code point 0x39 byte for byte (not the draft code point 0xffa5).
TEST_F(TlsHandshakeTest, ClientHelloHasNoCompatModeAndTransportParametersAt0x39) {
  make_contexts();
  RecordingSink sink;
  auto client = TlsSession::create_client(*client_context_, sink, "localhost");
  ASSERT_TRUE(client->set_local_transport_parameters(kClientParams));
  ASSERT_TRUE(client->advance());
  const std::span<const uint8_t> hello = client->pending_handshake_data(EncryptionLevel::kInitial);
  ASSERT_GT(hello.size(), 4u + 2 + 32 + 1);
  ASSERT_EQ(hello[0], 1);  // client_hello
  size_t at = 4 + 2 + 32;
  EXPECT_EQ(hello[at], 0) << "legacy_session_id must be empty in QUIC";
  at += 1 + hello[at];
  auto u16 = [&](size_t i) { return static_cast<size_t>(hello[i] << 8 | hello[i + 1]); };
  at += 2 + u16(at);    // cipher_suites
  at += 1 + hello[at];  // legacy_compression_methods
  const size_t end = at + 2 + u16(at);
  ASSERT_EQ(end, hello.size());
  std::map<size_t, Bytes> extensions;
  for (at += 2; at + 4 <= end;) {
    const size_t type = u16(at), length = u16(at + 2);
    ASSERT_LE(at + 4 + length, end);
    extensions[type] = Bytes(hello.begin() + at + 4, hello.begin() + at + 4 + length);
    at += 4 + length;
  }
  EXPECT_EQ(at, end);
  ASSERT_EQ(extensions.count(0x39), 1u);
  EXPECT_EQ(extensions[0x39], kClientParams);
  EXPECT_EQ(extensions.count(0xffa5), 0u);
  // supported_versions: TLS 1.3 only (BoringSSL may add a GREASE value,
  // which it does not by default).
  EXPECT_EQ(extensions[0x2b], (Bytes{0x02, 0x03, 0x04}));
}

// RFC 9001 §6: a TLS KeyUpdate message is a connection error 0x010a
// (unexpected_message).
TEST_F(TlsHandshakeTest, TlsKeyUpdateMessageIsCryptoError0x10a) {
  auto c = connect();
  ASSERT_TRUE(c->server->handshake_complete());
  const Bytes key_update = {24, 0, 0, 1, 0};
  c->server->provide_handshake_data(EncryptionLevel::kApplication, key_update);
  EXPECT_FALSE(c->server->advance());
  EXPECT_EQ(c->server->error_code(), 0x10au);
}

TEST_F(TlsHandshakeTest, ConfigurationErrorsNameTheProblem) {
  auto message_of = [](auto&& create) -> std::string {
    try {
      create();
    } catch (const std::runtime_error& error) {
      return error.what();
    }
    return "no exception";
  };
  server_config_.alpn_protocols = {};
  EXPECT_EQ(message_of([&] { TlsContext::create_server(server_config_); }),
            "TLS server: ALPN list is empty (QUIC requires ALPN)");
  server_config_.alpn_protocols = {"h3"};
  server_config_.keylog_file = "/nonexistent-directory/keys.log";
  EXPECT_EQ(message_of([&] { TlsContext::create_server(server_config_); }),
            "/nonexistent-directory/keys.log: cannot open SSLKEYLOGFILE: No such file or "
            "directory");
  server_config_.keylog_file.clear();
  server_config_.certificate = nullptr;
  EXPECT_EQ(message_of([&] { TlsContext::create_server(server_config_); }),
            "TLS server: no certificate configured");
}

TEST_F(TlsHandshakeTest, ExcessIncomingDataIsCryptoBufferExceeded) {
  make_contexts();
  RecordingSink sink;
  auto server = TlsSession::create_server(*server_context_, sink);
  size_t limit = server->max_incoming_bytes(EncryptionLevel::kInitial);
  ASSERT_GT(limit, 0u);
  // A partial handshake message header announcing a huge ClientHello.
  Bytes data(limit + 1, 0);
  data[0] = 1;
  EXPECT_FALSE(server->provide_handshake_data(EncryptionLevel::kInitial, data));
  EXPECT_EQ(server->error_code(), 0x0du);
}

TEST_F(TlsHandshakeTest, DataAtUnexpectedLevelIsProtocolViolation) {
  make_contexts();
  RecordingSink sink;
  auto server = TlsSession::create_server(*server_context_, sink);
  Bytes data = {1, 0, 0, 0};
  EXPECT_FALSE(server->provide_handshake_data(EncryptionLevel::kHandshake, data));
  EXPECT_EQ(server->error_code(), 0x0au);
}

TEST_F(TlsHandshakeTest, RefusedKeysFailWithInternalError) {
  make_contexts();
  RecordingSink client_sink, server_sink;
  server_sink.refuse = true;
  auto client = TlsSession::create_client(*client_context_, client_sink, "localhost");
  auto server = TlsSession::create_server(*server_context_, server_sink);
  client->set_local_transport_parameters(kClientParams);
  server->set_local_transport_parameters(kServerParams);
  run_handshake(*client, *server);
  EXPECT_EQ(server->error_code(), 0x01u);
  EXPECT_EQ(server->error_reason().rfind("packet protection refused the keys", 0), 0u);
}

TEST_F(TlsHandshakeTest, OutgoingCryptoStreamTracksOffsets) {
  make_contexts();
  RecordingSink sink;
  auto client = TlsSession::create_client(*client_context_, sink, "localhost");
  client->set_local_transport_parameters(kClientParams);
  ASSERT_TRUE(client->advance());
  const EncryptionLevel initial = EncryptionLevel::kInitial;
  Bytes hello(client->pending_handshake_data(initial).begin(),
              client->pending_handshake_data(initial).end());
  ASSERT_GT(hello.size(), 100u);
  EXPECT_EQ(hello[0], 1);  // ClientHello
  EXPECT_EQ(client->pending_offset(initial), 0u);
  client->consume(initial, 40);
  EXPECT_EQ(client->pending_offset(initial), 40u);
  EXPECT_EQ(client->pending_handshake_data(initial).size(), hello.size() - 40);
  // Retransmission reads back sent bytes only.
  std::span<const uint8_t> resend = client->sent_handshake_data(initial, 10, 30);
  EXPECT_EQ(Bytes(resend.begin(), resend.end()), Bytes(hello.begin() + 10, hello.begin() + 40));
  EXPECT_TRUE(client->sent_handshake_data(initial, 10, 31).empty());
  client->release_acknowledged(initial, 20);
  EXPECT_TRUE(client->sent_handshake_data(initial, 10, 5).empty());
  resend = client->sent_handshake_data(initial, 20, 20);
  EXPECT_EQ(Bytes(resend.begin(), resend.end()), Bytes(hello.begin() + 20, hello.begin() + 40));
  EXPECT_EQ(client->pending_offset(initial), 40u);
  EXPECT_EQ(client->end_offset(initial), hello.size());
  client->discard(initial);
  EXPECT_TRUE(client->pending_handshake_data(initial).empty());
  EXPECT_EQ(client->pending_offset(initial), hello.size());
}

TEST_F(TlsHandshakeTest, ClientSessionCacheIsBoundedAndSingleUse) {
  client_config_.session_cache_capacity = 2;
  make_contexts();
  auto store = [&](const std::string& name) {
    client_context_->store_session(
        name,
        CachedSession{bssl::UniquePtr<SSL_SESSION>(SSL_SESSION_new(client_context_->ssl_ctx())),
                      Bytes{1, 2, 3}});
  };
  store("a");
  store("b");
  store("a");  // replaces a's ticket: still two names
  EXPECT_EQ(client_context_->cached_session_count(), 2u);
  store("c");  // evicts b, the least recently stored
  EXPECT_EQ(client_context_->cached_session_count(), 2u);
  EXPECT_FALSE(client_context_->take_session("b").has_value());
  std::optional<CachedSession> a = client_context_->take_session("a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->peer_transport_parameters, (Bytes{1, 2, 3}));
  EXPECT_FALSE(client_context_->take_session("a").has_value());
  EXPECT_EQ(client_context_->cached_session_count(), 1u);
}

TEST(EarlyDataReplayFilterTest, AdmitsEachIdentityOncePerWindow) {
  EarlyDataReplayFilter filter(16);
  Bytes identity = {1, 2, 3, 4};
  Bytes other = {5, 6, 7};
  EXPECT_TRUE(filter.admit(identity, 1000));
  EXPECT_FALSE(filter.admit(identity, 1000));
  EXPECT_FALSE(filter.admit(identity, 1000 + EarlyDataReplayFilter::kWindowSeconds - 1));
  EXPECT_TRUE(filter.admit(other, 1000));
  EXPECT_TRUE(filter.admit(identity, 1000 + EarlyDataReplayFilter::kWindowSeconds));
}

TEST(EarlyDataReplayFilterTest, RefusesWhenFull) {
  EarlyDataReplayFilter filter(8);  // 8 slots, all probed
  for (uint8_t i = 0; i < 8; ++i) EXPECT_TRUE(filter.admit(Bytes{i}, 10));
  EXPECT_FALSE(filter.admit(Bytes{100}, 10));
  EXPECT_TRUE(filter.admit(Bytes{100}, 10 + EarlyDataReplayFilter::kWindowSeconds));
}

}  // namespace
}  // namespace dpquic::crypto
