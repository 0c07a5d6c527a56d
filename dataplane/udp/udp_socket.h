#pragma once
// One non-blocking kernel UDP socket for a shard: batched receive (recvmmsg,
// GRO super-datagrams split back into datagrams) and batched send (one
// sendmsg with UDP_SEGMENT per GSO train, or sendmmsg), with the ECN bits and
// the local address of each datagram carried in cmsgs.
//
// All message headers, iovecs, cmsg buffers and the receive buffers are
// allocated once in the constructor: receive() and send() never touch the
// heap and never throw. Only the constructor throws (std::runtime_error with
// one line naming the address), because it runs at start-up.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "quic/conn/inbound_datagram.h"
#include "quic/conn/socket_address.h"
#include "quic/transmit/burst.h"

struct msghdr;  // <sys/socket.h>

namespace dpquic::dataplane {

struct UdpSocketOptions {
  conn::SocketAddress bind;
  // SO_REUSEPORT, so every shard can bind the same address and the kernel
  // spreads flows over them.
  bool reuse_port = true;
  // Receive GRO super-datagrams (UDP_GRO); silently off if unsupported.
  bool gro = true;
  // Send GSO trains with UDP_SEGMENT; paused or ended if the kernel refuses
  // (see UdpSocket::gso_enabled).
  bool gso = true;
  int receive_buffer_bytes = 8 << 20;
  int send_buffer_bytes = 8 << 20;
  // Messages one recvmmsg takes, 1..UdpSocket::kReceiveBatch, each into a
  // buffer of its own (UdpSocket::kReceiveBufferBytes): fewer for a client
  // with a socket per connection, whose sockets each carry one flow.
  size_t receive_batch = 32;
};

// local: the address the datagram was sent to (from PKTINFO, with the bound
// port); remote: its sender. `bytes` points into the socket's receive
// buffers and is valid until the next receive().
using ReceivedDatagram = conn::InboundDatagram;

struct SendOutcome {
  // Datagrams of the burst handed to the kernel, from the first, in order.
  size_t datagrams_sent = 0;
  // 0 when all were sent; EAGAIN/EWOULDBLOCK: the socket buffer is full,
  // retry the rest later (wait_writable); anything else: an errno for the
  // first datagram not sent.
  int error = 0;
};

struct UdpSocketStats {
  uint64_t datagrams_received = 0;  // after GRO splitting
  uint64_t bytes_received = 0;
  uint64_t gro_batches = 0;  // messages that arrived as GRO super-datagrams
  uint64_t datagrams_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t send_calls = 0;         // sendmsg + sendmmsg system calls
  uint64_t gso_fallbacks = 0;      // trains the kernel refused GSO for (sent one by one)
  uint64_t send_errors = 0;        // failed sends other than EAGAIN
  uint64_t receive_truncated = 0;  // messages dropped for MSG_TRUNC
  uint64_t send_would_block = 0;   // sends stopped by EAGAIN
  uint64_t receive_calls = 0;      // recvmmsg system calls
  uint64_t receive_errors = 0;     // recvmmsg failures other than EAGAIN
};

class UdpSocket {
 public:
  // Messages one recvmmsg takes at most (UdpSocketOptions::receive_batch),
  // each into its own buffer of kReceiveBufferBytes (large enough for any
  // UDP payload or GRO batch).
  static constexpr size_t kReceiveBatch = 32;
  static constexpr size_t kReceiveBufferBytes = 64 * 1024;
  // Limits of one UDP_SEGMENT sendmsg.
  static constexpr size_t kMaxGsoSegments = 64;
  static constexpr size_t kMaxGsoBytes = 65000;

  explicit UdpSocket(const UdpSocketOptions& options);
  ~UdpSocket();
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  int fd() const { return fd_; }
  // The bound address as the kernel reports it (the real port when the
  // requested one was 0).
  const conn::SocketAddress& local() const { return local_; }
  bool gro_enabled() const { return gro_; }
  // Whether the next train goes out with GSO: configured on, not ended by
  // EIO, and not paused after an EINVAL (see gso_pause_).
  bool gso_enabled() const { return gso_ && sends_ >= gso_paused_until_; }
  void set_gso(bool enabled) {
    gso_ = enabled;
    gso_paused_until_ = 0;
    gso_pause_ = 0;
  }
  // Backoff after an EINVAL to a GSO train, in sends: the first pause, and
  // the longest the doubling reaches.
  static constexpr uint64_t kFirstGsoPause = 64;
  static constexpr uint64_t kMaxGsoPause = 65536;
  // Buffer sizes the kernel granted (it reports twice the usable size).
  int receive_buffer_bytes() const { return receive_buffer_bytes_; }
  int send_buffer_bytes() const { return send_buffer_bytes_; }

