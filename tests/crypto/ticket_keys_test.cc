// Session-ticket keys: nginx's two file layouts byte for byte, then real
// handshakes between separate server contexts that share, rotate or lack a
// key, with 48- and 80-byte keys.
#include "crypto/ticket_keys.h"

#include <gtest/gtest.h>
#include <openssl/cipher.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/tls_context.h"
#include "crypto/tls_session.h"
#include "tests/util/temp_dir.h"

namespace dpquic::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr char kSizeHint[] = " bytes; expected 48 or 80 (nginx ssl_session_ticket_key)";

// 0, 1, 2, ... so that every field shows where it came from.
Bytes counting_bytes(size_t size) {
  Bytes bytes(size);
  std::iota(bytes.begin(), bytes.end(), uint8_t{0});
  return bytes;
}

Bytes range(uint8_t first, size_t length) {
  Bytes bytes(length);
  std::iota(bytes.begin(), bytes.end(), first);
  return bytes;
}

TicketKey random_key_of_file_size(size_t size) {
  Bytes bytes(size);
  RAND_bytes(bytes.data(), bytes.size());
  std::string error;
  std::optional<TicketKey> key = parse_ticket_key(bytes, error);
  if (!key) throw std::runtime_error(error);
  return *key;
}

TEST(ParseTicketKeyTest, FortyEightBytesAreNameAes128KeyHmacKey) {
  std::string error;
  std::optional<TicketKey> key = parse_ticket_key(counting_bytes(48), error);
  ASSERT_TRUE(key.has_value()) << error;
  EXPECT_EQ(Bytes(key->name.begin(), key->name.end()), range(0, 16));
  EXPECT_EQ(key->aes_key, range(16, 16));
  EXPECT_EQ(key->hmac_key, range(32, 16));
}

TEST(ParseTicketKeyTest, EightyBytesAreNameHmacKeyAes256Key) {
  std::string error;
  std::optional<TicketKey> key = parse_ticket_key(counting_bytes(80), error);
  ASSERT_TRUE(key.has_value()) << error;
  EXPECT_EQ(Bytes(key->name.begin(), key->name.end()), range(0, 16));
  EXPECT_EQ(key->hmac_key, range(16, 32));
  EXPECT_EQ(key->aes_key, range(48, 32));
}

TEST(ParseTicketKeyTest, OtherSizesFailNamingTheSize) {
  for (size_t size : {0, 47, 49, 79, 81}) {
    std::string error;
    EXPECT_FALSE(parse_ticket_key(counting_bytes(size), error).has_value()) << size;
    EXPECT_EQ(error, "is " + std::to_string(size) + kSizeHint);
  }
}

TEST(LoadTicketKeyFileTest, ErrorsNameThePath) {
  testing::TempDir directory("ticket_keys");
  std::string error;
  const std::string missing = directory.path() + "/missing.key";
  EXPECT_FALSE(load_ticket_key_file(missing, error).has_value());
  EXPECT_EQ(error, missing + ": cannot open: No such file or directory");

  directory.write("short.key", counting_bytes(10));
  const std::string short_file = directory.path() + "/short.key";
  EXPECT_FALSE(load_ticket_key_file(short_file, error).has_value());
  EXPECT_EQ(error, short_file + ": is 10" + kSizeHint);

  EXPECT_FALSE(load_ticket_key_file(directory.path(), error).has_value());
  EXPECT_EQ(error, directory.path() + ": not a regular file");
}

TEST(LoadTicketKeyFileTest, ReadsBothFormats) {
  testing::TempDir directory("ticket_keys");
  for (size_t size : {48, 80}) {
    const std::string name = std::to_string(size) + ".key";
    directory.write(name, counting_bytes(size));
    std::string error;
    std::optional<TicketKey> loaded = load_ticket_key_file(directory.path() + "/" + name, error);
    std::optional<TicketKey> parsed = parse_ticket_key(counting_bytes(size), error);
    ASSERT_TRUE(loaded.has_value()) << error;
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(loaded->name, parsed->name);
    EXPECT_EQ(loaded->hmac_key, parsed->hmac_key);
    EXPECT_EQ(loaded->aes_key, parsed->aes_key);
  }
}

