#include "tools/testbed/simulator.h"

#include <algorithm>
#include <utility>

namespace dpquic::harness {

Simulator::Simulator(Node& client, SocketAddress client_address, Node& server,
                     SocketAddress server_address, LinkConfig client_to_server,
                     LinkConfig server_to_client)
    : client_to_server_(client_to_server),
      server_to_client_(server_to_client),
      client_{{&client, &client_sink_, "client"}, &client_to_server_, {client_address}},
      server_{{&server, &server_sink_, "server"}, &server_to_client_, {server_address}},
      client_sink_(*this, true),
      server_sink_(*this, false),
      client_primary_(client_address),
      nat_external_(client_address) {
  add_member(client_.member);
  add_member(server_.member);
}

Instant Simulator::next_delivery() const {
  return std::min(client_to_server_.next_delivery(), server_to_client_.next_delivery());
}

void Simulator::add_server_address(SocketAddress extra) { learn(server_, extra); }

void Simulator::set_nat_rebinding(NatRebinding rebinding) { pending_rebinding_ = rebinding; }

void Simulator::reconfigure_link(bool client_to_server, const LinkConfig& config) {
  (client_to_server ? client_to_server_ : server_to_client_).reconfigure(config);
}

void Simulator::set_observer(
    std::function<void(bool client_to_server, Instant now, const Datagram&)> observer) {
  observer_ = std::move(observer);
}

bool Simulator::owns(const Side& side, const SocketAddress& address) {
  return std::find(side.addresses.begin(), side.addresses.end(), address) != side.addresses.end();
}

void Simulator::learn(Side& side, const SocketAddress& address) {
  // A node uses a handful of addresses, so a linear scan is the cheap option;
  // the vector grows only when a new address appears.
  if (!owns(side, address)) side.addresses.push_back(address);
}

SocketAddress Simulator::rebound(const SocketAddress& external) {
  ++rebinding_count_;
  SocketAddress next = external;
  if (pending_rebinding_.change_port) {
    next.port = static_cast<uint16_t>(next.port + 1);
    if (next.port == 0) next.port = 1;
  }
  if (pending_rebinding_.change_address) {
    next.ip = {};
    if (next.family == conn::AddressFamily::kIpv6) {
      next.ip[0] = 0xfd;
      next.ip[14] = static_cast<uint8_t>(rebinding_count_ >> 8);
      next.ip[15] = static_cast<uint8_t>(rebinding_count_);
    } else {
      next.ip[0] = 10;
      next.ip[1] = 123;
      next.ip[2] = static_cast<uint8_t>(rebinding_count_ >> 8);
      next.ip[3] = static_cast<uint8_t>(rebinding_count_);
    }
  }
  return next;
}

void Simulator::apply_rebinding(Instant now) {
  if (pending_rebinding_.at > now) return;
  const SocketAddress next = rebound(nat_external_);
  if (next != nat_external_) {
    retired_externals_.push_back(nat_external_);
    nat_external_ = next;
  }
  pending_rebinding_ = NatRebinding{};
}

void Simulator::SideSink::send(const PathAddresses& path, transmit::EcnCodepoint ecn,
                               std::span<const uint8_t> bytes) {
  simulator_.send_from(client_, path, ecn, bytes);
}

void Simulator::send_from(bool client, const PathAddresses& path, transmit::EcnCodepoint ecn,
                          std::span<const uint8_t> bytes) {
  Side& side = client ? client_ : server_;
  side.member.active = true;
  learn(side, path.local);
  PathAddresses wire = path;
  if (client) {
    apply_rebinding(now_);
    if (wire.local == client_primary_) wire.local = nat_external_;
  }
  if (observer_) observer_(client, now_, Datagram{wire, ecn, bytes});
  side.outgoing->send(now_, wire, ecn, bytes);
}

bool Simulator::deliver_one() {
  const bool to_server = client_to_server_.next_delivery() <= server_to_client_.next_delivery();
  Link& link = to_server ? client_to_server_ : server_to_client_;
  Delivery delivery;
  if (!link.take_due(now_, delivery)) return false;

  // The receiver sees the path from its side: local = destination.
  PathAddresses received{delivery.path.remote, delivery.path.local};
  Side& side = to_server ? server_ : client_;
  bool routable;
  if (to_server) {
    routable = owns(server_, received.local);
  } else {
    apply_rebinding(now_);
    if (received.local == nat_external_) {
      received.local = client_primary_;
      routable = true;
    } else {
      routable = std::find(retired_externals_.begin(), retired_externals_.end(), received.local) ==
                     retired_externals_.end() &&
                 owns(client_, received.local);
    }
  }
  if (!routable) {
    link.mark_taken_unroutable();
    return true;
  }
  side.member.active = true;
  side.member.node->handle_datagram(now_, received, delivery.ecn, delivery.bytes);
  return true;
}

}  // namespace dpquic::harness
