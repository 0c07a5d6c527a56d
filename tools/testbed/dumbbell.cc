#include "tools/testbed/dumbbell.h"

#include <algorithm>
#include <stdexcept>

namespace dpquic::harness {

class Dumbbell::AttachedSink final : public Node::Sink {
 public:
  AttachedSink(Dumbbell& network, Attached& attached) : network_(network), attached_(attached) {}
  void send(const PathAddresses& path, transmit::EcnCodepoint ecn,
            std::span<const uint8_t> bytes) override {
    network_.send_from(attached_, path, ecn, bytes);
  }

 private:
  Dumbbell& network_;
  Attached& attached_;
};

struct Dumbbell::Attached {
  Attached(Dumbbell& network, Node& node, SocketAddress at, bool client)
      : address(at), client_side(client), sink(network, *this) {
    member.node = &node;
    member.sink = &sink;
    member.name = (client ? "client " : "server ") + std::to_string(network.nodes_.size());
  }
  Member member;
  SocketAddress address;
  bool client_side;
  AttachedSink sink;
  uint64_t bytes_received = 0;
};

Dumbbell::Dumbbell(const LinkConfig& client_to_server, const LinkConfig& server_to_client)
    : client_to_server_(client_to_server), server_to_client_(server_to_client) {}

Dumbbell::~Dumbbell() = default;

void Dumbbell::attach(Node& node, SocketAddress address, bool client_side) {
  if (find(address) != nullptr) throw std::invalid_argument("dumbbell: address taken");
  nodes_.push_back(std::make_unique<Attached>(*this, node, address, client_side));
  add_member(nodes_.back()->member);
}

void Dumbbell::reconfigure_link(bool client_to_server, const LinkConfig& config) {
  (client_to_server ? client_to_server_ : server_to_client_).reconfigure(config);
}

uint64_t Dumbbell::bytes_delivered_to(const SocketAddress& address) const {
  const Attached* attached = find(address);
  return attached != nullptr ? attached->bytes_received : 0;
}

Dumbbell::Attached* Dumbbell::find(const SocketAddress& address) const {
  for (const auto& attached : nodes_) {
    if (attached->address == address) return attached.get();
  }
  return nullptr;
}

void Dumbbell::send_from(Attached& from, const PathAddresses& path, transmit::EcnCodepoint ecn,
                         std::span<const uint8_t> bytes) {
  from.member.active = true;
  (from.client_side ? client_to_server_ : server_to_client_).send(now_, path, ecn, bytes);
}

Instant Dumbbell::next_delivery() const {
  return std::min(client_to_server_.next_delivery(), server_to_client_.next_delivery());
}

bool Dumbbell::deliver_one() {
  const bool to_server = client_to_server_.next_delivery() <= server_to_client_.next_delivery();
  Link& link = to_server ? client_to_server_ : server_to_client_;
  Delivery delivery;
  if (!link.take_due(now_, delivery)) return false;
  // Delivered only to the far side: a client's datagram to another client
  // is unroutable.
  Attached* receiver = find(delivery.path.remote);
  if (receiver == nullptr || receiver->client_side == to_server) {
    link.mark_taken_unroutable();
    return true;
  }
  receiver->member.active = true;
  receiver->bytes_received += delivery.bytes.size();
  // The receiver sees the path from its side: local = destination.
  const PathAddresses received{delivery.path.remote, delivery.path.local};
  receiver->member.node->handle_datagram(now_, received, delivery.ecn, delivery.bytes);
  return true;
}

}  // namespace dpquic::harness
