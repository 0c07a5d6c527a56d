#pragma once
// The HTTP side of --metrics: libmicrohttpd on a thread of its own (never a
// shard's), answering GET /metrics with the text a callback renders, 404
// for other paths and 405 for other methods. The socket is bound and
// listening from construction, so a port in use fails at start; requests
// are answered from start() on. At most kMaxConnections scrapers at once,
// each dropped after kIdleTimeoutSeconds of silence; more wait in the
// listen backlog (kListenBacklog) until one leaves.

#include <functional>
#include <string>

#include "quic/conn/socket_address.h"

struct MHD_Daemon;

namespace dpquic::dataplane {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;
  static constexpr unsigned kMaxConnections = 16;
  static constexpr unsigned kIdleTimeoutSeconds = 10;
  static constexpr int kListenBacklog = 16;

  // Binds and listens on `address` (TCP; port 0: one the kernel picks).
  // Throws std::runtime_error "--metrics=ADDRESS: <reason>" when it cannot
  // (the port is in use).
  explicit MetricsHttpServer(const conn::SocketAddress& address);
  // Stops the thread (waiting for a scrape in progress) and closes the socket.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Starts the thread; `render` runs on it once per GET /metrics. Throws
  // std::runtime_error when libmicrohttpd cannot start.
  void start(Render render);
  // The address bound (with the port the kernel picked for port 0).
  const conn::SocketAddress& address() const { return address_; }

 private:
  conn::SocketAddress address_;
  int listen_fd_ = -1;
  MHD_Daemon* daemon_ = nullptr;
  Render render_;
};

}  // namespace dpquic::dataplane
