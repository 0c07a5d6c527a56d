// flood: a bounded generator of QUIC client Initials against a server on
// this machine (see flood_options.cc for the flags). Every socket is
// connected to the target, so only the target's replies are counted.
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto/mb_manager.h"
#include "dataplane/udp/socket_address_conv.h"
#include "quic/wire/header.h"
#include "quic/wire/version.h"
#include "tools/flood/flood_options.h"
#include "tools/flood/initial_builder.h"

namespace dpquic::flood {
namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct ReplyCounts {
  uint64_t retry = 0;
  uint64_t initial_handshake = 0;  // the first packet is an Initial or Handshake
  uint64_t version_negotiation = 0;
  uint64_t other = 0;
  uint64_t bytes = 0;
};

// Classifies a reply by its first packet (the rest of a coalesced datagram
// does not change who answered what).
void count_reply(std::span<const uint8_t> datagram, size_t full_length, ReplyCounts& counts) {
  counts.bytes += full_length;
  if (datagram.size() < 5 || (datagram[0] & 0x80) == 0) {
    ++counts.other;
    return;
  }
  const uint32_t version = static_cast<uint32_t>(datagram[1]) << 24 |
                           static_cast<uint32_t>(datagram[2]) << 16 |
                           static_cast<uint32_t>(datagram[3]) << 8 | datagram[4];
  if (version == 0) {
    ++counts.version_negotiation;
    return;
  }
  const auto type = wire::long_header_packet_type(version, (datagram[0] >> 4) & 0x03);
  if (!type) {
    ++counts.other;
  } else if (*type == wire::PacketType::kRetry) {
    ++counts.retry;
  } else if (*type == wire::PacketType::kInitial || *type == wire::PacketType::kHandshake) {
    ++counts.initial_handshake;
  } else {
    ++counts.other;
  }
}

// Socket i's local address: the target family's loopback, or 127.0.H.L
// with L in 2..254 so no two sockets share an address.
conn::SocketAddress source_address(const FloodOptions& options, size_t i) {
  if (options.target.family == conn::AddressFamily::kIpv6) {
    std::array<uint8_t, 16> loopback{};
    loopback[15] = 1;
    return conn::SocketAddress::ipv6(loopback, 0);
  }
  if (options.source_addresses == SourceAddresses::kSame) {
    return conn::SocketAddress::ipv4(127, 0, 0, 1, 0);
  }
  return conn::SocketAddress::ipv4(127, 0, static_cast<uint8_t>(i / 253),
                                   static_cast<uint8_t>(2 + i % 253), 0);
}

class Flood {
 public:
  explicit Flood(const FloodOptions& options) : options_(options) {
    raise_file_limit(options.sources + 16);
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) throw std::runtime_error("flood: epoll_create1 failed");
    sockaddr_storage target;
    socklen_t target_length;
    if (!dataplane::to_sockaddr(options.target, target, target_length)) {
      throw std::runtime_error("flood: bad target address");
    }
    const int family = options.target.family == conn::AddressFamily::kIpv6 ? AF_INET6 : AF_INET;
    for (size_t i = 0; i < options.sources; ++i) {
      const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0)
        throw std::runtime_error("flood: socket() failed for source " + std::to_string(i));
      sockets_.push_back(fd);
      sockaddr_storage local;
      socklen_t local_length;
      const conn::SocketAddress address = source_address(options, i);
      if (!dataplane::to_sockaddr(address, local, local_length) ||
          bind(fd, reinterpret_cast<sockaddr*>(&local), local_length) != 0 ||
          connect(fd, reinterpret_cast<sockaddr*>(&target), target_length) != 0) {
        throw std::runtime_error("flood: cannot bind source " + dataplane::format_address(address) +
                                 " and connect it to the target: " + std::strerror(errno));
      }
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = i;
      if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
        throw std::runtime_error("flood: epoll_ctl failed");
      }
    }
  }
  ~Flood() {
    for (int fd : sockets_) close(fd);
    if (epoll_ >= 0) close(epoll_);
  }
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

  void run(InitialBuilder& builder) {
    const uint64_t start = now_ns();
    const uint64_t deadline = start + options_.duration_seconds * 1'000'000'000ull;
    std::array<uint8_t, kDatagramSize> packet;
    uint64_t now = start;
    while (attempts_ < options_.count && now < deadline) {
      // Packets due by now: all of them at --rate, else a batch between
      // looks at the replies.
      uint64_t due = attempts_ + 64;
      if (options_.rate != 0) {
        const unsigned __int128 elapsed = now - start;
        due = static_cast<uint64_t>(elapsed * options_.rate / 1'000'000'000u) + 1;
      }
      due = std::min(due, options_.count);
      while (attempts_ < due) {
        const size_t size =
            options_.kind == FloodKind::kValid ? builder.valid(packet) : builder.garbage(packet);
        if (size == 0) throw std::runtime_error("flood: could not build a packet");
        const int fd = sockets_[attempts_ % sockets_.size()];
        ++attempts_;
        if (send(fd, packet.data(), size, 0) == static_cast<ssize_t>(size)) {
          ++sent_;
        } else {
          ++send_errors_;  // e.g. ENOBUFS/EAGAIN: the local queue is full
        }
      }
      receive(0);
      now = now_ns();
      if (options_.rate != 0 && attempts_ < options_.count && now < deadline) {
        // Sleep until the next packet is due (at most 1 ms), watching replies.
        const uint64_t next = start + (attempts_ * 1'000'000'000ull) / options_.rate;
        if (next > now) receive(std::min<uint64_t>(next - now, 1'000'000));
        now = now_ns();
      }
    }
    send_seconds_ = static_cast<double>(now_ns() - start) / 1e9;
    const uint64_t drain_end = now_ns() + options_.drain_ms * 1'000'000ull;
    for (now = now_ns(); now < drain_end; now = now_ns()) receive(drain_end - now);
  }

  void print(FILE* out) const {
    std::fprintf(out,
                 "flood: sent=%llu send_errors=%llu kind=%s sources=%llu seconds=%.3f "
                 "rate=%.0f/s\n",
                 static_cast<unsigned long long>(sent_),
                 static_cast<unsigned long long>(send_errors_),
                 options_.kind == FloodKind::kValid ? "valid" : "garbage",
                 static_cast<unsigned long long>(options_.sources), send_seconds_,
                 send_seconds_ > 0 ? static_cast<double>(sent_) / send_seconds_ : 0.0);
    std::fprintf(out,
                 "flood: replies retry=%llu initial_handshake=%llu version_negotiation=%llu "
                 "other=%llu bytes=%llu\n",
                 static_cast<unsigned long long>(replies_.retry),
                 static_cast<unsigned long long>(replies_.initial_handshake),
                 static_cast<unsigned long long>(replies_.version_negotiation),
                 static_cast<unsigned long long>(replies_.other),
                 static_cast<unsigned long long>(replies_.bytes));
  }

 private:
  static void raise_file_limit(uint64_t needed) {
    rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
    if (limit.rlim_max < needed) {
      throw std::runtime_error("flood: --sources needs " + std::to_string(needed) +
                               " file descriptors, the hard limit is " +
                               std::to_string(limit.rlim_max));
    }
    limit.rlim_cur = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      throw std::runtime_error("flood: cannot raise the file descriptor limit");
    }
  }

  // Counts every reply waiting on any socket; waits up to `timeout_ns` for
  // the first one.
  void receive(uint64_t timeout_ns) {
    constexpr int kEvents = 256;
    constexpr size_t kBatch = 32;
    // Only the first bytes matter for the kind; MSG_TRUNC reports the size.
    static std::array<std::array<uint8_t, 64>, kBatch> buffers;
    std::array<epoll_event, kEvents> events;
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000ull),
                           static_cast<long>(timeout_ns % 1'000'000'000ull)};
    const int n = epoll_pwait2(epoll_, events.data(), kEvents, &timeout, nullptr);
    for (int e = 0; e < n; ++e) {
      const int fd = sockets_[events[e].data.u64];
      for (;;) {
        std::array<mmsghdr, kBatch> messages{};
        std::array<iovec, kBatch> iov;
        for (size_t i = 0; i < kBatch; ++i) {
          iov[i] = {buffers[i].data(), buffers[i].size()};
          messages[i].msg_hdr.msg_iov = &iov[i];
          messages[i].msg_hdr.msg_iovlen = 1;
        }
        const int got = recvmmsg(fd, messages.data(), kBatch, MSG_TRUNC, nullptr);
        if (got <= 0) break;  // EAGAIN, or ECONNREFUSED once the server is gone
        for (int i = 0; i < got; ++i) {
          const size_t length = messages[i].msg_len;
          count_reply({buffers[i].data(), std::min(length, buffers[i].size())}, length, replies_);
        }
        if (got < static_cast<int>(kBatch)) break;
      }
    }
  }

  const FloodOptions& options_;
  int epoll_ = -1;
  std::vector<int> sockets_;
  uint64_t attempts_ = 0;
  uint64_t sent_ = 0;
  uint64_t send_errors_ = 0;
  double send_seconds_ = 0;
  ReplyCounts replies_;
};

int run(const FloodOptions& options) {
  crypto::MbManager mb;
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  InitialBuilder builder(mb, make_client_hello_template("localhost"), seed);
  Flood flood(options);
  flood.run(builder);
  flood.print(stdout);
  return 0;
}

}  // namespace
}  // namespace dpquic::flood

int main(int argc, char** argv) {
  std::string error;
  const auto options = dpquic::flood::parse_flood_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "flood: %s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(dpquic::flood::flood_usage(), stdout);
    return 0;
  }
  try {
    return dpquic::flood::run(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
