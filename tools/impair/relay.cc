#include "tools/impair/relay.h"

#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::impair {
namespace {

constexpr uint64_t kListenTag = UINT64_MAX;
constexpr uint64_t kTimerTag = UINT64_MAX - 1;
constexpr uint64_t kSignalTag = UINT64_MAX - 2;
// Datagrams read from one socket per wake-up, so one busy direction cannot
// starve the other or the timers.
constexpr int kReceiveBudget = 256;
constexpr int kSocketBufferBytes = 4 << 20;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("impair: " + what + ": " + std::strerror(errno));
}

uint64_t upstream_tag(size_t client, int fd) {
  return (static_cast<uint64_t>(client) << 32) | static_cast<uint32_t>(fd);
}

void add_to_epoll(int epoll_fd, int fd, uint64_t tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) fail("epoll_ctl");
}

void set_buffers(int fd) {
  // Best effort: the kernel caps these at rmem_max / wmem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
}

conn::SocketAddress bound_address(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) fail("getsockname");
  return dataplane::from_sockaddr(reinterpret_cast<const sockaddr*>(&storage));
}

int family_of(const conn::SocketAddress& address) {
  return address.family == conn::AddressFamily::kIpv6 ? AF_INET6 : AF_INET;
}

uint64_t seed_for(uint64_t seed, uint64_t direction) {
  // Independent streams per direction; Rng runs splitmix64 over this.
  return seed * 2 + direction;
}

}  // namespace

Relay::Relay(const ImpairOptions& options)
    : options_(options),
      start_(now()),
      up_(options.up, seed_for(options.seed, 0), start_),
      down_(options.down, seed_for(options.seed, 1), start_),
      buffer_(65536) {
  clients_.reserve(options_.max_clients);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail("epoll_create1");

  listen_fd_ = socket(family_of(options_.listen), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("socket");
  set_buffers(listen_fd_);
  sockaddr_storage storage;
  socklen_t length;
  if (!dataplane::to_sockaddr(options_.listen, storage, length)) {
    throw std::runtime_error("impair: bad --listen address");
  }
  if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
    fail("cannot bind --listen=" + dataplane::format_address(options_.listen));
  }
  listen_address_ = bound_address(listen_fd_);
  add_to_epoll(epoll_fd_, listen_fd_, kListenTag);

  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) fail("timerfd_create");
  add_to_epoll(epoll_fd_, timer_fd_, kTimerTag);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  signal_fd_ = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) fail("signalfd");
  add_to_epoll(epoll_fd_, signal_fd_, kSignalTag);
}

Relay::~Relay() {
  for (const Client& client : clients_) close(client.upstream_fd);
  for (int fd : {listen_fd_, timer_fd_, signal_fd_, epoll_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Instant Relay::now() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Instant>(ts.tv_sec) * kSecond + static_cast<Instant>(ts.tv_nsec);
}

int Relay::open_upstream(uint16_t& port) {
  const int fd = socket(family_of(options_.server), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket");
  set_buffers(fd);
  // A fresh ephemeral port on the loopback address of the server's family.
  conn::SocketAddress local =
      options_.server.family == conn::AddressFamily::kIpv6
          ? conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0)
          : conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
  sockaddr_storage storage;
  socklen_t length;
  dataplane::to_sockaddr(local, storage, length);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
    close(fd);
    fail("bind upstream socket");
  }
  dataplane::to_sockaddr(options_.server, storage, length);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
    close(fd);
    fail("connect to --server");
  }
  port = bound_address(fd).port;
  return fd;
}

void Relay::receive_from_clients(Instant now) {
  for (int i = 0; i < kReceiveBudget && !packet_limit_reached(); ++i) {
    sockaddr_storage from{};
    socklen_t from_length = sizeof(from);
    const ssize_t n = recvfrom(listen_fd_, buffer_.data(), buffer_.size(), 0,
                               reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) return;  // EAGAIN, or an error the next readiness reports again
    ++received_;
    const conn::SocketAddress address =
        dataplane::from_sockaddr(reinterpret_cast<sockaddr*>(&from));
    size_t client = 0;
    while (client < clients_.size() && clients_[client].address != address) ++client;
    if (client == clients_.size()) {
      if (clients_.size() >= options_.max_clients) {
        ++clients_refused_;
        continue;
      }
      Client added;
      added.address = address;
      added.upstream_fd = open_upstream(added.upstream_port);
      add_to_epoll(epoll_fd_, added.upstream_fd, upstream_tag(client, added.upstream_fd));
      clients_.push_back(added);
    }
    up_.submit(now, std::span<const uint8_t>(buffer_.data(), static_cast<size_t>(n)),
               static_cast<uint32_t>(client));
  }
}

void Relay::receive_from_server(size_t client, int fd, Instant now) {
  if (client >= clients_.size() || clients_[client].upstream_fd != fd) return;  // rebound
  for (int i = 0; i < kReceiveBudget && !packet_limit_reached(); ++i) {
    const ssize_t n = recv(fd, buffer_.data(), buffer_.size(), 0);
    if (n < 0) {
      // ICMP port unreachable (server not up yet) surfaces once; keep reading.
      if (errno == ECONNREFUSED) continue;
      return;
    }
    ++received_;
    ++clients_[client].received_on_port;
    down_.submit(now, std::span<const uint8_t>(buffer_.data(), static_cast<size_t>(n)),
                 static_cast<uint32_t>(client));
  }
}