  // Fills `out` with received datagrams and returns how many (0 when nothing
  // is pending). One call makes at most one recvmmsg of
  // min(receive_batch, out.size()) messages. A GRO message can split into
  // more datagrams than `out` has room for: the rest are kept in the socket's
  // buffers and returned, first, by the next call (which then makes no
  // system call), so nothing is lost whatever out.size() is. Such kept
  // datagrams do not make fd() readable: a caller that fills `out` completely
  // must call again (or check has_pending()) before waiting on fd().
  // Truncated messages (MSG_TRUNC) are dropped and counted.
  size_t receive(std::span<ReceivedDatagram> out);
  // True while datagrams of the last recvmmsg are waiting to be returned.
  bool has_pending() const;

  // Sends datagram i = datagrams[i][0, burst.lengths[i]) for i below
  // burst.datagram_count, from path.local to path.remote with burst.ecn.
  // When the socket is bound to a wildcard address, path.local's IP is
  // set as the source (PKTINFO) so replies leave from the address the peer
  // used. A GSO train (slices back to back at burst.segment_size, all full
  // but the last) goes out in sendmsg calls of at most kMaxGsoSegments
  // segments and kMaxGsoBytes bytes; anything else in one sendmmsg.
  SendOutcome send(const conn::PathAddresses& path, const transmit::BurstDescriptor& burst,
                   std::span<uint8_t* const> datagrams);

  // Polls for POLLOUT; true when the socket can take more.
  bool wait_writable(int timeout_ms);

  const UdpSocketStats& stats() const { return stats_; }

 private:
  struct Storage;

  void build_send_control(const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                          size_t segment_size);
  bool is_gso_train(const transmit::BurstDescriptor& burst, std::span<uint8_t* const> datagrams,
                    size_t count) const;
  SendOutcome send_train(const transmit::BurstDescriptor& burst,
                         std::span<uint8_t* const> datagrams, size_t count);
  // Sends datagrams [first, count) with sendmmsg; datagrams_sent in the
  // outcome counts from the start of the burst.
  SendOutcome send_each(const transmit::BurstDescriptor& burst, std::span<uint8_t* const> datagrams,
                        size_t first, size_t count);
  size_t emit_pending(std::span<ReceivedDatagram> out);
  // The socket options: the required ones throw std::runtime_error naming
  // the address; GRO, GSO and large buffers are taken where the kernel
  // gives them.
  void set_options(const UdpSocketOptions& options);
  // A received message's ancillary data: the local address it came to, its
  // ECN codepoint and its GRO segment size (0: a plain datagram).
  void read_control(const msghdr& header, conn::SocketAddress& local, transmit::EcnCodepoint& ecn,
                    size_t& segment_size) const;
  void close_fd();

  int fd_ = -1;
  conn::SocketAddress local_;
  bool wildcard_ = false;
  bool ipv6_ = false;
  bool gro_ = false;
  bool gso_ = false;
  // EINVAL to a train says the socket (SO_NO_CHECK) or, on older kernels,
  // the route (a segment above its MTU, for one peer; newer kernels say
  // EMSGSIZE) refuses it, not that the device cannot segment (EIO, which
  // ends GSO for good): GSO pauses for gso_pause_ sends, doubling with each
  // refusal until a train goes through, so one peer's route does not cost
  // every peer GSO for the socket's life, and a socket that always refuses
  // costs one failed call now and then.
  uint64_t sends_ = 0;
  uint64_t gso_paused_until_ = 0;
  uint64_t gso_pause_ = 0;
  int receive_buffer_bytes_ = 0;
  int send_buffer_bytes_ = 0;
  std::unique_ptr<Storage> storage_;
  UdpSocketStats stats_;
};

}  // namespace dpquic::dataplane
