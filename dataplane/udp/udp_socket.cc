#include "dataplane/udp/udp_socket.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "dataplane/udp/socket_address_conv.h"
#include "quic/transmit/gso_split.h"

namespace dpquic::dataplane {
namespace {

// Room for PKTINFO (in6_pktinfo), TOS/TCLASS and UDP_GRO with spare space, so
// MSG_CTRUNC never hides one of them.
constexpr size_t kReceiveControlBytes = 256;
// PKTINFO + TOS/TCLASS + UDP_SEGMENT.
constexpr size_t kSendControlBytes = 128;
constexpr size_t kMaxSendDatagrams = transmit::kMaxBurstDatagrams;

template <size_t N>
struct alignas(cmsghdr) ControlBuffer {
  uint8_t bytes[N];
};

std::string errno_text(int error) { return std::generic_category().message(error); }

[[noreturn]] void fail(const char* what, const conn::SocketAddress& address, int error) {
  throw std::runtime_error(std::string(what) + " " + format_address(address) + ": " +
                           errno_text(error));
}

bool set_int_option(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof(value)) == 0;
}

int get_int_option(int fd, int level, int name) {
  int value = 0;
  socklen_t length = sizeof(value);
  if (getsockopt(fd, level, name, &value, &length) != 0) return 0;
  return value;
}

// Reads a cmsg's payload as an integer whatever its width (IP_TOS arrives as
// one byte, IPV6_TCLASS and UDP_GRO as an int).
int cmsg_int(const cmsghdr* cmsg) {
  const size_t length = cmsg->cmsg_len - CMSG_LEN(0);
  const unsigned char* data = CMSG_DATA(cmsg);
  if (length >= sizeof(int)) {
    int value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  if (length >= sizeof(uint16_t)) {
    uint16_t value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  return length == 1 ? data[0] : 0;
}

}  // namespace

struct UdpSocket::Storage {
  // Receive side: one buffer per message, allocated once.
  size_t batch;  // receive messages in use, <= kReceiveBatch
  std::unique_ptr<uint8_t[]> buffers{new uint8_t[batch * kReceiveBufferBytes]};
  std::array<mmsghdr, kReceiveBatch> receive_messages{};
  std::array<iovec, kReceiveBatch> receive_iovecs{};
  std::array<sockaddr_storage, kReceiveBatch> receive_names{};
  std::array<ControlBuffer<kReceiveControlBytes>, kReceiveBatch> receive_control{};

  // What the last recvmmsg brought, parsed; datagrams not yet returned start
  // at (next_message, next_offset).
  struct Message {
    conn::PathAddresses path;
    transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
    size_t length = 0;
    size_t segment_size = 0;  // GRO stride; 0 for a plain datagram
    bool truncated = false;
  };
  std::array<Message, kReceiveBatch> received{};
  size_t received_count = 0;
  size_t next_message = 0;
  size_t next_offset = 0;

  // Send side. Every datagram of a burst has the same destination and the
  // same cmsgs, so all messages share one name and one control buffer
  // (the kernel only reads them).
  std::array<mmsghdr, kMaxSendDatagrams> send_messages{};
  std::array<iovec, kMaxSendDatagrams> send_iovecs{};
  sockaddr_storage destination{};
  socklen_t destination_length = 0;
  ControlBuffer<kSendControlBytes> send_control{};
  size_t send_control_base = 0;  // PKTINFO + TOS
  size_t send_control_gso = 0;   // ... + UDP_SEGMENT

  explicit Storage(size_t receive_batch) : batch(receive_batch) {
    for (size_t i = 0; i < batch; ++i) {
      receive_iovecs[i].iov_base = buffers.get() + i * kReceiveBufferBytes;
      receive_iovecs[i].iov_len = kReceiveBufferBytes;
      msghdr& header = receive_messages[i].msg_hdr;
      header.msg_iov = &receive_iovecs[i];
      header.msg_iovlen = 1;
      header.msg_name = &receive_names[i];
      header.msg_control = receive_control[i].bytes;
    }
  }
};

UdpSocket::UdpSocket(const UdpSocketOptions& options) : local_(options.bind) {
  const conn::SocketAddress& bind_address = options.bind;
  if (!bind_address.valid()) {
    throw std::runtime_error("cannot open a UDP socket without an address to bind");
  }
  ipv6_ = bind_address.family == conn::AddressFamily::kIpv6;
  wildcard_ = is_wildcard(bind_address);
  fd_ = socket(ipv6_ ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd_ < 0) fail("cannot open a UDP socket for", bind_address, errno);
  try {
    set_options(options);
    sockaddr_storage storage{};
    socklen_t length = 0;
    to_sockaddr(bind_address, storage, length);
    if (bind(fd_, reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
      fail("cannot bind", bind_address, errno);
    }
    length = sizeof(storage);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
      fail("cannot read the bound address of", bind_address, errno);
    }
    local_ = from_sockaddr(reinterpret_cast<const sockaddr*>(&storage));
    storage_ =
        std::make_unique<Storage>(std::clamp<size_t>(options.receive_batch, 1, kReceiveBatch));
  } catch (...) {
    close_fd();
    throw;
  }
}

void UdpSocket::set_options(const UdpSocketOptions& options) {
  const conn::SocketAddress& bind_address = options.bind;
  auto require = [&](int level, int name, const char* label) {
    if (set_int_option(fd_, level, name, 1)) return;
    const int error = errno;
    fail((std::string("cannot set ") + label + " on").c_str(), bind_address, error);
  };
  if (options.reuse_port) require(SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT");
  if (ipv6_) {
    require(IPPROTO_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY");
    require(IPPROTO_IPV6, IPV6_RECVPKTINFO, "IPV6_RECVPKTINFO");
    require(IPPROTO_IPV6, IPV6_RECVTCLASS, "IPV6_RECVTCLASS");
    // QUIC datagrams must not be fragmented (RFC 9000 §14): never fragment
    // locally, and do not follow a cached path MTU down.
    set_int_option(fd_, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_PROBE);
  } else {
    require(IPPROTO_IP, IP_PKTINFO, "IP_PKTINFO");
    require(IPPROTO_IP, IP_RECVTOS, "IP_RECVTOS");
    // Sets DF on every datagram (RFC 9000 §14) without PMTU caching.
    set_int_option(fd_, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE);
  }
  // Kernels without UDP GRO/GSO refuse the options: run without them.
  gro_ = options.gro && set_int_option(fd_, SOL_UDP, UDP_GRO, 1);
  gso_ = options.gso && set_int_option(fd_, SOL_UDP, UDP_SEGMENT, 0);
  // The *FORCE variants pass net.core.[rw]mem_max but need CAP_NET_ADMIN.
  if (!set_int_option(fd_, SOL_SOCKET, SO_RCVBUFFORCE, options.receive_buffer_bytes)) {
    set_int_option(fd_, SOL_SOCKET, SO_RCVBUF, options.receive_buffer_bytes);
  }
  if (!set_int_option(fd_, SOL_SOCKET, SO_SNDBUFFORCE, options.send_buffer_bytes)) {
    set_int_option(fd_, SOL_SOCKET, SO_SNDBUF, options.send_buffer_bytes);
  }
  receive_buffer_bytes_ = get_int_option(fd_, SOL_SOCKET, SO_RCVBUF);
  send_buffer_bytes_ = get_int_option(fd_, SOL_SOCKET, SO_SNDBUF);
}

UdpSocket::~UdpSocket() { close_fd(); }

UdpSocket::UdpSocket(UdpSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      local_(other.local_),
      wildcard_(other.wildcard_),
      ipv6_(other.ipv6_),
      gro_(other.gro_),
      gso_(other.gso_),
      receive_buffer_bytes_(other.receive_buffer_bytes_),
      send_buffer_bytes_(other.send_buffer_bytes_),
      storage_(std::move(other.storage_)),
      stats_(other.stats_) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    close_fd();
    fd_ = std::exchange(other.fd_, -1);
    local_ = other.local_;
    wildcard_ = other.wildcard_;
    ipv6_ = other.ipv6_;
    gro_ = other.gro_;
    gso_ = other.gso_;
    receive_buffer_bytes_ = other.receive_buffer_bytes_;
    send_buffer_bytes_ = other.send_buffer_bytes_;
    storage_ = std::move(other.storage_);
    stats_ = other.stats_;
  }
  return *this;
}

void UdpSocket::close_fd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool UdpSocket::has_pending() const {
  return storage_ && storage_->next_message < storage_->received_count;
}

size_t UdpSocket::receive(std::span<ReceivedDatagram> out) {
  if (out.empty() || fd_ < 0) return 0;
  Storage& s = *storage_;
  // Datagrams kept from the last call go first; no new recvmmsg in the same
  // call, so the buffers they live in are not overwritten.
  if (has_pending()) return emit_pending(out);

  const size_t batch = std::min(s.batch, out.size());
  for (size_t i = 0; i < batch; ++i) {
    msghdr& header = s.receive_messages[i].msg_hdr;
    header.msg_namelen = sizeof(sockaddr_storage);
    header.msg_controllen = kReceiveControlBytes;
    header.msg_flags = 0;
  }
  int received;
  do {
    received = recvmmsg(fd_, s.receive_messages.data(), static_cast<unsigned>(batch), MSG_DONTWAIT,
                        nullptr);
  } while (received < 0 && errno == EINTR);
  ++stats_.receive_calls;
  if (received <= 0) {
    if (received < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ++stats_.receive_errors;
    return 0;
  }

  for (size_t i = 0; i < static_cast<size_t>(received); ++i) {
    const msghdr& header = s.receive_messages[i].msg_hdr;
    Storage::Message& message = s.received[i];
    message.length = s.receive_messages[i].msg_len;
    message.truncated = (header.msg_flags & MSG_TRUNC) != 0;
    message.path.remote = from_sockaddr(static_cast<const sockaddr*>(header.msg_name));
    read_control(header, message.path.local, message.ecn, message.segment_size);
    if (message.truncated) {
      ++stats_.receive_truncated;
    } else if (message.segment_size != 0) {
      ++stats_.gro_batches;
    }
  }
  s.received_count = static_cast<size_t>(received);
  s.next_message = 0;
  s.next_offset = 0;
  return emit_pending(out);
}

void UdpSocket::read_control(const msghdr& header, conn::SocketAddress& local,
                             transmit::EcnCodepoint& ecn, size_t& segment_size) const {
  segment_size = 0;
  ecn = transmit::EcnCodepoint::kNotEct;
  local = local_;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(const_cast<msghdr*>(&header), cmsg)) {
    if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(cmsg), sizeof(info));
      local = address_from_ip(&info.ipi_addr, false, local_.port);
    } else if (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(cmsg), sizeof(info));
      local = address_from_ip(&info.ipi6_addr, true, local_.port);
    } else if ((cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS) ||
               (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_TCLASS)) {
      ecn = static_cast<transmit::EcnCodepoint>(cmsg_int(cmsg) & 0b11);
    } else if (cmsg->cmsg_level == SOL_UDP && cmsg->cmsg_type == UDP_GRO) {
      const int stride = cmsg_int(cmsg);
      if (stride > 0) segment_size = static_cast<size_t>(stride);
    }
  }
}

