#pragma once
// Two simulated endpoints ("client" and "server") joined by one Link per
// direction, run in virtual time (event_loop.h): the in-memory network of
// the two-endpoint test harness.
//
// Routing is by destination address. Each node owns the addresses it was
// given plus every source address it has sent from (migration), and a
// datagram to an address the other node owns is delivered to it. An optional
// NAT in front of the client rewrites the client's primary address: from a
// rebinding's `at` on, the client's datagrams leave with a new external
// address (port + 1 and/or a new IP), replies to the new external address
// reach the client at its own address, and replies to any earlier external
// address are dropped, like a real NAT whose old mapping expired.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "quic/transmit/burst.h"
#include "tools/testbed/event_loop.h"
#include "tools/testbed/link.h"

namespace dpquic::harness {

using dpquic::Duration;
using dpquic::Instant;

struct NatRebinding {
  Instant at = kNever;
  bool change_port = true;
  bool change_address = false;
};

// One datagram entering the network, as the observer sees it: the bytes are
// the sender's and valid only during the observer call.
struct Datagram {
  PathAddresses path;  // as sent: local = source, remote = destination
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  std::span<const uint8_t> bytes;
};

class Simulator : public EventLoop {
 public:
  using LinkStats = harness::LinkStats;

  Simulator(Node& client, SocketAddress client_address, Node& server, SocketAddress server_address,
            LinkConfig client_to_server, LinkConfig server_to_client);

  // Another address routed to the server (e.g. its preferred address).
  void add_server_address(SocketAddress extra);
  // Schedules a NAT rebinding of the client's primary address. May be called
  // again (after the previous one took effect) to rebind once more.
  void set_nat_rebinding(NatRebinding rebinding);
  // The address the server currently sees for the client's primary address.
  SocketAddress client_external_address() const { return nat_external_; }

  const LinkStats& client_to_server_stats() const { return client_to_server_.stats(); }
  const LinkStats& server_to_client_stats() const { return server_to_client_.stats(); }

  // Replaces one direction's configuration from now on (e.g. loss only
  // during the handshake); datagrams in flight keep their schedule.
  void reconfigure_link(bool client_to_server, const LinkConfig& config);

  // Sees every datagram entering a link, before impairments; client-to-server
  // datagrams are seen after the NAT (as on the wire at the server's side).
  void set_observer(
      std::function<void(bool client_to_server, Instant now, const Datagram&)> observer);

 private:
  // Per node: where its datagrams go and which addresses it owns.
  struct Side {
    Member member;
    Link* outgoing;
    std::vector<SocketAddress> addresses;
  };
  class SideSink : public Node::Sink {
   public:
    SideSink(Simulator& simulator, bool client) : simulator_(simulator), client_(client) {}
    void send(const PathAddresses& path, transmit::EcnCodepoint ecn,
              std::span<const uint8_t> bytes) override;

   private:
    Simulator& simulator_;
    bool client_;
  };

  void send_from(bool client, const PathAddresses& path, transmit::EcnCodepoint ecn,
                 std::span<const uint8_t> bytes);
  // Delivers the earliest due datagram of either link; false if none is due.
  bool deliver_one() override;
  Instant next_delivery() const override;
  void apply_rebinding(Instant now);
  static bool owns(const Side& side, const SocketAddress& address);
  static void learn(Side& side, const SocketAddress& address);
  SocketAddress rebound(const SocketAddress& external);

  Link client_to_server_;
  Link server_to_client_;
  Side client_;
  Side server_;
  SideSink client_sink_;
  SideSink server_sink_;

  SocketAddress client_primary_;
  SocketAddress nat_external_;
  std::vector<SocketAddress> retired_externals_;
  NatRebinding pending_rebinding_;
  uint32_t rebinding_count_ = 0;

  std::function<void(bool, Instant, const Datagram&)> observer_;
};

}  // namespace dpquic::harness
