// Proves @boringssl links (Debian's android build) and has the QUIC TLS API.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

namespace {

int set_read_secret(SSL*, ssl_encryption_level_t, const SSL_CIPHER*, const uint8_t*, size_t) {
  return 1;
}
int set_write_secret(SSL*, ssl_encryption_level_t, const SSL_CIPHER*, const uint8_t*, size_t) {
  return 1;
}
int add_handshake_data(SSL*, ssl_encryption_level_t, const uint8_t*, size_t) { return 1; }
int flush_flight(SSL*) { return 1; }
int send_alert(SSL*, ssl_encryption_level_t, uint8_t) { return 1; }

const SSL_QUIC_METHOD kQuicMethod = {set_read_secret, set_write_secret, add_handshake_data,
                                     flush_flight, send_alert};

}  // namespace

TEST(BoringSslSmokeTest, SetQuicMethodAcceptsAQuicMethod) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION), 1);
  SSL* ssl = SSL_new(ctx);
  ASSERT_NE(ssl, nullptr);
  EXPECT_EQ(SSL_set_quic_method(ssl, &kQuicMethod), 1);
  EXPECT_EQ(SSL_quic_max_handshake_flight_len(ssl, ssl_encryption_initial) > 0, true);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
}
