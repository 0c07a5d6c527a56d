// PMTU discovery on the send path (RFC 9000 §14.3, §14.4; RFC 8899): when a
// probe goes out, and the burst that carries it. The state machine is
// PathMtu (path_mtu.h); write_frames() writes the probe's PING and
// on_packet_sent() hands it to PathMtu, outside loss detection's accounting.

#include "quic/conn/connection.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;

size_t Connection::mtu_probe_due(const Burst& burst, uint64_t cwnd, uint64_t in_flight) const {
  // Only on the active, validated path, once the handshake is confirmed
  // (1-RTT only, no amplification limit), and never ahead of loss recovery's
  // own probes.
  if (!path_mtu_.enabled() || state_ != ConnectionState::kEstablished || !handshake_confirmed_ ||
      burst.path != active_path_ || !paths_.path(active_path_).validated || probes_unsent() ||
      keys_.write_keys(EncryptionLevel::kApplication) == nullptr) {
    return 0;
  }
  const size_t size = path_mtu_.probe_due(burst.now);
  // Probes are congestion controlled (RFC 9000 §14.4): only with room.
  if (size == 0 || cwnd < in_flight || cwnd - in_flight < size) return 0;
  return size;
}

transmit::BurstStatus Connection::send_mtu_probe(Burst& burst, transmit::BurstBuilder& builder,
                                                 const transmit::BurstBuffers& lent, size_t size,
                                                 transmit::BurstDescriptor& out) {
  transmit::BurstBuffers buffers = lent;
  buffers.segment_size = size;  // <= the lent capacity: the ceiling includes it
  transmit::BurstParams params;
  params.path_id = active_path_;
  params.ecn = ecn_.codepoint_to_send();
  burst.ecn_marked = params.ecn != transmit::EcnCodepoint::kNotEct;
  params.congestion_budget = size;
  params.max_datagrams = 1;
  burst.mtu_probe_size = size;
  return build_burst(burst, builder, buffers, params, out);
}

}  // namespace dpquic::conn
