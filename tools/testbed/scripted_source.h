#pragma once
// A TransmitSource for tests and benchmarks: each encryption level has a
// script of what to send (an ACK, CRYPTO data, stream data from a chunk, a
// PING, a CONNECTION_CLOSE), and every packet reported sent is recorded.
// Writes frames the way a connection would: ACK first, a close alone, then
// ack-eliciting data while the allowance permits it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "crypto/packet_keys.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/transmit_source.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/role.h"

namespace dpquic::transmit::testing {

struct LevelScript {
  const crypto::PacketKeys* keys = nullptr;  // null: no keys at this level
  uint64_t next_packet_number = 0;
  // 1-RTT: 0 has the header encoder choose it from largest_acked.
  size_t packet_number_length = 2;
  std::optional<uint64_t> largest_acked;

  bool ack = false;  // one ACK frame acknowledging [ack_smallest, ack_largest]
  uint64_t ack_smallest = 0;
  uint64_t ack_largest = 0;

  bool close = false;  // CONNECTION_CLOSE (transport) with this error code
  uint64_t close_error = 0x0a;

  bool ping = false;

  Chunk crypto_data;  // sent in CRYPTO frames from crypto_offset on
  uint64_t crypto_offset = 0;

  Chunk stream_data;  // sent in STREAM frames of stream_id from stream_offset on
  uint64_t stream_id = 0;
  uint64_t stream_offset = 0;
  bool stream_fin = false;
  size_t stream_sent = 0;  // bytes of stream_data already sent
  size_t crypto_sent = 0;
  // At most this many stream bytes per frame, and STREAM frames per packet
  // (0: no limit).
  size_t max_stream_frame = 0;
  size_t max_stream_frames_per_packet = 0;
};

class ScriptedSource : public TransmitSource {
 public:
  ScriptedSource(wire::Role role, std::span<const uint8_t> dcid, std::span<const uint8_t> scid)
      : role_(role), dcid_(dcid), scid_(scid) {
    sent_.reserve(4096);
  }

  LevelScript& level(EncryptionLevel level) { return levels_[static_cast<size_t>(level)]; }
  const std::vector<SentPacketInfo>& sent() const { return sent_; }
  void clear_sent() { sent_.clear(); }

  bool next_packet(EncryptionLevel level, const SendAllowance& allowance,
                   PacketHeader& header) override;
  PacketContents write_frames(EncryptionLevel level, PacketPayloadWriter& writer,
                              const SendAllowance& allowance) override;
  void on_packet_sent(const SentPacketInfo& packet) override { sent_.push_back(packet); }

 private:
  bool has_ack_eliciting(const LevelScript& script) const;

  wire::Role role_;
  std::span<const uint8_t> dcid_;
  std::span<const uint8_t> scid_;
  std::array<LevelScript, crypto::kEncryptionLevelCount> levels_;
  std::vector<SentPacketInfo> sent_;
};

}  // namespace dpquic::transmit::testing
