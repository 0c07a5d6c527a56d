#pragma once
// quicload's client shard on kernel UDP: a dataplane::Shard whose sockets
// are its connections' source ports. By default each connection has a
// socket of its own, bound to an ephemeral port when the connection starts
// and closed once it is gone, so that a layer-4 balancer and conntrack see
// as many flows as connections; the shard reads only the sockets epoll
// reports readable. With --shared-port every connection sends from the
// shard's one socket.

#include <optional>

#include "crypto/tls_context.h"
#include "dataplane/shard/shard.h"
#include "quic/conn/socket_address.h"
#include "tools/quicload/load_worker.h"

namespace dpquic::tools {

class UdpLoadShard final : public LoadShard {
 public:
  // `config.listen` holds one address, port 0: the one the kernel routes the
  // server from. `tls` must outlive the shard.
  UdpLoadShard(dataplane::ShardConfig config, bool shared_port, crypto::TlsContext& tls);

  endpoint::Endpoint& endpoint() override { return shard_.endpoint(); }
  void set_application(dataplane::Application* application) override {
    shard_.set_application(application);
  }
  std::optional<conn::SocketAddress> open_local() override;
  void close_local(const conn::SocketAddress& local) override;
  void turn(Instant now, Instant limit) override;

  size_t open_sockets() const { return shard_.sockets().size(); }

 private:
  static dataplane::ShardConfig without_sockets(dataplane::ShardConfig config, bool shared_port);

  conn::SocketAddress local_;  // the address sockets bind, port 0
  bool shared_port_;
  dataplane::Shard shard_;
};

}  // namespace dpquic::tools
