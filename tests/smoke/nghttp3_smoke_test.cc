// Proves @nghttp3 links and can create a server-side HTTP/3 connection.
#include <gtest/gtest.h>
#include <nghttp3/nghttp3.h>

TEST(Nghttp3SmokeTest, ConnServerNewCreatesAConnectionThatBindsItsStreams) {
  nghttp3_callbacks callbacks{};
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  nghttp3_conn* conn = nullptr;
  ASSERT_EQ(nghttp3_conn_server_new(&conn, &callbacks, &settings, nullptr, nullptr), 0);
  ASSERT_NE(conn, nullptr);
  // Server-initiated unidirectional streams are 3, 7, 11 (RFC 9000 §2.1).
  EXPECT_EQ(nghttp3_conn_bind_control_stream(conn, 3), 0);
  EXPECT_EQ(nghttp3_conn_bind_qpack_streams(conn, 7, 11), 0);
  nghttp3_conn_del(conn);
}