size_t UdpSocket::emit_pending(std::span<ReceivedDatagram> out) {
  Storage& s = *storage_;
  size_t count = 0;
  while (s.next_message < s.received_count && count < out.size()) {
    const Storage::Message& message = s.received[s.next_message];
    if (message.truncated) {
      ++s.next_message;
      continue;
    }
    uint8_t* data = static_cast<uint8_t*>(s.receive_iovecs[s.next_message].iov_base);
    // A plain datagram (segment size 0) is one of its own length, possibly 0.
    do {
      const size_t size =
          transmit::gso_segment_length(message.length, message.segment_size, s.next_offset);
      ReceivedDatagram& datagram = out[count++];
      datagram.path = message.path;
      datagram.ecn = message.ecn;
      datagram.bytes = std::span<uint8_t>(data + s.next_offset, size);
      s.next_offset += size;
      ++stats_.datagrams_received;
      stats_.bytes_received += size;
    } while (s.next_offset < message.length && count < out.size());
    if (s.next_offset >= message.length) {
      ++s.next_message;
      s.next_offset = 0;
    }
  }
  return count;
}

void UdpSocket::build_send_control(const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                                   size_t segment_size) {
  Storage& s = *storage_;
  uint8_t* control = s.send_control.bytes;
  size_t used = 0;
  auto add = [&](int level, int type, const void* data, size_t length) {
    std::memset(control + used, 0, CMSG_SPACE(length));
    cmsghdr header{};
    header.cmsg_len = CMSG_LEN(length);
    header.cmsg_level = level;
    header.cmsg_type = type;
    std::memcpy(control + used, &header, sizeof(header));
    std::memcpy(CMSG_DATA(reinterpret_cast<cmsghdr*>(control + used)), data, length);
    used += CMSG_SPACE(length);
  };
  // Choose the source address only where the kernel could pick another one.
  const bool set_source = wildcard_ && path.local.valid() && !is_wildcard(path.local) &&
                          path.local.family == local_.family;
  const int traffic_class = static_cast<int>(ecn);
  if (ipv6_) {
    if (set_source) {
      in6_pktinfo info{};
      std::memcpy(&info.ipi6_addr, path.local.ip.data(), 16);
      add(IPPROTO_IPV6, IPV6_PKTINFO, &info, sizeof(info));
    }
    add(IPPROTO_IPV6, IPV6_TCLASS, &traffic_class, sizeof(traffic_class));
  } else {
    if (set_source) {
      in_pktinfo info{};
      std::memcpy(&info.ipi_spec_dst, path.local.ip.data(), 4);
      add(IPPROTO_IP, IP_PKTINFO, &info, sizeof(info));
    }
    add(IPPROTO_IP, IP_TOS, &traffic_class, sizeof(traffic_class));
  }
  s.send_control_base = used;
  if (segment_size != 0) {
    const uint16_t segment = static_cast<uint16_t>(segment_size);
    add(SOL_UDP, UDP_SEGMENT, &segment, sizeof(segment));
  }
  s.send_control_gso = used;
}

