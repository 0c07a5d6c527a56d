#pragma once
// Stream IDs (RFC 9000 §2.1): the two low bits say who opened the stream and
// whether it is one-way; the rest is the stream's index among streams of that
// type, so ids of one type go 4 apart.
//
//   bit 0: 0 client-initiated, 1 server-initiated
//   bit 1: 0 bidirectional,    1 unidirectional

#include <cstdint>

#include "quic/wire/role.h"

namespace dpquic::conn {

enum class StreamDirection : uint8_t { kBidirectional, kUnidirectional };

// The largest stream id a varint can carry; indexes stop at 2^60 - 1.
inline constexpr uint64_t kMaxStreamId = (uint64_t{1} << 62) - 1;

constexpr bool is_client_initiated(uint64_t id) { return (id & 0x1) == 0; }
constexpr bool is_server_initiated(uint64_t id) { return (id & 0x1) != 0; }
constexpr bool is_unidirectional(uint64_t id) { return (id & 0x2) != 0; }
constexpr bool is_bidirectional(uint64_t id) { return (id & 0x2) == 0; }

// Three of the four stream types (RFC 9000 Table 1).
constexpr bool is_client_bidirectional(uint64_t id) { return (id & 0x3) == 0x0; }
constexpr bool is_client_unidirectional(uint64_t id) { return (id & 0x3) == 0x2; }
constexpr bool is_server_unidirectional(uint64_t id) { return (id & 0x3) == 0x3; }

constexpr StreamDirection stream_direction(uint64_t id) {
  return is_unidirectional(id) ? StreamDirection::kUnidirectional : StreamDirection::kBidirectional;
}

constexpr wire::Role stream_initiator(uint64_t id) {
  return is_client_initiated(id) ? wire::Role::kClient : wire::Role::kServer;
}

// Whether the endpoint playing `local_role` opened (or would open) stream `id`.
constexpr bool is_local(uint64_t id, wire::Role local_role) {
  return stream_initiator(id) == local_role;
}

constexpr uint64_t stream_index(uint64_t id) { return id >> 2; }

constexpr uint64_t make_stream_id(uint64_t index, wire::Role initiator, StreamDirection direction) {
  return (index << 2) | (initiator == wire::Role::kServer ? 0x1u : 0x0u) |
         (direction == StreamDirection::kUnidirectional ? 0x2u : 0x0u);
}

// A unidirectional stream carries data from its initiator only: the
// initiator may send and not receive, the other end the reverse.
constexpr bool local_can_send(uint64_t id, wire::Role local_role) {
  return is_bidirectional(id) || is_local(id, local_role);
}
constexpr bool local_can_receive(uint64_t id, wire::Role local_role) {
  return is_bidirectional(id) || !is_local(id, local_role);
}

}  // namespace dpquic::conn
