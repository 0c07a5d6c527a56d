#pragma once
// The proxy's socket side: one listening UDP socket for clients, one
// connected upstream socket per client flow, an epoll loop woken by the
// sockets, a timerfd armed at the next due datagram or periodic job, and a
// signalfd for SIGINT/SIGTERM. The two ImpairedLinks decide what goes out
// when.

#include <cstdint>
#include <ostream>
#include <vector>

#include "quic/conn/socket_address.h"
#include "tools/impair/impair_options.h"
#include "tools/impair/impaired_link.h"

namespace dpquic::impair {

class Relay {
 public:
  // Opens the sockets; throws std::runtime_error (one line) on failure.
  // SIGINT and SIGTERM must already be blocked in the calling thread.
  explicit Relay(const ImpairOptions& options);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // The listening address with its real port.
  const conn::SocketAddress& listen_address() const { return listen_address_; }

  // Relays until --duration, --max-packets or a signal; prints counters to
  // `out` every --stats and at the end.
  void run(std::ostream& out);

  const LinkCounters& up_counters() const { return up_.counters(); }
  const LinkCounters& down_counters() const { return down_.counters(); }

 private:
  struct Client {
    conn::SocketAddress address;
    int upstream_fd = -1;
    uint16_t upstream_port = 0;
    // Datagrams from the server on the current upstream socket: after a
    // rebinding this shows the server found the new port.
    uint64_t received_on_port = 0;
  };

  Instant now() const;
  int open_upstream(uint16_t& port);
  void receive_from_clients(Instant now);
  void receive_from_server(size_t client, int fd, Instant now);
  void send_due(Instant now);
  void rebind(std::ostream& out);
  void arm_timer(Instant deadline);
  void print_counters(std::ostream& out, const char* label, Instant now) const;
  bool packet_limit_reached() const;

  ImpairOptions options_;
  Instant start_;
  ImpairedLink up_;
  ImpairedLink down_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int signal_fd_ = -1;
  conn::SocketAddress listen_address_;
  std::vector<Client> clients_;
  uint64_t clients_refused_ = 0;
  uint64_t rebinds_ = 0;
  uint64_t received_ = 0;
  std::vector<uint8_t> buffer_;
};

}  // namespace dpquic::impair