bool UdpSocket::is_gso_train(const transmit::BurstDescriptor& burst,
                             std::span<uint8_t* const> datagrams, size_t count) const {
  const size_t segment = burst.segment_size;
  if (count < 2 || segment == 0 || kMaxGsoBytes / segment < 2) return false;
  for (size_t i = 0; i + 1 < count; ++i) {
    if (burst.lengths[i] != segment || datagrams[i + 1] != datagrams[i] + segment) return false;
  }
  return burst.lengths[count - 1] != 0 && burst.lengths[count - 1] <= segment;
}

SendOutcome UdpSocket::send(const conn::PathAddresses& path, const transmit::BurstDescriptor& burst,
                            std::span<uint8_t* const> datagrams) {
  const size_t count = std::min({burst.datagram_count, datagrams.size(), kMaxSendDatagrams});
  if (count == 0) return {};
  if (fd_ < 0) return {0, EBADF};
  Storage& s = *storage_;
  if (path.remote.family != local_.family) {
    ++stats_.send_errors;
    return {0, EAFNOSUPPORT};
  }
  to_sockaddr(path.remote, s.destination, s.destination_length);
  ++sends_;
  const bool train = gso_enabled() && is_gso_train(burst, datagrams, count);
  build_send_control(path, burst.ecn, train ? burst.segment_size : 0);
  return train ? send_train(burst, datagrams, count) : send_each(burst, datagrams, 0, count);
}

