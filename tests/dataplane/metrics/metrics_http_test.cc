#include "dataplane/metrics/metrics_http.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::dataplane {
namespace {

// A TCP connection to `server` that sent nothing yet, whose reads give up
// after 5 s; -1 on failure.
int connect_to(const conn::SocketAddress& server) {
  sockaddr_storage storage;
  socklen_t length = 0;
  if (!to_sockaddr(server, storage, length)) return -1;
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval timeout{5, 0};
  if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
                  connect(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes (or 5 s of silence).
std::string read_all(int fd) {
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
  return response;
}

// One HTTP/1.0 exchange: sends `request`, returns the response.
std::string http_exchange(const conn::SocketAddress& server, const std::string& request) {
  const int fd = connect_to(server);
  if (fd < 0) return "";
  std::string response;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    response = read_all(fd);
  }
  close(fd);
  return response;
}

std::string get(const conn::SocketAddress& server, const std::string& path) {
  return http_exchange(server, "GET " + path + " HTTP/1.0\r\n\r\n");
}

// The status code of a response ("200"), empty without one.
std::string status(const std::string& response) {
  const size_t space = response.find(' ');
  return space == std::string::npos ? "" : response.substr(space + 1, 3);
}

conn::SocketAddress loopback_any_port() { return conn::SocketAddress::ipv4(127, 0, 0, 1, 0); }

TEST(MetricsHttp, ServesMetricsAndRefusesTheRest) {
  MetricsHttpServer server(loopback_any_port());
  ASSERT_NE(server.address().port, 0);
  std::atomic<int> renders{0};
  server.start([&] {
    ++renders;
    return std::string("dpquic_handshakes_total{shard=\"0\"} 1\n");
  });

  const std::string ok = get(server.address(), "/metrics");
  EXPECT_EQ(status(ok), "200") << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos) << ok;
  EXPECT_NE(ok.find("\r\n\r\ndpquic_handshakes_total{shard=\"0\"} 1\n"), std::string::npos);
  EXPECT_EQ(renders.load(), 1);

  EXPECT_EQ(status(get(server.address(), "/metrics?x=1")), "200");
  EXPECT_EQ(status(get(server.address(), "/nope")), "404");
  EXPECT_EQ(status(get(server.address(), "/metrics/")), "404");
  const std::string post =
      http_exchange(server.address(), "POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nab");
  EXPECT_EQ(status(post), "405") << post;
  EXPECT_NE(post.find("Allow: GET\r\n"), std::string::npos) << post;
  EXPECT_EQ(renders.load(), 2);
}

TEST(MetricsHttp, PortInUseIsOneLineAtConstruction) {
  MetricsHttpServer first(loopback_any_port());
  try {
    MetricsHttpServer second(first.address());
    FAIL() << "a second server bound " << format_address(first.address());
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--metrics=" + format_address(first.address()) + ": Address already in use");
  }
}

size_t open_descriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

TEST(MetricsHttp, StoppingFreesThePortAndEveryDescriptor) {
  const size_t descriptors = open_descriptors();
  conn::SocketAddress address;
  {
    MetricsHttpServer server(loopback_any_port());
    server.start([] { return std::string(); });
    address = server.address();
    EXPECT_EQ(status(get(address, "/metrics")), "200");
  }
  { MetricsHttpServer unstarted(loopback_any_port()); }
  EXPECT_EQ(open_descriptors(), descriptors);
  MetricsHttpServer again(address);  // throws if the socket stayed open
}

TEST(MetricsHttp, ScrapersBeyondTheLimitWaitForASlot) {
  MetricsHttpServer server(loopback_any_port());
  server.start([] { return std::string("x 1\n"); });
  std::vector<int> idle;
  for (unsigned i = 0; i < MetricsHttpServer::kMaxConnections; ++i) {
    idle.push_back(connect_to(server.address()));
    ASSERT_GE(idle.back(), 0);
  }
  // One more waits in the listen backlog, unanswered, until a slot frees
  // (here: the idle ones close; otherwise their idle timeout).
  const int waiting = connect_to(server.address());
  ASSERT_GE(waiting, 0);
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  ASSERT_EQ(write(waiting, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  pollfd readable{waiting, POLLIN, 0};
  EXPECT_EQ(poll(&readable, 1, 300), 0);
  for (int fd : idle) close(fd);
  const std::string response = read_all(waiting);
  close(waiting);
  EXPECT_EQ(status(response), "200") << response;
}

TEST(MetricsHttp, Ipv6Loopback) {
  std::unique_ptr<MetricsHttpServer> server;
  try {
    server = std::make_unique<MetricsHttpServer>(
        conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0));
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no IPv6 loopback: " << e.what();
  }
  server->start([] { return std::string("x 1\n"); });
  EXPECT_EQ(status(get(server->address(), "/metrics")), "200");
}

}  // namespace
}  // namespace dpquic::dataplane
