#pragma once
// What the burst builder asks of the connection (the TransmitSource), and
// what it tells it back.
//
// For each datagram the builder walks the encryption levels in order
// (Initial, 0-RTT, Handshake, 1-RTT: RFC 9000 §12.2) and, for each level:
//   1. next_packet(level, allowance, header): does the level have keys and
//      something to send under `allowance`? If so, fill in the header of its
//      next packet (and its keys). The builder reuses one header object for
//      every call of a build() and resets only keys (null) and long_header
//      (true): the source sets every field of the form it uses, except that
//      within one build() the fields it set before stay as it left them
//      (so it may set only the packet number of a packet whose other fields
//      match an earlier packet's in the same burst).
//   2. write_frames(level, writer, allowance): write frames into the packet.
//      Writing nothing abandons the packet (its number stays unused). Writing
//      anything commits it: the packet will be sent, so the source hands out
//      the next packet number from now on.
// A level whose next_packet() returned false is not asked again during the
// same build() call: the source's answer must not turn to yes within one
// burst (nothing but the builder's own calls reaches the source meanwhile,
// and the allowance only narrows as the budgets are spent).
// After the whole burst is sealed, on_packet_sent() reports every committed
// packet, in the order built (ascending packet numbers within a space), with
// its final size, so the connection can record it in its SentPackets.

#include <cstddef>
#include <cstdint>

#include "crypto/packet_keys.h"
#include "crypto/types.h"
#include "quic/transmit/packet_writer.h"
#include "quic/wire/header.h"

namespace dpquic::transmit {

using crypto::EncryptionLevel;

// What the source may write into the packet being built.
struct SendAllowance {
  // False when the congestion window has no room for another full datagram,
  // or when an Initial packet's datagram cannot be padded to 1200 bytes
  // under the anti-amplification budget: then only ACK and CONNECTION_CLOSE
  // frames may be written (RFC 9002 §7; RFC 9000 §8.1, §14.1).
  bool ack_eliciting = true;
};

// The header of the next packet at a level. Initial, 0-RTT and Handshake
// packets use long_fields (its length_field_width is set by the builder);
// 1-RTT packets use short_fields.
struct PacketHeader {
  const crypto::PacketKeys* keys = nullptr;
  bool long_header = true;
  wire::LongHeaderFields long_fields;
  wire::ShortHeaderFields short_fields;

  uint64_t packet_number() const {
    return long_header ? long_fields.packet_number : short_fields.packet_number;
  }
};

// What write_frames() wrote.
struct PacketContents {
  // Any frame but ACK, PADDING and CONNECTION_CLOSE (RFC 9002 §2).
  bool ack_eliciting = false;
  // Ack-eliciting or carrying PADDING the source wrote itself (the builder
  // adds its own padding to this).
  bool in_flight = false;
  // The datagram must reach 1200 bytes: a client's Initial, or a server's
  // ack-eliciting Initial (RFC 9000 §14.1). The source decides.
  bool needs_initial_padding = false;
  // The datagram must be padded to its full size (the segment size): a PMTU
  // probe (RFC 9000 §14.4), which the source sends alone in its burst.
  bool pad_to_segment = false;
  // A CONNECTION_CLOSE frame, written last: nothing follows it, in this
  // packet, this datagram or this burst.
  bool connection_close = false;
};

// A packet of the sealed burst.
struct SentPacketInfo {
  EncryptionLevel level = EncryptionLevel::kInitial;
  uint64_t packet_number = 0;
  size_t size = 0;  // bytes on the wire: header, payload, tag
  size_t datagram_index = 0;
  bool ack_eliciting = false;
  bool in_flight = false;  // ack-eliciting or padded (by the source or the builder)
};

class TransmitSource {
 public:
  virtual ~TransmitSource() = default;

  virtual bool next_packet(EncryptionLevel level, const SendAllowance& allowance,
                           PacketHeader& header) = 0;
  virtual PacketContents write_frames(EncryptionLevel level, PacketPayloadWriter& writer,
                                      const SendAllowance& allowance) = 0;
  virtual void on_packet_sent(const SentPacketInfo& packet) = 0;
};

}  // namespace dpquic::transmit
