#pragma once
// The burst builder: the core of poll_transmit.
//
// build() fills the caller's datagram buffers with as many datagrams as the
// pacer (max_datagrams), the congestion window and the anti-amplification
// budget allow. Each datagram coalesces packets of the encryption levels in
// order (Initial, 0-RTT, Handshake, 1-RTT); the TransmitSource (the
// connection) supplies headers, keys and frames (see transmit_source.h).
//
// Padding is decided last. A packet's own needs are met as soon as its frames
// are written (at least 4 bytes of packet number + payload, for the header
// protection sample: RFC 9001 §5.4.2). The datagram's needs are tracked as one
// minimum size, raised by packets that need it (1200 bytes for Initial
// datagrams, RFC 9000 §14.1) and, in a GSO train, to the segment size for
// every datagram but the last. It is applied once, to the datagram's last
// packet, when the datagram is known to be finished: when the next datagram
// got a packet, or the burst ended. The last datagram of a train is never
// padded just to match the segment size. PADDING goes at the end of the last
// packet, except in a packet carrying CONNECTION_CLOSE, where it goes before
// the frames, so nothing at all follows the close.
//
// A CONNECTION_CLOSE ends the output: nothing else is written in that
// datagram or burst. A 1-RTT packet ends its datagram (a short header has no
// Length).
//
// Budgets: ack-eliciting frames are allowed in a datagram only while the
// congestion budget has room for a full segment (as quinn does); otherwise
// only ACK and CONNECTION_CLOSE (SendAllowance). The amplification budget is
// never exceeded, padding included: a datagram is never larger than what is
// left of it.
//
// Nothing is allocated per packet or per burst: packet records, gather
// segments and chunk references live in fixed arrays of the builder, which is
// created once per core (it is large; allocate it, don't put it on a stack).

#include <array>
#include <cstddef>
#include <cstdint>

#include "crypto/aead_burst.h"
#include "crypto/aead_gather.h"
#include "quic/transmit/burst.h"
#include "quic/transmit/packet_sealer.h"
#include "quic/transmit/packet_writer.h"
#include "quic/transmit/transmit_source.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/header.h"

namespace dpquic::transmit {

struct BurstParams {
  size_t max_datagrams = kMaxBurstDatagrams;   // the pacer's allowance
  uint64_t congestion_budget = UINT64_MAX;     // cwnd - bytes_in_flight
  uint64_t amplification_budget = UINT64_MAX;  // 3 x received - sent, until validated
  uint32_t path_id = 0;
  EcnCodepoint ecn = EcnCodepoint::kNotEct;
};

enum class BurstStatus : uint8_t {
  kOk = 0,           // datagram_count may be 0: nothing to send, or no budget
  kInvalidArgument,  // buffers or segment size unusable; nothing was asked of the source
  // Sealing failed (an internal error: every argument was built here). The
  // descriptor is empty; packets committed by write_frames were not reported
  // sent; the connection should close.
  kSealFailed,
};

// Up to this many packets per burst (four levels per datagram at most).
inline constexpr size_t kMaxPacketsPerBurst = 4 * kMaxBurstDatagrams;

class BurstBuilder {
 public:
  explicit BurstBuilder(PacketSealer& sealer) : sealer_(sealer) {}
  BurstBuilder(const BurstBuilder&) = delete;
  BurstBuilder& operator=(const BurstBuilder&) = delete;

  BurstStatus build(TransmitSource& source, const BurstBuffers& buffers, const BurstParams& params,
                    BurstDescriptor& out);

 private:
  struct Packet {
    EncryptionLevel level;
    uint64_t packet_number;
    const crypto::PacketKeys* keys;
    uint8_t* start;
    wire::EncodedHeader header;
    size_t payload_length;  // plaintext, padding included
    size_t first_segment;
    size_t segment_count;
    size_t datagram;
    bool long_header;
    bool ack_eliciting;
    bool in_flight;
    bool connection_close;