SendOutcome UdpSocket::send_train(const transmit::BurstDescriptor& burst,
                                  std::span<uint8_t* const> datagrams, size_t count) {
  Storage& s = *storage_;
  const size_t segment = burst.segment_size;
  const size_t per_call = std::min(kMaxGsoSegments, kMaxGsoBytes / segment);
  size_t sent = 0;
  while (sent < count) {
    const size_t segments = std::min(per_call, count - sent);
    const size_t bytes = (segments - 1) * segment + burst.lengths[sent + segments - 1];
    iovec& iov = s.send_iovecs[0];
    iov.iov_base = datagrams[sent];
    iov.iov_len = bytes;
    msghdr header{};
    header.msg_name = &s.destination;
    header.msg_namelen = s.destination_length;
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = s.send_control.bytes;
    // A lone segment needs no UDP_SEGMENT.
    header.msg_controllen = segments > 1 ? s.send_control_gso : s.send_control_base;
    ssize_t result;
    do {
      result = sendmsg(fd_, &header, 0);
    } while (result < 0 && errno == EINTR);
    ++stats_.send_calls;
    if (result < 0) {
      const int error = errno;
      if (segments > 1 && (error == EIO || error == EINVAL)) {
        if (error == EIO) {
          // The device or route cannot segment (no checksum offload, or
          // xfrm): datagram by datagram from now on.
          gso_ = false;
        } else {
          gso_pause_ = gso_pause_ == 0 ? kFirstGsoPause : std::min(gso_pause_ * 2, kMaxGsoPause);
          gso_paused_until_ = sends_ + gso_pause_;
        }
        ++stats_.gso_fallbacks;
        return send_each(burst, datagrams, sent, count);
      }
      if (error == EAGAIN || error == EWOULDBLOCK) {
        ++stats_.send_would_block;
      } else {
        ++stats_.send_errors;
      }
      return {sent, error};
    }
    if (segments > 1) gso_pause_ = 0;  // a train went through: the backoff starts over
    sent += segments;
    stats_.datagrams_sent += segments;
    stats_.bytes_sent += bytes;
  }
  return {sent, 0};
}

