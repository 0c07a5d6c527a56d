#include "tools/quicload/udp_load_shard.h"

#include <stdexcept>
#include <utility>

namespace dpquic::tools {

namespace {

// Messages per recvmmsg on a connection's own socket (64 KiB buffers each):
// one flow needs fewer than a shared socket, and a busy connection's socket
// would otherwise hold 2 MiB of them.
constexpr size_t kConnectionReceiveBatch = 4;

}  // namespace

dataplane::ShardConfig UdpLoadShard::without_sockets(dataplane::ShardConfig config,
                                                     bool shared_port) {
  if (!shared_port) config.listen.clear();  // a socket per connection, opened as it starts
  return config;
}

UdpLoadShard::UdpLoadShard(dataplane::ShardConfig config, bool shared_port, crypto::TlsContext& tls)
    : local_(config.listen.at(0)),
      shared_port_(shared_port),
      shard_(without_sockets(std::move(config), shared_port), tls) {}

std::optional<conn::SocketAddress> UdpLoadShard::open_local() {
  if (shared_port_) return shard_.sockets().front()->local();
  try {
    return shard_.add_socket(local_, kConnectionReceiveBatch).local();
  } catch (const std::runtime_error&) {
    return std::nullopt;  // out of descriptors (or ports) for now
  }
}

void UdpLoadShard::close_local(const conn::SocketAddress& local) {
  if (!shared_port_) shard_.remove_socket(local);
}

void UdpLoadShard::turn(Instant now, Instant limit) {
  if (!shard_.poll_once(now)) shard_.wait(limit);
}

}  // namespace dpquic::tools
