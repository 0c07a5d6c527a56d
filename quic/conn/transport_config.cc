#include "quic/conn/transport_config.h"

#include "quic/wire/varint.h"

namespace dpquic::conn {

namespace {

using wire::TransportErrorCode;
using P = wire::TransportParameter;

}  // namespace

const char* transport_config_error(const TransportConfig& config) {
  const uint64_t varint_fields[] = {
      config.max_idle_timeout_ms,   config.initial_max_data,  config.initial_max_stream_data,
      config.max_connection_window, config.max_stream_window, config.max_datagram_frame_size,
  };
  for (const uint64_t value : varint_fields) {
    if (value > wire::kVarintMax) return "a transport parameter exceeds 2^62 - 1";
  }
  if (config.initial_max_streams_bidi > wire::kMaxStreamsLimit ||
      config.initial_max_streams_uni > wire::kMaxStreamsLimit) {
    return "initial_max_streams above 2^60";
  }
  if (config.ack_delay_exponent > wire::kMaxAckDelayExponent) return "ack_delay_exponent above 20";
  if (config.max_ack_delay_ms >= wire::kMaxAckDelayLimitMs)
    return "max_ack_delay of 2^14 ms or more";
  if (config.active_connection_id_limit < 2) return "active_connection_id_limit below 2";
  if (config.active_connection_id_limit > wire::kVarintMax) {
    return "active_connection_id_limit exceeds 2^62 - 1";
  }
  if (config.max_udp_payload_size < wire::kMinMaxUdpPayloadSize ||
      config.max_udp_payload_size > wire::kDefaultMaxUdpPayloadSize) {
    return "max_udp_payload_size outside 1200..65527";
  }
  if (config.max_connection_window < config.initial_max_data) {
    return "max_connection_window below initial_max_data";
  }
  if (config.max_stream_window < config.initial_max_stream_data) {
    return "max_stream_window below initial_max_stream_data";
  }
  return nullptr;
}

wire::TransportParameters make_local_transport_parameters(
    const TransportConfig& config, wire::Role local_role, const wire::ConnectionId& initial_scid,
    const wire::ConnectionId* original_dcid, const wire::ConnectionId* retry_scid,
    const wire::StatelessResetToken* reset_token, const wire::PreferredAddress* preferred_address) {
  wire::TransportParameters tp;
  tp.max_idle_timeout_ms = config.max_idle_timeout_ms;
  tp.max_udp_payload_size = config.max_udp_payload_size;
  tp.initial_max_data = config.initial_max_data;
  tp.initial_max_stream_data_bidi_local = config.initial_max_stream_data;
  tp.initial_max_stream_data_bidi_remote = config.initial_max_stream_data;
  tp.initial_max_stream_data_uni = config.initial_max_stream_data;
  tp.initial_max_streams_bidi = config.initial_max_streams_bidi;
  tp.initial_max_streams_uni = config.initial_max_streams_uni;
  tp.ack_delay_exponent = config.ack_delay_exponent;
  tp.max_ack_delay_ms = config.max_ack_delay_ms;
  tp.active_connection_id_limit = config.active_connection_id_limit;
  tp.initial_source_connection_id = initial_scid;
  // Sent explicitly even where equal to the RFC default: the bytes cost
  // little and the peer does not depend on our idea of the defaults.
  for (const P parameter : {P::kMaxIdleTimeout, P::kMaxUdpPayloadSize, P::kInitialMaxData,
                            P::kInitialMaxStreamDataBidiLocal, P::kInitialMaxStreamDataBidiRemote,
                            P::kInitialMaxStreamDataUni, P::kInitialMaxStreamsBidi,
                            P::kInitialMaxStreamsUni, P::kAckDelayExponent, P::kMaxAckDelay,
                            P::kActiveConnectionIdLimit, P::kInitialSourceConnectionId}) {
    tp.mark_present(parameter);
  }
  if (config.disable_active_migration) tp.mark_present(P::kDisableActiveMigration);
  if (config.max_datagram_frame_size > 0) {
    tp.max_datagram_frame_size = config.max_datagram_frame_size;
    tp.mark_present(P::kMaxDatagramFrameSize);
  }
  if (local_role == wire::Role::kServer) {
    if (original_dcid != nullptr) {
      tp.original_destination_connection_id = *original_dcid;
      tp.mark_present(P::kOriginalDestinationConnectionId);
    }
    if (retry_scid != nullptr) {
      tp.retry_source_connection_id = *retry_scid;
      tp.mark_present(P::kRetrySourceConnectionId);
    }
    if (reset_token != nullptr) {
      tp.stateless_reset_token = *reset_token;
      tp.mark_present(P::kStatelessResetToken);
    }
    if (preferred_address != nullptr) {
      tp.preferred_address = *preferred_address;
      tp.mark_present(P::kPreferredAddress);
    }
  }
  return tp;
}

TransportError check_peer_transport_parameters(const wire::TransportParameters& peer,
                                               wire::Role local_role, const HandshakeCids& cids) {
  const auto parameter_error = [](const char* reason) {
    return transport_error(TransportErrorCode::kTransportParameterError, reason);
  };
  const auto violation = [](const char* reason) {
    return transport_error(TransportErrorCode::kProtocolViolation, reason);
  };
  const wire::Role peer_role =
      local_role == wire::Role::kClient ? wire::Role::kServer : wire::Role::kClient;

  if (peer_role == wire::Role::kClient) {
    // The decoder rejects these already; a hand-built struct must not slip by.
    if (peer.has(P::kOriginalDestinationConnectionId)) {
      return parameter_error("client sent original_destination_connection_id");
    }
    if (peer.has(P::kStatelessResetToken))
      return parameter_error("client sent stateless_reset_token");
    if (peer.has(P::kPreferredAddress)) return parameter_error("client sent preferred_address");
    if (peer.has(P::kRetrySourceConnectionId)) {
      return parameter_error("client sent retry_source_connection_id");
    }
  }
  if (wire::validate_transport_parameters(peer, peer_role) != wire::WireError::kOk) {
    return parameter_error("invalid transport parameter value");
  }

  if (!peer.has(P::kInitialSourceConnectionId)) {
    return parameter_error("missing initial_source_connection_id");
  }
  if (peer_role == wire::Role::kServer && !peer.has(P::kOriginalDestinationConnectionId)) {
    return parameter_error("missing original_destination_connection_id");
  }
  if (!(peer.initial_source_connection_id == cids.peer_initial_scid)) {
    return violation("initial_source_connection_id does not match the Initial's SCID");
  }
  if (peer_role == wire::Role::kClient) return {};

  if (!(peer.original_destination_connection_id == cids.original_dcid)) {
    return violation("original_destination_connection_id does not match our first DCID");
  }
  if (cids.retry_scid.has_value()) {
    if (!peer.has(P::kRetrySourceConnectionId)) {
      return violation("missing retry_source_connection_id after a Retry");
    }
    if (!(peer.retry_source_connection_id == *cids.retry_scid)) {
      return violation("retry_source_connection_id does not match the Retry's SCID");
    }
  } else if (peer.has(P::kRetrySourceConnectionId)) {
    return violation("retry_source_connection_id without a Retry");
  }
  return {};
}

TransportError check_zero_rtt_parameters(const wire::TransportParameters& remembered,
                                         const wire::TransportParameters& current) {
  struct Limit {
    uint64_t wire::TransportParameters::*field;
    const char* reason;
  };
  static constexpr Limit kLimits[] = {
      {&wire::TransportParameters::active_connection_id_limit,
       "0-RTT accepted but active_connection_id_limit was reduced"},
      {&wire::TransportParameters::initial_max_data,
       "0-RTT accepted but initial_max_data was reduced"},
      {&wire::TransportParameters::initial_max_stream_data_bidi_local,
       "0-RTT accepted but initial_max_stream_data_bidi_local was reduced"},
      {&wire::TransportParameters::initial_max_stream_data_bidi_remote,
       "0-RTT accepted but initial_max_stream_data_bidi_remote was reduced"},
      {&wire::TransportParameters::initial_max_stream_data_uni,
       "0-RTT accepted but initial_max_stream_data_uni was reduced"},
      {&wire::TransportParameters::initial_max_streams_bidi,
       "0-RTT accepted but initial_max_streams_bidi was reduced"},
      {&wire::TransportParameters::initial_max_streams_uni,
       "0-RTT accepted but initial_max_streams_uni was reduced"},
  };
  // Absent parameters hold their RFC defaults in the struct, so comparing
  // the fields compares the effective values.
  for (const Limit& limit : kLimits) {
    if (current.*(limit.field) < remembered.*(limit.field)) {
      return transport_error(TransportErrorCode::kProtocolViolation, limit.reason);
    }
  }
  // max_datagram_frame_size has no default: absent means DATAGRAM is off.
  const auto datagram_limit = [](const wire::TransportParameters& tp) -> uint64_t {
    return tp.has(P::kMaxDatagramFrameSize) ? tp.max_datagram_frame_size : 0;
  };
  if (datagram_limit(current) < datagram_limit(remembered)) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "0-RTT accepted but max_datagram_frame_size was reduced");
  }
  return {};
}

}  // namespace dpquic::conn