TEST(RandomTicketKeyTest, IsAes128AndFresh) {
  TicketKey a = random_ticket_key();
  TicketKey b = random_ticket_key();
  EXPECT_EQ(a.hmac_key.size(), 16u);
  EXPECT_EQ(a.aes_key.size(), 16u);
  EXPECT_NE(a.name, b.name);
  EXPECT_NE(a.hmac_key, b.hmac_key);
  EXPECT_NE(a.aes_key, b.aes_key);
}

// --- Handshakes ------------------------------------------------------------

class AcceptingSink : public SecretSink {
 public:
  bool install_secret(EncryptionLevel, Direction, CipherSuite, std::span<const uint8_t>) override {
    return true;
  }
};

constexpr EncryptionLevel kCryptoLevels[] = {EncryptionLevel::kInitial, EncryptionLevel::kHandshake,
                                             EncryptionLevel::kApplication};

// Moves everything `from` wrote to `to`, level by level; returns the bytes moved.
size_t shuttle(TlsSession& from, TlsSession& to) {
  size_t moved = 0;
  for (EncryptionLevel level : kCryptoLevels) {
    std::span<const uint8_t> data = from.pending_handshake_data(level);
    if (data.empty() || to.failed()) continue;
    Bytes copy(data.begin(), data.end());
    from.consume(level, copy.size());
    moved += copy.size();
    if (to.provide_handshake_data(level, copy)) to.advance();
  }
  return moved;
}

const Bytes kClientParams = {0x01, 0x04, 0x80, 0x00, 0x75, 0x30};
const Bytes kServerParams = {0x03, 0x02, 0x45, 0xc0};
const Bytes kEarlyDataContext = {'f', 'l', 'e', 'e', 't'};

struct Connection {
  AcceptingSink client_sink;
  AcceptingSink server_sink;
  std::unique_ptr<TlsSession> client;
  std::unique_ptr<TlsSession> server;
};

// A complete handshake of a new client session of `client` with a new
// server session of `server`.
std::unique_ptr<Connection> handshake(TlsContext& client, TlsContext& server) {
  auto c = std::make_unique<Connection>();
  c->client = TlsSession::create_client(client, c->client_sink, "localhost");
  c->server = TlsSession::create_server(server, c->server_sink);
  EXPECT_TRUE(c->client->set_local_transport_parameters(kClientParams));
  EXPECT_TRUE(c->server->set_local_transport_parameters(kServerParams));
  EXPECT_TRUE(c->server->set_early_data_context(kEarlyDataContext));
  c->client->advance();
  for (int round = 0; round < 8; ++round) {
    if (shuttle(*c->client, *c->server) + shuttle(*c->server, *c->client) == 0) break;
  }
  EXPECT_TRUE(c->client->handshake_complete()) << c->client->error_reason();
  EXPECT_TRUE(c->server->handshake_complete()) << c->server->error_reason();
  return c;
}

// The ticket bytes of a session.
Bytes ticket_of(const CachedSession& cached) {
  const uint8_t* data = nullptr;
  size_t length = 0;
  SSL_SESSION_get0_ticket(cached.session.get(), &data, &length);
  return Bytes(data, data + length);
}

Bytes name_of(const TicketKey& key) { return Bytes(key.name.begin(), key.name.end()); }

// Decrypts `ticket` as BoringSSL's callback layout under `key`, with the
// cipher its AES key size names: the DER session on success, empty if not.
Bytes decrypt_ticket(const Bytes& ticket, const TicketKey& key) {
  constexpr size_t kHeader = 32, kMac = 32;
  if (ticket.size() <= kHeader + kMac) return {};
  const EVP_CIPHER* cipher = key.aes_key.size() == 32 ? EVP_aes_256_cbc() : EVP_aes_128_cbc();
  bssl::ScopedEVP_CIPHER_CTX ctx;
  Bytes plain(ticket.size());
  int length = 0, final_length = 0;
  if (EVP_DecryptInit_ex(ctx.get(), cipher, nullptr, key.aes_key.data(), ticket.data() + 16) != 1 ||
      EVP_DecryptUpdate(ctx.get(), plain.data(), &length, ticket.data() + kHeader,
                        static_cast<int>(ticket.size() - kHeader - kMac)) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), plain.data() + length, &final_length) != 1) {
    return {};
  }
  plain.resize(static_cast<size_t>(length + final_length));
  return plain;
}

