#include "quic/wire/transport_params.h"

#include <cstring>
#include <optional>

namespace dpquic::wire {

namespace {

using P = TransportParameter;

constexpr uint64_t kVersionInformationId = 0x11;
constexpr uint64_t kMaxDatagramFrameSizeId = 0x20;
constexpr uint64_t kMinAckDelayId = 0xff04de1b;
// IPv4 address and port, IPv6 address and port, CID length, reset token.
constexpr size_t kPreferredAddressFixedSize = 4 + 2 + 16 + 2 + 1 + 16;

std::optional<P> parameter_from_id(uint64_t id) {
  if (id <= kVersionInformationId) return static_cast<P>(id);
  if (id == kMaxDatagramFrameSizeId) return P::kMaxDatagramFrameSize;
  if (id == kMinAckDelayId) return P::kMinAckDelay;
  return std::nullopt;
}

// The varint-valued parameters and where they live.
uint64_t* integer_field(TransportParameters& tp, P parameter) {
  switch (parameter) {
    case P::kMaxIdleTimeout: return &tp.max_idle_timeout_ms;
    case P::kMaxUdpPayloadSize: return &tp.max_udp_payload_size;
    case P::kInitialMaxData: return &tp.initial_max_data;
    case P::kInitialMaxStreamDataBidiLocal: return &tp.initial_max_stream_data_bidi_local;
    case P::kInitialMaxStreamDataBidiRemote: return &tp.initial_max_stream_data_bidi_remote;
    case P::kInitialMaxStreamDataUni: return &tp.initial_max_stream_data_uni;
    case P::kInitialMaxStreamsBidi: return &tp.initial_max_streams_bidi;
    case P::kInitialMaxStreamsUni: return &tp.initial_max_streams_uni;
    case P::kAckDelayExponent: return &tp.ack_delay_exponent;
    case P::kMaxAckDelay: return &tp.max_ack_delay_ms;
    case P::kActiveConnectionIdLimit: return &tp.active_connection_id_limit;
    case P::kMaxDatagramFrameSize: return &tp.max_datagram_frame_size;
    case P::kMinAckDelay: return &tp.min_ack_delay_us;
    default: return nullptr;
  }
}

const uint64_t* integer_field(const TransportParameters& tp, P parameter) {
  return integer_field(const_cast<TransportParameters&>(tp), parameter);
}

ConnectionId* connection_id_field(TransportParameters& tp, P parameter) {
  switch (parameter) {
    case P::kOriginalDestinationConnectionId: return &tp.original_destination_connection_id;
    case P::kInitialSourceConnectionId: return &tp.initial_source_connection_id;
    case P::kRetrySourceConnectionId: return &tp.retry_source_connection_id;
    default: return nullptr;
  }
}

const ConnectionId* connection_id_field(const TransportParameters& tp, P parameter) {
  return connection_id_field(const_cast<TransportParameters&>(tp), parameter);
}

template <size_t N>
bool read_array(ByteReader& reader, std::array<uint8_t, N>& out) {
  std::span<const uint8_t> bytes;
  if (!reader.read_bytes(N, bytes)) return false;
  std::memcpy(out.data(), bytes.data(), N);
  return true;
}

bool decode_preferred_address(std::span<const uint8_t> value, PreferredAddress& out) {
  if (value.size() < kPreferredAddressFixedSize) return false;
  ByteReader reader(value);
  uint8_t cid_length = 0;
  std::span<const uint8_t> cid;
  if (!read_array(reader, out.ipv4_address) || !reader.read_u16(out.ipv4_port) ||
      !read_array(reader, out.ipv6_address) || !reader.read_u16(out.ipv6_port) ||
      !reader.read_u8(cid_length) || cid_length == 0 || cid_length > kMaxConnectionIdLength ||
      !reader.read_bytes(cid_length, cid) || !read_array(reader, out.stateless_reset_token)) {
    return false;
  }
  out.connection_id = ConnectionId(cid);
  return reader.empty();
}

bool decode_version_information(std::span<const uint8_t> value, VersionInformation& out) {
  if (value.size() < 4 || value.size() % 4 != 0) return false;
  ByteReader reader(value);
  if (!reader.read_u32(out.chosen_version) || out.chosen_version == 0) return false;
  while (!reader.empty()) {
    uint32_t version = 0;
    if (!reader.read_u32(version) || version == 0) return false;
    if (out.available_version_count < kMaxAvailableVersions) {
      out.available_versions[out.available_version_count++] = version;
    }
  }
  return true;
}

// Parses one known parameter's value into `out`; false if malformed.
bool decode_value(P parameter, std::span<const uint8_t> value, TransportParameters& out) {
  if (uint64_t* field = integer_field(out, parameter)) {
    // The varint must fill the value exactly.
    return varint_decode(value, *field) == value.size() && !value.empty();
  }
  if (ConnectionId* cid = connection_id_field(out, parameter)) {
    if (value.size() > kMaxConnectionIdLength) return false;
    *cid = ConnectionId(value);
    return true;
  }
  switch (parameter) {
    case P::kStatelessResetToken: {
      ByteReader reader(value);
      return value.size() == out.stateless_reset_token.size() &&
             read_array(reader, out.stateless_reset_token);
    }
    case P::kDisableActiveMigration: return value.empty();
    case P::kPreferredAddress: return decode_preferred_address(value, out.preferred_address);
    case P::kVersionInformation: return decode_version_information(value, out.version_information);
    default: return false;
  }
}

bool server_only(P parameter) {
  return parameter == P::kOriginalDestinationConnectionId || parameter == P::kStatelessResetToken ||
         parameter == P::kPreferredAddress || parameter == P::kRetrySourceConnectionId;
}

// Size of the value of a present parameter, for its Length field.
size_t value_size(const TransportParameters& tp, P parameter) {
  if (const uint64_t* field = integer_field(tp, parameter)) return varint_length(*field);
  if (const ConnectionId* cid = connection_id_field(tp, parameter)) return cid->size();
  switch (parameter) {
    case P::kStatelessResetToken: return tp.stateless_reset_token.size();
    case P::kPreferredAddress:
      return kPreferredAddressFixedSize + tp.preferred_address.connection_id.size();
    case P::kVersionInformation: return 4 + 4 * tp.version_information.available_version_count;
    default: return 0;  // disable_active_migration
  }
}

bool encode_value(const TransportParameters& tp, P parameter, ByteWriter& writer) {
  if (const uint64_t* field = integer_field(tp, parameter)) return writer.write_varint(*field);
  if (const ConnectionId* cid = connection_id_field(tp, parameter)) {
    return writer.write_bytes(cid->span());
  }
  switch (parameter) {
    case P::kStatelessResetToken: return writer.write_bytes(tp.stateless_reset_token);
    case P::kPreferredAddress: {
      const PreferredAddress& pa = tp.preferred_address;
      return writer.write_bytes(pa.ipv4_address) && writer.write_u16(pa.ipv4_port) &&
             writer.write_bytes(pa.ipv6_address) && writer.write_u16(pa.ipv6_port) &&
             writer.write_u8(static_cast<uint8_t>(pa.connection_id.size())) &&
             writer.write_bytes(pa.connection_id.span()) &&
             writer.write_bytes(pa.stateless_reset_token);
    }
    case P::kVersionInformation: {
      bool ok = writer.write_u32(tp.version_information.chosen_version);
      for (const uint32_t version : tp.version_information.available()) {
        ok = ok && writer.write_u32(version);
      }
      return ok;
    }
    default: return true;  // disable_active_migration: empty value
  }
}

}  // namespace

uint64_t transport_parameter_id(TransportParameter parameter) {
  switch (parameter) {
    case P::kMaxDatagramFrameSize: return kMaxDatagramFrameSizeId;
    case P::kMinAckDelay: return kMinAckDelayId;
    default: return static_cast<uint64_t>(parameter);
  }
}

WireError validate_transport_parameters(const TransportParameters& tp, Role sender) {
  const WireError error = WireError::kTransportParameterError;
  for (size_t i = 0; i < kTransportParameterCount; ++i) {
    const P parameter = static_cast<P>(i);
    if (!tp.has(parameter)) continue;
    // RFC 9000 §18.2: a server treats these from a client as an error.
    if (sender == Role::kClient && server_only(parameter)) return error;
    if (const uint64_t* field = integer_field(tp, parameter)) {
      if (*field > kVarintMax) return error;
    }
  }
  if (tp.has(P::kMaxUdpPayloadSize) && tp.max_udp_payload_size < kMinMaxUdpPayloadSize) {
    return error;
  }
  if ((tp.has(P::kInitialMaxStreamsBidi) && tp.initial_max_streams_bidi > kMaxStreamsLimit) ||
      (tp.has(P::kInitialMaxStreamsUni) && tp.initial_max_streams_uni > kMaxStreamsLimit)) {
    return error;
  }
  if (tp.has(P::kAckDelayExponent) && tp.ack_delay_exponent > kMaxAckDelayExponent) return error;
  if (tp.has(P::kMaxAckDelay) && tp.max_ack_delay_ms >= kMaxAckDelayLimitMs) return error;
  if (tp.has(P::kActiveConnectionIdLimit) && tp.active_connection_id_limit < 2) return error;
  if (tp.has(P::kPreferredAddress) && tp.preferred_address.connection_id.empty()) return error;
  if (tp.has(P::kVersionInformation)) {
    const VersionInformation& info = tp.version_information;
    if (info.chosen_version == 0 || info.available_version_count > kMaxAvailableVersions) {
      return error;
    }
    for (const uint32_t version : info.available()) {
      if (version == 0) return error;
    }
  }
  if (tp.has(P::kMinAckDelay)) {
    // min_ack_delay is in microseconds, max_ack_delay in milliseconds.
    const uint64_t max_ack_delay_ms =
        tp.has(P::kMaxAckDelay) ? tp.max_ack_delay_ms : kDefaultMaxAckDelayMs;
    if (tp.min_ack_delay_us >= kMinAckDelayLimitUs ||
        tp.min_ack_delay_us > max_ack_delay_ms * 1000) {
      return error;
    }
  }
  return WireError::kOk;
}

WireError decode_transport_parameters(std::span<const uint8_t> bytes, Role sender,
                                      TransportParameters& out) {
  out = TransportParameters{};
  ByteReader reader(bytes);
  WireError result = WireError::kOk;
  while (!reader.empty() && result == WireError::kOk) {
    uint64_t id = 0;
    uint64_t length = 0;
    std::span<const uint8_t> value;
    if (!reader.read_varint(id) || !reader.read_varint(length) || length > reader.remaining() ||
        !reader.read_bytes(static_cast<size_t>(length), value)) {
      result = WireError::kTransportParameterError;
      break;
    }
    const auto parameter = parameter_from_id(id);
    if (!parameter) continue;  // unknown or greased: ignored (RFC 9000 §7.4.2)
    if (out.has(*parameter) || !decode_value(*parameter, value, out)) {
      result = WireError::kTransportParameterError;
      break;
    }
    out.mark_present(*parameter);
  }
  if (result == WireError::kOk) result = validate_transport_parameters(out, sender);
  if (result != WireError::kOk) out = TransportParameters{};
  return result;
}

bool encode_transport_parameters(const TransportParameters& tp, Role sender, ByteWriter& writer) {
  if (validate_transport_parameters(tp, sender) != WireError::kOk) return false;
  // Write into the tail and commit only on success, so failure writes nothing.
  ByteWriter scratch(writer.tail());
  for (size_t i = 0; i < kTransportParameterCount; ++i) {
    const P parameter = static_cast<P>(i);
    if (!tp.has(parameter)) continue;
    if (!scratch.write_varint(transport_parameter_id(parameter)) ||
        !scratch.write_varint(value_size(tp, parameter)) || !encode_value(tp, parameter, scratch)) {
      return false;
    }
  }
  return writer.advance(scratch.position());
}

bool write_greased_transport_parameter(ByteWriter& writer, uint64_t entropy) {
  const uint64_t id = 31 * (entropy & 0xffff) + 27;
  const size_t length = static_cast<size_t>((entropy >> 16) % 9);
  const uint64_t value = entropy >> 24;  // up to 40 bits of payload, then zeros
  ByteWriter scratch(writer.tail());
  if (!scratch.write_varint(id) || !scratch.write_varint(length)) return false;
  for (size_t i = 0; i < length; ++i) {
    if (!scratch.write_u8(static_cast<uint8_t>(value >> (8 * (i % 5))))) return false;
  }
  return writer.advance(scratch.position());
}

}  // namespace dpquic::wire
