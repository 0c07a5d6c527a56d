#pragma once
// Several client/server pairs whose traffic crosses one bottleneck: every
// client sends on one shared Link toward the servers, every server on one
// shared Link toward the clients, so flows compete for the same queue and
// rate, as on a dumbbell topology. The harness for fairness and coexistence
// between congestion controllers.
//
// Each node owns one address; a datagram is delivered to the node on the far
// side that owns its destination address and is dropped as unroutable
// otherwise. No NAT and no migration: the two-node Simulator has those.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tools/testbed/event_loop.h"
#include "tools/testbed/link.h"

namespace dpquic::harness {

class Dumbbell : public EventLoop {
 public:
  Dumbbell(const LinkConfig& client_to_server, const LinkConfig& server_to_client);
  ~Dumbbell() override;

  // Attaches a node at `address`, on the client side (it sends on the
  // client-to-server link) or the server side. Nodes are served in the
  // order they are attached; a node must outlive the Dumbbell.
  void attach(Node& node, SocketAddress address, bool client_side);

  // Replaces one direction's configuration from now on; datagrams in flight
  // keep their schedule.
  void reconfigure_link(bool client_to_server, const LinkConfig& config);
  const LinkStats& client_to_server_stats() const { return client_to_server_.stats(); }
  const LinkStats& server_to_client_stats() const { return server_to_client_.stats(); }
  // Bytes (whole datagrams) delivered to the node at `address`.
  uint64_t bytes_delivered_to(const SocketAddress& address) const;

 private:
  struct Attached;
  class AttachedSink;

  bool deliver_one() override;
  Instant next_delivery() const override;
  void send_from(Attached& from, const PathAddresses& path, transmit::EcnCodepoint ecn,
                 std::span<const uint8_t> bytes);
  // The node at `address`, or null.
  Attached* find(const SocketAddress& address) const;

  Link client_to_server_;
  Link server_to_client_;
  std::vector<std::unique_ptr<Attached>> nodes_;
};

}  // namespace dpquic::harness