// K1 and K2 in the file formats of the parameter (48 or 80 bytes each).
class TicketKeyHandshakeTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {
 protected:
  TicketKeyHandshakeTest()
      : certificate_(CertificateChain::generate_self_signed()),
        k1_(random_key_of_file_size(std::get<0>(GetParam()))),
        k2_(random_key_of_file_size(std::get<1>(GetParam()))) {
    TlsClientConfig config;
    config.trusted_certificates_pem = certificate_.leaf_pem();
    client_ = TlsContext::create_client(config);
  }

  std::unique_ptr<TlsContext> server(std::vector<TicketKey> keys) {
    TlsServerConfig config;
    config.certificate = &certificate_;
    config.ticket_keys = std::move(keys);
    return TlsContext::create_server(config);
  }

  std::unique_ptr<Connection> connect(TlsContext& server_context) {
    return handshake(*client_, server_context);
  }

  // The ticket the client holds for "localhost" after a handshake with
  // `server_context`, taken out of its cache.
  CachedSession ticket_from(TlsContext& server_context) {
    connect(server_context);
    std::optional<CachedSession> cached = client_->take_session("localhost");
    if (!cached) throw std::runtime_error("no ticket");
    return std::move(*cached);
  }

  // Offers `cached` (again: the test may offer one ticket to several servers).
  std::unique_ptr<Connection> resume(const CachedSession& cached, TlsContext& server_context) {
    SSL_SESSION_up_ref(cached.session.get());
    client_->store_session("localhost",
                           CachedSession{bssl::UniquePtr<SSL_SESSION>(cached.session.get()),
                                         cached.peer_transport_parameters});
    return connect(server_context);
  }

  CertificateChain certificate_;
  TicketKey k1_;
  TicketKey k2_;
  std::unique_ptr<TlsContext> client_;
};

TEST_P(TicketKeyHandshakeTest, TicketsAreEncryptedUnderTheFirstKeyInItsFormat) {
  auto a = server({k1_});
  CachedSession cached = ticket_from(*a);
  const Bytes ticket = ticket_of(cached);
  ASSERT_GT(ticket.size(), 64u);
  EXPECT_EQ(Bytes(ticket.begin(), ticket.begin() + 16), name_of(k1_));
  const Bytes der = decrypt_ticket(ticket, k1_);
  ASSERT_FALSE(der.empty()) << "not AES-" << k1_.aes_key.size() * 8 << "-CBC under K1";
  bssl::UniquePtr<SSL_SESSION> session(
      SSL_SESSION_from_bytes(der.data(), der.size(), a->ssl_ctx()));
  EXPECT_NE(session, nullptr);
}

TEST_P(TicketKeyHandshakeTest, AnotherContextWithTheSameKeyResumes) {
  auto a = server({k1_});
  auto b = server({k1_});
  CachedSession cached = ticket_from(*a);
  auto c = resume(cached, *b);
  EXPECT_TRUE(c->client->session_resumed());
  EXPECT_TRUE(c->server->session_resumed());
}

TEST_P(TicketKeyHandshakeTest, AnotherContextWithTheSameKeyAcceptsZeroRtt) {
  auto a = server({k1_});
  auto b = server({k1_});
  CachedSession cached = ticket_from(*a);
  auto c = resume(cached, *b);
  EXPECT_TRUE(c->client->early_data_offered());
  EXPECT_TRUE(c->server->early_data_accepted());
  EXPECT_TRUE(c->client->early_data_accepted());
  EXPECT_EQ(b->replay_records(), 1u);
}

