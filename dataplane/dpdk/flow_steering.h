#pragma once
// NIC steering by connection ID: where the port can match bytes of the UDP
// payload with rte_flow, one rule per queue sends short-header packets whose
// DCID core byte (QUIC-LB plaintext layout, quic/conn/cid_generator.h)
// names shard i to queue i. Ports that cannot (most virtual ones) keep RSS
// plus the shards' software steering rings: the documented default.

#include <cstdint>
#include <string>

#include "quic/conn/cid_generator.h"

namespace dpquic::dataplane::dpdk {

struct FlowSteeringResult {
  bool installed = false;
  size_t rules = 0;
  // Why not, for the start-up banner (the PMD's rte_flow_error message).
  std::string reason;
};

// Validates then creates the rules for queues [0, queues) matching UDP to
// `udp_port`. Creates nothing unless every rule validates.
FlowSteeringResult install_cid_steering(uint16_t port_id, uint16_t queues, uint16_t udp_port,
                                        const conn::CidLayout& layout);

// Removes every rte_flow rule of the port (rte_flow_flush).
void remove_cid_steering(uint16_t port_id);

}  // namespace dpquic::dataplane::dpdk
