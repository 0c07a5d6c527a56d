#include "quic/transmit/burst_builder.h"

#include <algorithm>
#include <cstring>

#include "quic/hot_path.h"
#include "quic/wire/packet_number.h"

namespace dpquic::transmit {
namespace {

// The order packets are coalesced in a datagram: increasing encryption
// levels, Initial, 0-RTT, Handshake, 1-RTT (RFC 9000 §12.2); a 1-RTT packet,
// with its short header, can only be last.
constexpr EncryptionLevel kLevelOrder[] = {EncryptionLevel::kInitial, EncryptionLevel::kEarlyData,
                                           EncryptionLevel::kHandshake,
                                           EncryptionLevel::kApplication};

constexpr size_t kTag = crypto::kAeadTagLength;

}  // namespace

void BurstBuilder::open_datagram(const BurstBuffers& buffers, uint64_t amplification,
                                 size_t index) {
  const size_t capacity =
      static_cast<size_t>(std::min<uint64_t>(buffers.segment_size, amplification));
  // A train is laid out back to back at the segment size actually used,
  // which may be below the stride the caller lent (see burst.h).
  uint8_t* const buffer = buffers.mode == BurstMode::kGsoTrain
                              ? buffers.datagrams[0] + index * buffers.segment_size
                              : buffers.datagrams[index];
  const bool lent = buffer != nullptr && buffers.datagrams[index] != nullptr;
  datagrams_[index] = Datagram{buffer, lent ? capacity : 0, 0, 0, packet_count_, 0, false};
}

BurstBuilder::Attempt BurstBuilder::try_packet(TransmitSource& source, EncryptionLevel level,
                                               const SendAllowance& allowance,
                                               size_t datagram_index) {
  Datagram& datagram = datagrams_[datagram_index];
  if (packet_count_ == packets_.size() || !PacketPayloadWriter::has_room_for_packet(gather_)) {
    return Attempt::kNotBuilt;
  }
  // One header object serves every call (see transmit_source.h): the source
  // sets each field of the form it uses. Only the fields the checks below
  // read are reset; value-initialising the whole header per call compiled to
  // `rep stos`, whose start-up cost dominated the builder's per-packet work.
  PacketHeader& header = header_;
  header.keys = nullptr;
  header.long_header = true;
  if (!source.next_packet(level, allowance, header) || header.keys == nullptr) {
    return Attempt::kNothingToSend;
  }

  uint8_t* start = datagram.buffer + datagram.length;
  wire::ByteWriter writer({start, datagram.capacity - datagram.length});
  wire::EncodedHeader encoded;
  if (!encode_header(header, writer, encoded)) return Attempt::kNotBuilt;
  // RFC 9001 §5.4.2: packet number + payload >= 4 bytes, so the sample fits.
  const size_t sample_minimum =
      encoded.packet_number_length >= 4 ? 0 : 4 - encoded.packet_number_length;
  if (writer.remaining() < kTag + std::max<size_t>(sample_minimum, 1)) return Attempt::kNotBuilt;

  PacketPayloadWriter payload({writer.tail().data(), writer.remaining() - kTag}, gather_);
  const PacketContents contents = source.write_frames(level, payload, allowance);
  if (payload.written() == 0) {
    payload.abandon();
    return Attempt::kNotBuilt;
  }
  // Filled field by field in place: a temporary copied in stalls on store
  // forwarding.
  Packet& packet = packets_[packet_count_++];
  packet.level = level;
  packet.packet_number = header.packet_number();
  packet.keys = header.keys;
  packet.start = start;
  packet.header = encoded;
  packet.payload_length = payload.written();
  packet.datagram = datagram_index;
  packet.long_header = header.long_header;
  packet.ack_eliciting = contents.ack_eliciting;
  packet.in_flight = contents.ack_eliciting || contents.in_flight;
  packet.connection_close = contents.connection_close;
  payload.finish(packet.first_segment, packet.segment_count);
  if (packet.payload_length < sample_minimum) {
    pad_packet(packet, sample_minimum - packet.payload_length);
  }
  add_to_datagram(datagram, packet, contents);
  return Attempt::kBuilt;
}

bool BurstBuilder::encode_header(PacketHeader& header, wire::ByteWriter& writer,
                                 wire::EncodedHeader& encoded) {
  if (header.long_header) {
    header.long_fields.length_field_width = 2;  // enough for any packet up to kMaxSegmentSize
    return wire::encode_long_header(writer, header.long_fields, encoded);
  }
  const wire::ShortHeaderFields& fields = header.short_fields;
  if (copy_short_header(fields, writer, encoded)) return true;
  const uint8_t* start = writer.tail().data();
  if (!wire::encode_short_header(writer, fields, encoded)) return false;
  ShortHeaderTemplate& t = short_template_;
  t.dcid = fields.dcid.data();
  t.dcid_length = fields.dcid.size();
  t.key_phase = fields.key_phase;
  t.spin_bit = fields.spin_bit;
  t.encoded = encoded;
  std::memcpy(t.bytes.data(), start, 1 + t.dcid_length);
  t.valid = true;
  return true;
}

bool BurstBuilder::copy_short_header(const wire::ShortHeaderFields& fields,
                                     wire::ByteWriter& writer, wire::EncodedHeader& encoded) const {
  const ShortHeaderTemplate& t = short_template_;
  if (!t.valid || fields.dcid.data() != t.dcid || fields.dcid.size() != t.dcid_length ||
      fields.key_phase != t.key_phase || fields.spin_bit != t.spin_bit ||
      fields.packet_number_length != 0 || fields.packet_number > wire::kMaxPacketNumber) {
    return false;
  }
  const size_t pn_length = wire::packet_number_length(fields.packet_number, fields.largest_acked);
  // The whole template is copied, whatever its DCID's length: room for it.
  if (pn_length != t.encoded.packet_number_length ||
      writer.remaining() < std::max(t.encoded.header_size, t.bytes.size())) {
    return false;
  }
  uint8_t* at = writer.tail().data();
  std::memcpy(at, t.bytes.data(), t.bytes.size());
  // The packet number's low pn_length bytes, big-endian, after the DCID.
  uint64_t truncated = fields.packet_number;
  for (size_t i = pn_length; i-- != 0; truncated >>= 8) {
    at[t.encoded.packet_number_offset + i] = static_cast<uint8_t>(truncated);
  }
  (void)writer.advance(t.encoded.header_size);
  encoded = t.encoded;
  return true;
}

DPQUIC_INLINE_STEP void BurstBuilder::add_to_datagram(Datagram& datagram, const Packet& packet,
                                                      const PacketContents& contents) {
  datagram.length += packet.size();
  ++datagram.packet_count;
  if (contents.needs_initial_padding) {
    datagram.min_size =
        std::max(datagram.min_size, std::min(wire::kMinInitialDatagramSize, datagram.capacity));
  }
  if (contents.pad_to_segment) datagram.min_size = datagram.capacity;
  if (contents.connection_close) closed_ = true;
  // A short-header packet runs to the end of its datagram (RFC 9000 §12.2).
  datagram.ended = contents.connection_close || !packet.long_header;
}

void BurstBuilder::pad_packet(Packet& packet, size_t amount) {
  uint8_t* payload = packet.start + packet.header.header_size;
  crypto::GatherSegment* segments = &gather_.segments[packet.first_segment];
  if (!packet.connection_close) {
    // At the end: the last segment is always in place.
    std::memset(payload + packet.payload_length, 0, amount);
    segments[packet.segment_count - 1].length += amount;
  } else {
    // Before the frames, so the close stays the last thing in the packet.
    std::memmove(payload + amount, payload, packet.payload_length);
    std::memset(payload, 0, amount);
    for (size_t i = 0; i < packet.segment_count; ++i) {
      crypto::GatherSegment& segment = segments[i];
      const bool in_place = segment.in == segment.out;
      segment.out += amount;
      if (in_place) segment.in = segment.out;
    }
    // The first segment is always in place: it grows back over the padding.
    segments[0].out = payload;
    segments[0].in = payload;
    segments[0].length += amount;
  }
  packet.payload_length += amount;
  packet.in_flight = true;  // PADDING makes a packet count in flight (RFC 9002 §2)
}

void BurstBuilder::finish_datagram(Datagram& datagram, size_t train_size) {
  const size_t target = std::min(std::max(datagram.min_size, train_size), datagram.capacity);
  Packet& last = packets_[datagram.first_packet + datagram.packet_count - 1];
  if (datagram.length < target) {
    pad_packet(last, target - datagram.length);
    datagram.length = target;
  }
  for (size_t i = 0; i < datagram.packet_count; ++i) {
    Packet& packet = packets_[datagram.first_packet + i];
    if (!packet.long_header) continue;
    // Fits by construction: 2-byte Length, packets <= kMaxSegmentSize.
    (void)wire::patch_long_header_length({packet.start, packet.size()}, packet.header,
                                         packet.payload_length + kTag);
  }
}

uint64_t BurstBuilder::in_flight_bytes(const Datagram& datagram, size_t final_length) const {
  // In flight: ack-eliciting or padded packets (RFC 9002 §2); padding added
  // to reach final_length goes to the last packet.
  uint64_t in_flight = final_length - datagram.length;
  for (size_t i = 0; i < datagram.packet_count; ++i) {
    const Packet& packet = packets_[datagram.first_packet + i];
    const bool last = i + 1 == datagram.packet_count;
    if (packet.in_flight || (last && final_length > datagram.length)) in_flight += packet.size();
  }
  return in_flight;
}

bool BurstBuilder::datagram_in_flight(const Datagram& datagram) const {
  for (size_t i = 0; i < datagram.packet_count; ++i) {
    if (packets_[datagram.first_packet + i].in_flight) return true;
  }
  return false;
}

BurstStatus BurstBuilder::build(TransmitSource& source, const BurstBuffers& buffers,
                                const BurstParams& params, BurstDescriptor& out) {
  out = BurstDescriptor{};
  out.segment_size = buffers.segment_size;
  out.ecn = params.ecn;
  out.path_id = params.path_id;
  const size_t segment = buffers.segment_size;
  if (segment < wire::kMinInitialDatagramSize || segment > kMaxSegmentSize ||
      segment > buffers.capacity) {
    return BurstStatus::kInvalidArgument;
  }
  packet_count_ = 0;
  datagram_count_ = 0;
  closed_ = false;
  short_template_.valid = false;
  gather_.clear();
  fill_datagrams(source, buffers, params);
  if (datagram_count_ == 0) return BurstStatus::kOk;
  finish_datagram(datagrams_[datagram_count_ - 1], 0);
  return seal_and_report(source, out);
}

DPQUIC_INLINE_STEP void BurstBuilder::fill_datagrams(TransmitSource& source,
                                                     const BurstBuffers& buffers,
                                                     const BurstParams& params) {
  const size_t segment = buffers.segment_size;
  const bool train = buffers.mode == BurstMode::kGsoTrain;
  const size_t limit =
      std::min({buffers.datagrams.size(), params.max_datagrams, kMaxBurstDatagrams});
  // What is left after every finished datagram. The previous datagram stays
  // open (its last packet unpadded) until the next one has a packet.
  uint64_t left_congestion = params.congestion_budget;
  uint64_t left_amplification = params.amplification_budget;
  // Levels whose next_packet() said no: the answer holds for the rest of the
  // burst (see transmit_source.h), and asking again cost a virtual call per
  // level per datagram.
  uint8_t idle_levels = 0;
  for (size_t index = 0; index < limit && !closed_; ++index) {
    uint64_t congestion = left_congestion;
    uint64_t amplification = left_amplification;
    if (index > 0) {
      const Datagram& previous = datagrams_[index - 1];
      size_t final_length = std::max(previous.length, previous.min_size);
      if (train) {
        // Another segment means padding this one to the segment size: only
        // if it may be that large, and if that does not put an ACK-only
        // datagram in flight.
        if (previous.capacity < segment ||
            (previous.length < segment && !datagram_in_flight(previous))) {
          break;
        }
        final_length = segment;
      }
      congestion -= std::min(congestion, in_flight_bytes(previous, final_length));
      amplification -= std::min<uint64_t>(amplification, final_length);
    }
    open_datagram(buffers, amplification, index);
    // Ack-eliciting frames only while a full segment fits the window.
    fill_datagram(source, index, congestion >= segment, idle_levels);
    Datagram& datagram = datagrams_[index];
    if (datagram.packet_count == 0) break;
    datagram_count_ = index + 1;
    if (index > 0) {
      Datagram& previous = datagrams_[index - 1];
      finish_datagram(previous, train ? segment : 0);
      left_congestion -= std::min(left_congestion, in_flight_bytes(previous, previous.length));
      left_amplification -= std::min<uint64_t>(left_amplification, previous.length);
    }
  }
}

DPQUIC_INLINE_STEP void BurstBuilder::fill_datagram(TransmitSource& source, size_t index,
                                                    bool congestion_room, uint8_t& idle_levels) {
  Datagram& datagram = datagrams_[index];
  for (const EncryptionLevel level : kLevelOrder) {
    if (datagram.ended) break;
    const auto level_bit = static_cast<uint8_t>(1u << static_cast<unsigned>(level));
    if ((idle_levels & level_bit) != 0) continue;
    // A server's Initial datagram that cannot reach 1200 bytes under the
    // amplification budget may carry no ack-eliciting Initial.
    const SendAllowance allowance{
        congestion_room &&
        !(level == EncryptionLevel::kInitial && datagram.capacity < wire::kMinInitialDatagramSize)};
    if (try_packet(source, level, allowance, index) == Attempt::kNothingToSend) {
      idle_levels |= level_bit;
    }
  }
}

DPQUIC_INLINE_STEP BurstStatus BurstBuilder::seal_and_report(TransmitSource& source,
                                                             BurstDescriptor& out) {
  for (size_t i = 0; i < packet_count_; ++i) {
    const Packet& packet = packets_[i];
    ops_[i] =
        crypto::GatherProtectOp{packet.keys,
                                packet.packet_number,
                                {packet.start, packet.size()},
                                packet.header.header_size,
                                {&gather_.segments[packet.first_segment], packet.segment_count}};
    // Recorded now, long before on_packet_sent() reads them back: a record
    // built just before the call stalls its wide loads on store forwarding.
    sent_[i] = SentPacketInfo{packet.level,    packet.packet_number, packet.size(),
                              packet.datagram, packet.ack_eliciting, packet.in_flight};
  }
  const size_t sealed = sealer_.seal({ops_.data(), packet_count_}, {status_.data(), packet_count_});
  // The ciphertext is in the buffers: the chunks may go.
  gather_.clear();
  if (sealed != packet_count_) return BurstStatus::kSealFailed;

  for (size_t i = 0; i < packet_count_; ++i) source.on_packet_sent(sent_[i]);
  out.datagram_count = datagram_count_;
  for (size_t i = 0; i < datagram_count_; ++i) {
    out.lengths[i] = static_cast<uint16_t>(datagrams_[i].length);
  }
  return BurstStatus::kOk;
}

}  // namespace dpquic::transmit