TEST_P(TicketKeyHandshakeTest, OlderKeyResumesWithZeroRttAndRenewsUnderTheFirst) {
  auto a = server({k1_});
  auto rotated = server({k2_, k1_});
  CachedSession cached = ticket_from(*a);
  auto c = resume(cached, *rotated);
  EXPECT_TRUE(c->server->session_resumed());
  EXPECT_TRUE(c->server->early_data_accepted());
  EXPECT_EQ(rotated->replay_records(), 1u);
  std::optional<CachedSession> renewed = client_->take_session("localhost");
  ASSERT_TRUE(renewed.has_value());
  const Bytes ticket = ticket_of(*renewed);
  ASSERT_GT(ticket.size(), 16u);
  EXPECT_EQ(Bytes(ticket.begin(), ticket.begin() + 16), name_of(k2_));
  EXPECT_FALSE(decrypt_ticket(ticket, k2_).empty());
  const std::vector<TicketKey> only_k2 = {k2_};
  EXPECT_TRUE(ticket_authentic(ticket, only_k2));
}

TEST_P(TicketKeyHandshakeTest, RetiredKeyMeansAFullHandshake) {
  auto a = server({k1_});
  auto d = server({k2_});
  CachedSession cached = ticket_from(*a);
  auto c = resume(cached, *d);
  EXPECT_TRUE(c->client->early_data_offered());
  EXPECT_FALSE(c->client->session_resumed());
  EXPECT_FALSE(c->server->session_resumed());
  EXPECT_FALSE(c->server->early_data_accepted());
  EXPECT_EQ(d->replay_records(), 0u);
}

TEST_P(TicketKeyHandshakeTest, TicketAuthenticNeedsTheKeyAndEveryByte) {
  auto a = server({k1_});
  const Bytes ticket = ticket_of(ticket_from(*a));
  const std::vector<TicketKey> k1 = {k1_}, k2 = {k2_}, both = {k2_, k1_};
  EXPECT_TRUE(ticket_authentic(ticket, k1));
  EXPECT_TRUE(ticket_authentic(ticket, both));
  EXPECT_FALSE(ticket_authentic(ticket, k2));
  EXPECT_FALSE(ticket_authentic(ticket, {}));
  EXPECT_FALSE(ticket_authentic(std::span(ticket).first(64), k1));
  for (size_t at : {size_t{0}, size_t{15}, size_t{16}, size_t{40}, ticket.size() - 1}) {
    Bytes flipped = ticket;
    flipped[at] ^= 0x01;
    EXPECT_FALSE(ticket_authentic(flipped, both)) << "byte " << at;
  }
}

INSTANTIATE_TEST_SUITE_P(FileSizes, TicketKeyHandshakeTest,
                         ::testing::Combine(::testing::Values(48, 80), ::testing::Values(48, 80)),
                         [](const auto& sizes) {
                           return "K1_" + std::to_string(std::get<0>(sizes.param)) + "_K2_" +
                                  std::to_string(std::get<1>(sizes.param));
                         });

TEST(TicketKeyContextTest, WithoutKeysEachContextHasItsOwn) {
  CertificateChain certificate = CertificateChain::generate_self_signed();
  TlsServerConfig server_config;
  server_config.certificate = &certificate;
  auto first = TlsContext::create_server(server_config);
  auto second = TlsContext::create_server(server_config);
  TlsClientConfig client_config;
  client_config.trusted_certificates_pem = certificate.leaf_pem();
  auto client = TlsContext::create_client(client_config);
  handshake(*client, *first);
  EXPECT_TRUE(handshake(*client, *first)->server->session_resumed());
  EXPECT_FALSE(handshake(*client, *second)->server->session_resumed());
}

TEST(TicketKeyContextTest, ConfigurationErrorsThrowAtStartUp) {
  CertificateChain certificate = CertificateChain::generate_self_signed();
  TlsServerConfig config;
  config.certificate = &certificate;
  config.ticket_keys.assign(kMaxTicketKeys, random_ticket_key());
  EXPECT_NE(TlsContext::create_server(config), nullptr);
  config.ticket_keys.push_back(random_ticket_key());
  try {
    TlsContext::create_server(config);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "TLS server: 9 session-ticket keys; at most 8");
  }
  config.ticket_keys = {random_ticket_key(), random_ticket_key()};
  config.ticket_keys[1].aes_key.resize(24);
  try {
    TlsContext::create_server(config);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(),
                 "TLS server: session-ticket key 1: HMAC and AES keys must be 16 or 32 bytes");
  }
}

}  // namespace
}  // namespace dpquic::crypto
