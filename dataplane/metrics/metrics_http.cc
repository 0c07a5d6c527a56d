#include "dataplane/metrics/metrics_http.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "dataplane/metrics/prometheus_text.h"
#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::dataplane {
namespace {

constexpr char kMetricsPath[] = "/metrics";

MHD_Result reply(MHD_Connection* connection, unsigned status, const std::string& body,
                 const char* content_type) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, MHD_HTTP_METHOD_GET);
  }
  const MHD_Result result = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return result;
}

// libmicrohttpd's request callback; `cls` is the server's Render. Every
// request is answered on its first call: a body, if any, is not read.
MHD_Result answer(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/,
                  size_t* /*upload_data_size*/, void** /*request_state*/) {
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
    return reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n", "text/plain");
  }
  if (std::strcmp(url, kMetricsPath) != 0) {
    return reply(connection, MHD_HTTP_NOT_FOUND, "not found\n", "text/plain");
  }
  try {
    const auto& render = *static_cast<const MetricsHttpServer::Render*>(cls);
    return reply(connection, MHD_HTTP_OK, render(), kPrometheusContentType);
  } catch (const std::exception&) {
    return MHD_NO;  // closes the connection
  }
}

[[noreturn]] void fail(const conn::SocketAddress& address, const char* what, int error) {
  throw std::runtime_error("--metrics=" + format_address(address) + ": " + what +
                           std::strerror(error));
}

int listen_on(const conn::SocketAddress& address) {
  sockaddr_storage storage;
  socklen_t length = 0;
  if (!to_sockaddr(address, storage, length)) fail(address, "", EINVAL);
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(address, "socket: ", errno);
  const int one = 1;
  // TIME_WAIT of a previous run does not hold the port; a listener does.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (storage.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0 ||
      listen(fd, MetricsHttpServer::kListenBacklog) != 0) {
    const int error = errno;
    close(fd);
    fail(address, "", error);
  }
  return fd;
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(const conn::SocketAddress& address)
    : address_(address), listen_fd_(listen_on(address)) {
  sockaddr_storage bound;
  socklen_t length = sizeof(bound);
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
    address_ = from_sockaddr(reinterpret_cast<const sockaddr*>(&bound));
  }
}

MetricsHttpServer::~MetricsHttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
  close(listen_fd_);
}

void MetricsHttpServer::start(Render render) {
  if (daemon_ != nullptr) throw std::logic_error("metrics: started twice");
  render_ = std::move(render);
  // libmicrohttpd gets a descriptor of its own for the socket (it closes it
  // when stopped); ours stays open until the destructor.
  const int handed = fcntl(listen_fd_, F_DUPFD_CLOEXEC, 0);
  if (handed < 0) fail(address_, "dup: ", errno);
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, nullptr, nullptr, &answer, &render_,
      MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(handed), MHD_OPTION_CONNECTION_LIMIT,
      kMaxConnections, MHD_OPTION_CONNECTION_TIMEOUT, kIdleTimeoutSeconds, MHD_OPTION_END);
  if (daemon_ == nullptr) {
    throw std::runtime_error("--metrics=" + format_address(address_) +
                             ": libmicrohttpd did not start");
  }
}

}  // namespace dpquic::dataplane
