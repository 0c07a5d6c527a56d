#pragma once
// Helpers for the loopback socket tests: bursts with a known byte pattern and
// a bounded wait for the datagrams to arrive.

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/udp/udp_socket.h"
#include "quic/conn/socket_address.h"
#include "quic/transmit/burst.h"

namespace dpquic::dataplane::testing {

inline conn::SocketAddress loopback_v4(uint8_t last = 1) {
  return conn::SocketAddress::ipv4(127, 0, 0, last, 0);
}

inline conn::SocketAddress loopback_v6() {
  std::array<uint8_t, 16> ip{};
  ip[15] = 1;
  return conn::SocketAddress::ipv6(ip, 0);
}

inline UdpSocketOptions options_for(const conn::SocketAddress& bind, bool gro = true,
                                    bool gso = true) {
  UdpSocketOptions options;
  options.bind = bind;
  options.gro = gro;
  options.gso = gso;
  return options;
}

// Byte j of datagram i of a burst tagged `seed`.
inline uint8_t pattern_byte(uint32_t seed, size_t datagram, size_t offset) {
  return static_cast<uint8_t>(seed * 131 + datagram * 31 + offset * 7 + (offset >> 8));
}

// One buffer holding a burst: a GSO train (slices back to back at the
// segment size) or separate allocations when `contiguous` is false.
class TestBurst {
 public:
  TestBurst(std::span<const uint16_t> lengths, size_t segment_size, uint32_t seed,
            bool contiguous = true)
      : storage_(contiguous ? 1 : lengths.size()) {
    descriptor_.datagram_count = lengths.size();
    descriptor_.segment_size = segment_size;
    if (contiguous) storage_[0].resize(lengths.size() * segment_size);
    for (size_t i = 0; i < lengths.size(); ++i) {
      descriptor_.lengths[i] = lengths[i];
      uint8_t* slice;
      if (contiguous) {
        slice = storage_[0].data() + i * segment_size;
      } else {
        storage_[i].resize(segment_size);
        slice = storage_[i].data();
      }
      for (size_t j = 0; j < lengths[i]; ++j) slice[j] = pattern_byte(seed, i, j);
      pointers_.push_back(slice);
    }
  }

  transmit::BurstDescriptor& descriptor() { return descriptor_; }
  std::span<uint8_t* const> datagrams() const { return pointers_; }
  std::vector<uint8_t> expected(size_t i) const {
    return std::vector<uint8_t>(pointers_[i], pointers_[i] + descriptor_.lengths[i]);
  }

 private:
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<uint8_t*> pointers_;
  transmit::BurstDescriptor descriptor_;
};

// A received datagram copied out of the socket's buffers.
struct Copied {
  conn::PathAddresses path;
  transmit::EcnCodepoint ecn;
  std::vector<uint8_t> bytes;
};

// Receives until `count` datagrams arrived or 2 s passed, `batch` at a time.
inline std::vector<Copied> receive_count(UdpSocket& socket, size_t count, size_t batch = 64) {
  std::vector<Copied> copies;
  std::vector<ReceivedDatagram> out(batch);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (copies.size() < count && std::chrono::steady_clock::now() < deadline) {
    const size_t n = socket.receive(out);
    for (size_t i = 0; i < n; ++i) {
      copies.push_back({out[i].path, out[i].ecn,
                        std::vector<uint8_t>(out[i].bytes.begin(), out[i].bytes.end())});
    }
    if (n == 0) {
      pollfd entry{socket.fd(), POLLIN, 0};
      poll(&entry, 1, 50);
    }
  }
  return copies;
}

}  // namespace dpquic::dataplane::testing