SendOutcome UdpSocket::send_each(const transmit::BurstDescriptor& burst,
                                 std::span<uint8_t* const> datagrams, size_t first, size_t count) {
  Storage& s = *storage_;
  for (size_t i = first; i < count; ++i) {
    s.send_iovecs[i].iov_base = datagrams[i];
    s.send_iovecs[i].iov_len = burst.lengths[i];
    msghdr& header = s.send_messages[i].msg_hdr;
    header.msg_name = &s.destination;
    header.msg_namelen = s.destination_length;
    header.msg_iov = &s.send_iovecs[i];
    header.msg_iovlen = 1;
    header.msg_control = s.send_control_base != 0 ? s.send_control.bytes : nullptr;
    header.msg_controllen = s.send_control_base;
    header.msg_flags = 0;
  }
  size_t sent = first;
  while (sent < count) {
    const int result =
        sendmmsg(fd_, &s.send_messages[sent], static_cast<unsigned>(count - sent), 0);
    if (result < 0 && errno == EINTR) continue;
    ++stats_.send_calls;
    if (result <= 0) {
      // sendmmsg reports an error only for the first message of a call;
      // one that hits a later message returns the count so far, and the
      // next call (this loop) sees the error.
      const int error = result < 0 ? errno : EIO;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        ++stats_.send_would_block;
      } else {
        ++stats_.send_errors;
      }
      return {sent, error};
    }
    for (size_t i = sent; i < sent + static_cast<size_t>(result); ++i) {
      stats_.bytes_sent += burst.lengths[i];
    }
    stats_.datagrams_sent += static_cast<size_t>(result);
    sent += static_cast<size_t>(result);
  }
  return {sent, 0};
}

bool UdpSocket::wait_writable(int timeout_ms) {
  if (fd_ < 0) return false;
  pollfd entry{};
  entry.fd = fd_;
  entry.events = POLLOUT;
  int result;
  do {
    result = poll(&entry, 1, timeout_ms);
  } while (result < 0 && errno == EINTR);
  return result > 0 && (entry.revents & POLLOUT) != 0;
}

}  // namespace dpquic::dataplane
