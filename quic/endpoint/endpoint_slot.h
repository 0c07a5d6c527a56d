#pragma once
// One slot of the endpoint's connection pool: the connection, its place in
// the endpoint's queues, and the CID registry its connection IDs go through.
// Private to the endpoint's implementation files.

#include <array>
#include <memory>

#include "quic/endpoint/endpoint.h"

namespace dpquic::endpoint {

struct Endpoint::Slot final : conn::CidRegistry {
  Endpoint* endpoint = nullptr;
  ConnectionHandle handle = 0;
  std::unique_ptr<conn::Connection> connection;
  bool in_transmit_queue = false;
  bool in_event_queue = false;
  bool established = false;
  Instant timer = kNever;
  // Index of this slot's entry in the endpoint's timer heap, or kNoTimer.
  static constexpr uint32_t kNoTimer = UINT32_MAX;
  uint32_t timer_position = kNoTimer;
  // The client-chosen DCIDs routed to this server connection (its first
  // Initial's, and after a Retry the one it then used): unregistered at free.
  std::array<wire::ConnectionId, 2> client_dcids;
  size_t client_dcid_count = 0;
  // The peer address this connection was last indexed under for stateless
  // reset detection (its active path's remote address, encoded); empty if
  // none. Another connection on the same address may hold the entry
  // (owns_address false): the insert is tried again only after an entry was
  // erased (address_erasures against the endpoint's count), not on every
  // call, which for a load generator's connections was every call.
  wire::ConnectionId indexed_address;
  conn::SocketAddress indexed_remote;  // what indexed_address encodes, when not empty
  bool owns_address = false;
  uint64_t address_erasures = 0;

  bool register_cid(const wire::ConnectionId& cid) override {
    return endpoint->cid_table_.insert(cid, handle);
  }
  void unregister_cid(const wire::ConnectionId& cid) override {
    const auto owner = endpoint->cid_table_.find(cid.span());
    if (owner && *owner == handle) endpoint->cid_table_.erase(cid.span());
  }
};

}  // namespace dpquic::endpoint
