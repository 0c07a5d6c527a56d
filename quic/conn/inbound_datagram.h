#pragma once
// One received datagram as a backend hands it to the endpoint: the UDP
// socket's receive batch and the DPDK RX burst fill these, and
// Endpoint::handle_datagrams takes a span of them.

#include <cstdint>
#include <span>

#include "quic/conn/socket_address.h"
#include "quic/transmit/burst.h"

namespace dpquic::conn {

struct InboundDatagram {
  // local: the address the datagram was sent to; remote: its sender.
  PathAddresses path;
  transmit::EcnCodepoint ecn = transmit::EcnCodepoint::kNotEct;
  // Writable: packet protection is removed in place. Valid only during the
  // call that takes it.
  std::span<uint8_t> bytes;
};

}  // namespace dpquic::conn