void Relay::send_due(Instant now) {
  while (const std::optional<ImpairedLink::Due> due = up_.next_due(now)) {
    if (send(clients_[due->flow].upstream_fd, due->bytes.data(), due->bytes.size(), 0) < 0) {
      up_.count_send_failure();
    }
  }
  while (const std::optional<ImpairedLink::Due> due = down_.next_due(now)) {
    sockaddr_storage storage;
    socklen_t length;
    dataplane::to_sockaddr(clients_[due->flow].address, storage, length);
    if (sendto(listen_fd_, due->bytes.data(), due->bytes.size(), 0,
               reinterpret_cast<const sockaddr*>(&storage), length) < 0) {
      down_.count_send_failure();
    }
  }
}

void Relay::rebind(std::ostream& out) {
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& client = clients_[i];
    uint16_t port = 0;
    const int fd = open_upstream(port);
    add_to_epoll(epoll_fd_, fd, upstream_tag(i, fd));
    // Closing the old socket ends the old mapping: the server's datagrams to
    // the old port are lost, as behind a NAT that rebound.
    close(client.upstream_fd);
    out << "impair: rebind: client " << dataplane::format_address(client.address)
        << " upstream port " << client.upstream_port << " (" << client.received_on_port
        << " datagrams from the server) -> " << port << "\n";
    out.flush();
    client.upstream_fd = fd;
    client.upstream_port = port;
    client.received_on_port = 0;
    ++rebinds_;
  }
}

void Relay::arm_timer(Instant deadline) {
  itimerspec spec{};
  if (deadline != kNever) {
    deadline = std::max<Instant>(deadline, 1);  // 0 would disarm
    spec.it_value.tv_sec = static_cast<time_t>(deadline / kSecond);
    spec.it_value.tv_nsec = static_cast<long>(deadline % kSecond);
  }
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) fail("timerfd_settime");
}

bool Relay::packet_limit_reached() const {
  return options_.max_packets != 0 && received_ >= options_.max_packets;
}

void Relay::print_counters(std::ostream& out, const char* label, Instant now) const {
  const double elapsed = static_cast<double>(now - start_) / static_cast<double>(kSecond);
  auto line = [&](const char* direction, const LinkCounters& c) {
    out << "impair: " << label << " t=" << elapsed << "s " << direction
        << ": received=" << c.received << " forwarded=" << c.forwarded
        << " dropped_blackhole=" << c.dropped_blackhole << " dropped_loss=" << c.dropped_loss
        << " dropped_burst=" << c.dropped_burst << " dropped_queue=" << c.dropped_queue
        << " dropped_overflow=" << c.dropped_overflow << " dropped_send=" << c.dropped_send
        << " duplicated=" << c.duplicated << " corrupted=" << c.corrupted << " held=" << c.held
        << " reordered=" << c.reordered << " delayed=" << c.delayed
        << " rate_queued=" << c.rate_queued << "\n";
  };
  line("up", up_.counters());
  line("down", down_.counters());
  out << "impair: " << label << " t=" << elapsed << "s flows: clients=" << clients_.size()
      << " refused=" << clients_refused_ << " rebinds=" << rebinds_ << "\n";
  for (const Client& client : clients_) {
    out << "impair: " << label << " t=" << elapsed
        << "s client: address=" << dataplane::format_address(client.address)
        << " upstream_port=" << client.upstream_port
        << " received_on_port=" << client.received_on_port << "\n";
  }
  out.flush();
}

void Relay::run(std::ostream& out) {
  const Instant end = start_ + options_.duration;
  Instant next_stats = options_.stats_interval ? start_ + options_.stats_interval : kNever;
  Instant next_rebind = options_.rebind_every ? start_ + options_.rebind_every : kNever;
  const char* reason = "duration elapsed";
  epoll_event events[64];
  bool stop = false;
  while (!stop) {
    Instant t = now();
    send_due(t);
    if (t >= end) break;
    if (packet_limit_reached()) {
      reason = "max packets reached";
      break;
    }
    if (t >= next_stats) {
      print_counters(out, "stats", t);
      while (next_stats <= t) next_stats += options_.stats_interval;
    }
    if (t >= next_rebind) {
      rebind(out);
      while (next_rebind <= t) next_rebind += options_.rebind_every;
    }
    arm_timer(std::min({end, next_stats, next_rebind, up_.next_event(), down_.next_event()}));
    const int count = epoll_wait(epoll_fd_, events, 64, -1);
    if (count < 0) {
      if (errno == EINTR) continue;
      fail("epoll_wait");
    }
    t = now();
    for (int i = 0; i < count; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kListenTag) {
        receive_from_clients(t);
      } else if (tag == kTimerTag) {
        uint64_t expirations;
        [[maybe_unused]] ssize_t ignored = read(timer_fd_, &expirations, sizeof(expirations));
      } else if (tag == kSignalTag) {
        signalfd_siginfo info;
        [[maybe_unused]] ssize_t ignored = read(signal_fd_, &info, sizeof(info));
        reason = "signal";
        stop = true;
      } else {
        receive_from_server(tag >> 32, static_cast<int>(static_cast<uint32_t>(tag)), t);
      }
    }
  }
  out << "impair: stopping: " << reason << "\n";
  print_counters(out, "final", now());
}

}  // namespace dpquic::impair