    size_t size() const { return header.header_size + payload_length + crypto::kAeadTagLength; }
  };
  struct Datagram {
    uint8_t* buffer;
    size_t capacity;  // the most bytes this datagram may have (segment, budgets)
    size_t length;
    size_t min_size;
    size_t first_packet;
    size_t packet_count;
    bool ended;  // a short header or a close: no further packet fits
  };
  // `amplification`: what is left of the anti-amplification budget.
  void open_datagram(const BurstBuffers& buffers, uint64_t amplification, size_t index);
  // Builds the level's next packet at the end of datagram `index`.
  enum class Attempt : uint8_t {
    kBuilt,
    kNothingToSend,  // next_packet() said no: not asked again this burst
    kNotBuilt,       // no room, or the source wrote nothing
  };
  Attempt try_packet(TransmitSource& source, EncryptionLevel level, const SendAllowance& allowance,
                     size_t index);
  bool encode_header(PacketHeader& header, wire::ByteWriter& writer, wire::EncodedHeader& encoded);
  // A short header whose fields match the template's but for the packet
  // number: copied from the template, its packet number patched in. False
  // (nothing written) when the fields or the packet number length differ.
  bool copy_short_header(const wire::ShortHeaderFields& fields, wire::ByteWriter& writer,
                         wire::EncodedHeader& encoded) const;
  // The packet takes its place in the datagram, with what its contents ask
  // of the datagram's size and end.
  void add_to_datagram(Datagram& datagram, const Packet& packet, const PacketContents& contents);
  void pad_packet(Packet& packet, size_t amount);
  // Applies the datagram's minimum size (raised to `train_size` when another
  // datagram of a GSO train follows) and patches long-header Lengths.
  void finish_datagram(Datagram& datagram, size_t train_size);
  // The datagrams of the burst, each as full as the budgets allow, the last
  // one left open; then the packets of one datagram, level by level.
  void fill_datagrams(TransmitSource& source, const BurstBuffers& buffers,
                      const BurstParams& params);
  void fill_datagram(TransmitSource& source, size_t index, bool congestion_room,
                     uint8_t& idle_levels);
  // Seals every packet in one call, reports each to the source, and fills
  // `out`'s lengths.
  BurstStatus seal_and_report(TransmitSource& source, BurstDescriptor& out);
  // The congestion window `datagram` takes once finished at `final_length`
  // bytes. The budgets live in scalars of fill_datagrams(): a struct spilled to the
  // stack between datagrams stalled on store forwarding.
  uint64_t in_flight_bytes(const Datagram& datagram, size_t final_length) const;
  bool datagram_in_flight(const Datagram& datagram) const;

  // The last short header of the burst as written: every 1-RTT packet of a
  // burst but the first has the same first byte and DCID, so it is copied
  // and only its packet number written (a header template). Reset per build.
  struct ShortHeaderTemplate {
    bool valid = false;
    const uint8_t* dcid = nullptr;  // the fields it was written from
    size_t dcid_length = 0;
    bool key_phase = false;
    bool spin_bit = false;
    wire::EncodedHeader encoded;  // its layout, packet number length included
    std::array<uint8_t, 1 + wire::kMaxConnectionIdLength> bytes{};  // first byte, DCID
  };

  PacketSealer& sealer_;
  // The header the source fills in, reused for every packet (see try_packet).
  PacketHeader header_;
  ShortHeaderTemplate short_template_;
  GatherStorage gather_;
  std::array<Packet, kMaxPacketsPerBurst> packets_{};
  size_t packet_count_ = 0;
  std::array<Datagram, kMaxBurstDatagrams> datagrams_{};
  size_t datagram_count_ = 0;
  bool closed_ = false;
  std::array<crypto::GatherProtectOp, kMaxPacketsPerBurst> ops_{};
  std::array<crypto::PacketStatus, kMaxPacketsPerBurst> status_{};
  std::array<SentPacketInfo, kMaxPacketsPerBurst> sent_{};
};

}  // namespace dpquic::transmit
