#pragma once
// QUIC transport parameters (RFC 9000 §18), plus version_information
// (RFC 9368 §3), max_datagram_frame_size (RFC 9221 §3) and min_ack_delay
// (draft-ietf-quic-ack-frequency).
//
// Decoding is strict and allocation-free: connection IDs go into ConnectionId,
// Available Versions into an inline array. Every violation is
// WireError::kTransportParameterError. Unknown parameters (including greased
// ids 31*N+27) are skipped; duplicates of known ones are rejected (duplicates
// of unknown ids cannot be detected without storage and pass).
//
// Encoding writes exactly the parameters marked present, after checking them
// against the same rules, so an endpoint cannot send what its peer must reject.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "quic/wire/connection_id.h"
#include "quic/wire/errors.h"
#include "quic/wire/role.h"
#include "quic/wire/varint.h"

namespace dpquic::wire {

// Every parameter this codec understands. The first 18 have the wire ids
// 0x00..0x11 of the same order; see transport_parameter_id().
enum class TransportParameter : uint8_t {
  kOriginalDestinationConnectionId,  // 0x00, server only
  kMaxIdleTimeout,                   // 0x01
  kStatelessResetToken,              // 0x02, server only
  kMaxUdpPayloadSize,                // 0x03
  kInitialMaxData,                   // 0x04
  kInitialMaxStreamDataBidiLocal,    // 0x05
  kInitialMaxStreamDataBidiRemote,   // 0x06
  kInitialMaxStreamDataUni,          // 0x07
  kInitialMaxStreamsBidi,            // 0x08
  kInitialMaxStreamsUni,             // 0x09
  kAckDelayExponent,                 // 0x0a
  kMaxAckDelay,                      // 0x0b
  kDisableActiveMigration,           // 0x0c
  kPreferredAddress,                 // 0x0d, server only
  kActiveConnectionIdLimit,          // 0x0e
  kInitialSourceConnectionId,        // 0x0f
  kRetrySourceConnectionId,          // 0x10, server only
  kVersionInformation,               // 0x11 (RFC 9368)
  kMaxDatagramFrameSize,             // 0x20 (RFC 9221)
  kMinAckDelay,                      // 0xff04de1b (ack frequency)
};
inline constexpr size_t kTransportParameterCount = 20;

// The wire identifier of `parameter`.
uint64_t transport_parameter_id(TransportParameter parameter);

// RFC 9000 §18.2 limits and defaults.
inline constexpr uint64_t kDefaultMaxUdpPayloadSize = 65527;
inline constexpr uint64_t kMinMaxUdpPayloadSize = 1200;
inline constexpr uint64_t kDefaultAckDelayExponent = 3;
inline constexpr uint64_t kMaxAckDelayExponent = 20;
inline constexpr uint64_t kDefaultMaxAckDelayMs = 25;
inline constexpr uint64_t kMaxAckDelayLimitMs = uint64_t{1} << 14;  // exclusive
inline constexpr uint64_t kDefaultActiveConnectionIdLimit = 2;
inline constexpr uint64_t kMaxStreamsLimit = uint64_t{1} << 60;     // inclusive
inline constexpr uint64_t kMinAckDelayLimitUs = uint64_t{1} << 24;  // exclusive
// Available Versions kept from version_information; see VersionInformation.
inline constexpr size_t kMaxAvailableVersions = 16;

using StatelessResetToken = std::array<uint8_t, 16>;

struct PreferredAddress {
  std::array<uint8_t, 4> ipv4_address{};
  uint16_t ipv4_port = 0;
  std::array<uint8_t, 16> ipv6_address{};
  uint16_t ipv6_port = 0;
  ConnectionId connection_id;  // 1..20 bytes on the wire
  StatelessResetToken stateless_reset_token{};

  bool operator==(const PreferredAddress&) const = default;
};

// RFC 9368 §3. Decoding keeps the first kMaxAvailableVersions entries of a
// longer list (all entries are still validated); no version this engine
// supports would sit behind 16 others.
struct VersionInformation {
  uint32_t chosen_version = 0;  // non-zero on the wire
  std::array<uint32_t, kMaxAvailableVersions> available_versions{};
  uint8_t available_version_count = 0;

  std::span<const uint32_t> available() const {
    return {available_versions.data(), available_version_count};
  }
  bool operator==(const VersionInformation&) const = default;
};

// Values of absent parameters are their RFC defaults (0 where none is given).
struct TransportParameters {
  ConnectionId original_destination_connection_id;
  uint64_t max_idle_timeout_ms = 0;
  StatelessResetToken stateless_reset_token{};
  uint64_t max_udp_payload_size = kDefaultMaxUdpPayloadSize;
  uint64_t initial_max_data = 0;
  uint64_t initial_max_stream_data_bidi_local = 0;
  uint64_t initial_max_stream_data_bidi_remote = 0;
  uint64_t initial_max_stream_data_uni = 0;
  uint64_t initial_max_streams_bidi = 0;
  uint64_t initial_max_streams_uni = 0;
  uint64_t ack_delay_exponent = kDefaultAckDelayExponent;
  uint64_t max_ack_delay_ms = kDefaultMaxAckDelayMs;
  // disable_active_migration is presence only: has(kDisableActiveMigration).
  PreferredAddress preferred_address;
  uint64_t active_connection_id_limit = kDefaultActiveConnectionIdLimit;
  ConnectionId initial_source_connection_id;
  ConnectionId retry_source_connection_id;
  VersionInformation version_information;
  uint64_t max_datagram_frame_size = 0;  // meaningful only when present
  uint64_t min_ack_delay_us = 0;         // meaningful only when present

  // Bit i set: TransportParameter(i) was received / is to be sent.
  uint32_t present = 0;

  bool has(TransportParameter parameter) const {
    return (present >> static_cast<unsigned>(parameter)) & 1u;
  }
  void mark_present(TransportParameter parameter) {
    present |= uint32_t{1} << static_cast<unsigned>(parameter);
  }
  bool operator==(const TransportParameters&) const = default;
};

// Decodes the extension_data of quic_transport_parameters sent by `sender`.
// On error `out` is reset to defaults. The connection still has to check the
// presence and values of the connection ID parameters (RFC 9000 §7.3).
WireError decode_transport_parameters(std::span<const uint8_t> bytes, Role sender,
                                      TransportParameters& out);

// The value rules decode applies, on a struct: ranges, role, min_ack_delay
// against max_ack_delay, non-empty preferred_address CID, non-zero versions.
// Only present parameters are checked. kOk or kTransportParameterError.
WireError validate_transport_parameters(const TransportParameters& parameters, Role sender);

// Appends the present parameters, in TransportParameter order with minimal
// varints. Returns false (nothing written) if validation fails or the writer
// is too short.
bool encode_transport_parameters(const TransportParameters& parameters, Role sender,
                                 ByteWriter& writer);

// Appends one reserved parameter (id 31*N+27, RFC 9000 §18.1) with up to 8
// value bytes, all chosen from `entropy` (the caller's random value).
bool write_greased_transport_parameter(ByteWriter& writer, uint64_t entropy);

}  // namespace dpquic::wire
