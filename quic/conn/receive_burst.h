#pragma once
// Receiving a run of datagrams at once (Connection::handle_datagrams): the
// per-core scratch in which a run of 1-RTT packets waits for its one AEAD
// burst.
//
// Why a burst: opening packets one at a time pays ipsec-mb's job set-up and
// flush, and a one-block AES call for the header protection mask, per
// packet, and the endpoint's bookkeeping (routing, timers, queues) per
// datagram. A GRO batch or an RX burst is mostly consecutive 1-RTT packets
// of one connection in one key phase; their masks are computed in one ECB
// job, they are opened in one AEAD burst, then processed one by one in
// arrival order.
//
// Invariants of a staged run:
// - it holds at most kCapacity packets, all short-header packets of one
//   connection, on paths the connection knew when they were staged;
// - every kOpen packet is in the key phase that was current when staged and
//   comes before the run's first kOther packet (a key-phase change; every
//   packet after it is kOther too), so no key rotates between staging a
//   kOpen packet and accounting for it;
// - nothing but header protection is removed while staging: counters, drops,
//   tracer events and frames happen when a packet is processed, in order, as
//   handle_datagram would do them.
//
// One per core, like the ACK XOR buffer: a connection uses it only during
// its own handle_datagrams call, so connections of one core share it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "crypto/mb_manager.h"
#include "quic/conn/connection_trace.h"
#include "quic/conn/inbound_datagram.h"
#include "quic/wire/errors.h"
#include "quic/wire/header.h"

namespace dpquic::conn {

struct ReceiveBurst {
  static constexpr size_t kCapacity = crypto::kMaxBurst;

  enum class Verdict : uint8_t {
    kUnmask,  // while staging: its header protection comes off with the run's
    kOpen,    // opened in the burst (status says how it went)
    kDrop,    // dropped for `drop_reason` when its turn comes
    kOther,   // unmasked; key chosen and opened alone on its turn
  };
  struct Packet {
    uint32_t datagram = 0;  // index into the datagrams handed to handle_datagrams
    uint32_t path_id = 0;   // the path it came on, when staged
    uint8_t op = 0;         // kOpen: its entry in ops and status
    uint8_t unmask = 0;     // kUnmask: its entry in unmask and pn_lengths
    Verdict verdict = Verdict::kOpen;
    PacketDropReason drop_reason = PacketDropReason::kHeaderParseError;
    wire::WireError pn_error = wire::WireError::kOk;
    wire::ParsedHeader header;
    wire::PacketNumberFields fields;
  };

  std::array<Packet, kCapacity> packets;
  std::array<crypto::HeaderUnprotectOp, kCapacity> unmask;
  std::array<uint8_t, kCapacity> pn_lengths{};
  std::array<crypto::OpenOp, kCapacity> ops;
  std::array<crypto::PacketStatus, kCapacity> status{};
  size_t count = 0;
  size_t unmask_count = 0;
  size_t op_count = 0;
};

}  // namespace dpquic::conn
