// The send path: the connection as the burst builder's TransmitSource
// (see quic/transmit/transmit_source.h) through one Burst at a time, frame
// priorities and scheduling.
//
// Frame order within a packet: CONNECTION_CLOSE alone when closing; else
// ACK, path validation, CRYPTO (lost ranges first), connection-level control
// frames, then streams round-robin (each stream's control frames before its
// data), DATAGRAMs, and a PING when a probe carried nothing ack-eliciting.
//
// Bulk runs. Once a 1-RTT packet built the general way leaves nothing owed
// on the active path but stream data, and the scheduler's front stream has
// more, the rest of the burst is a run of that stream's data: each packet is
// its STREAM frame(s) alone, and no other check runs until the run ends.
// Within one burst nothing but the burst's own packets changes what is owed
// (see transmit_source.h), so skipping the checks changes no packet's
// contents: the run ends as soon as the stream's own sending makes something
// else due (its data or credit runs out, a BLOCKED frame), and the general
// path takes over from the next packet.

#include <algorithm>
#include <cstring>

#include "quic/conn/connection.h"
#include "quic/conn/connection_stream.h"
#include "quic/hot_path.h"
#include "quic/wire/frame_codec.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::PacketNumberSpace;
using wire::PacketType;

namespace {

bool encode(wire::ByteWriter& writer, const wire::Frame& frame) {
  return wire::encode_frame(writer, frame);
}

// ACK-only packets in a row after which the next one carries a PING.
constexpr uint32_t kMaxAckOnlyRun = 20;
// One 1-RTT packet number in every kMinSkipInterval to kMinSkipInterval +
// kSkipIntervalSpread - 1 is skipped (optimistic-ACK detection): rare
// enough that the peer's extra ACK ranges and immediate ACKs cost nothing.
constexpr uint32_t kMinSkipInterval = 128;
constexpr uint32_t kSkipIntervalSpread = 256;

// A 1-RTT packet with one PATH_CHALLENGE or PATH_RESPONSE, without its DCID:
// first byte, a 4-byte packet number at most, the 9-byte frame, AEAD tag.
constexpr uint64_t kSmallestPathFramePacket = 1 + 4 + 9 + crypto::kAeadTagLength;

PacketType packet_type_of(EncryptionLevel level) {
  switch (level) {
    case EncryptionLevel::kInitial: return PacketType::kInitial;
    case EncryptionLevel::kEarlyData: return PacketType::kZeroRtt;
    case EncryptionLevel::kHandshake: return PacketType::kHandshake;
    default: return PacketType::kOneRtt;
  }
}

}  // namespace

class Connection::BurstSource final : public transmit::TransmitSource {
 public:
  BurstSource(Connection& connection, Burst& burst) : connection_(connection), burst_(burst) {}
  bool next_packet(EncryptionLevel level, const transmit::SendAllowance& allowance,
                   transmit::PacketHeader& header) override {
    return connection_.next_packet(burst_, level, allowance, header);
  }
  transmit::PacketContents write_frames(EncryptionLevel level,
                                        transmit::PacketPayloadWriter& writer,
                                        const transmit::SendAllowance& allowance) override {
    return connection_.write_frames(burst_, level, writer, allowance);
  }
  void on_packet_sent(const transmit::SentPacketInfo& packet) override {
    connection_.on_packet_sent(burst_, packet);
  }

 private:
  Connection& connection_;
  Burst& burst_;
};

transmit::BurstStatus Connection::poll_transmit(Instant now, transmit::BurstBuilder& builder,
                                                const transmit::BurstBuffers& buffers,
                                                transmit::BurstDescriptor& out,
                                                PathAddresses& path) {
  now_ = now;
  out.datagram_count = 0;
  pacing_deadline_ = kNever;
  if (state_ == ConnectionState::kClosed || state_ == ConnectionState::kDraining) {
    return transmit::BurstStatus::kOk;
  }
  if (state_ == ConnectionState::kClosing && !close_frame_pending_) {
    return transmit::BurstStatus::kOk;
  }
  maybe_update_keys();
  Burst burst;
  burst.now = now;
  burst.path = state_ == ConnectionState::kClosing ? active_path_ : choose_burst_path();
  path = paths_.path(burst.path).addresses;

  transmit::BurstBuffers lent = buffers;
  const uint64_t cwnd = cc_->congestion_window();
  size_segments(burst, lent, cwnd);
  // A probe in flight holds its share of the window (RFC 9000 §14.4) though
  // loss detection does not count it (its loss is no congestion signal).
  const uint64_t in_flight = loss_.bytes_in_flight() + path_mtu_.probe_size();
  if (const size_t probe = mtu_probe_due(burst, cwnd, in_flight); probe != 0) {
    return send_mtu_probe(burst, builder, lent, probe, out);
  }
  transmit::BurstParams params;
  if (!plan_burst(burst, lent, cwnd, in_flight, params)) return transmit::BurstStatus::kOk;

  const transmit::BurstStatus status = build_burst(burst, builder, lent, params, out);
  if (status == transmit::BurstStatus::kSealFailed) return status;
  // Fewer datagrams than pacing allowed, with window to spare: nothing was
  // left to send, so delivery samples of this flight are app-limited.
  if (out.datagram_count < params.max_datagrams &&
      loss_.bytes_in_flight() + lent.segment_size <= cwnd) {
    loss_.on_app_limited();
  }
  // Only the active path's limit holds probes back: another path at its
  // limit must not stop loss recovery on the active one.
  if (role_ == wire::Role::kServer && burst.path == active_path_ &&
      !paths_.path(burst.path).validated &&
      paths_.amplification_budget(burst.path) < wire::kMinInitialDatagramSize) {
    loss_.set_amplification_blocked(now, true);
  }
  return status;
}

uint32_t Connection::choose_burst_path() const {
  // A path other than the active one with validation frames owed gets a
  // burst of its own (RFC 9000 §8.2: responses go out on the path the
  // challenge came from).
  for (uint32_t id = 0; id < PathTable::kMaxPaths; ++id) {
    // A path without a peer CID cannot be sent on (RFC 9000 §9.5), and one
    // whose anti-amplification budget cannot carry a PATH_CHALLENGE or
    // PATH_RESPONSE packet waits for the peer: picking it would build
    // nothing and starve the active path (its ACKs, probes) meanwhile.
    if (id == active_path_ || !paths_.exists(id) || !paths_.path(id).has_peer_cid) continue;
    if (role_ == wire::Role::kServer &&
        paths_.amplification_budget(id) < kSmallestPathFramePacket + path_dcid(id).size()) {
      continue;
    }
    if (paths_.response_due(id) || paths_.challenge_due(id)) return id;
  }
  return active_path_;
}

void Connection::size_segments(const Burst& burst, transmit::BurstBuffers& lent, uint64_t cwnd) {
  const uint64_t peer_max = peer_params_.max_udp_payload_size;
  if (peer_max >= wire::kMinInitialDatagramSize && peer_max < lent.segment_size) {
    lent.segment_size = static_cast<size_t>(peer_max);
  }
  // PMTU discovery (RFC 8899): probes up to what the peer accepts, we allow
  // and the caller can hold; data at the path's confirmed size.
  size_t ceiling = std::min({config_.max_datagram_size, lent.capacity, transmit::kMaxSegmentSize});
  if (peer_max >= wire::kMinInitialDatagramSize) {
    ceiling = static_cast<size_t>(std::min<uint64_t>(ceiling, peer_max));
  }
  path_mtu_.set_ceiling(ceiling);
  if (path_mtu_.enabled() && burst.path == active_path_) {
    // At most a quarter of the window per datagram, not below the base:
    // ack-eliciting data waits for a full segment of window (burst_builder.h),
    // so a datagram larger than the window would never leave.
    const size_t size =
        std::min<size_t>(path_mtu_.current(), std::max<uint64_t>(path_mtu_.base(), cwnd / 4));
    lent.segment_size = std::min(lent.segment_size, size);
  } else if (path_mtu_.enabled()) {
    lent.segment_size = std::min(lent.segment_size, path_mtu_.base());
  }
}

bool Connection::plan_burst(Burst& burst, const transmit::BurstBuffers& lent, uint64_t cwnd,
                            uint64_t in_flight, transmit::BurstParams& params) {
  const Instant now = burst.now;
  params.path_id = burst.path;
  params.ecn = ecn_.codepoint_to_send();
  burst.ecn_marked = params.ecn != transmit::EcnCodepoint::kNotEct;
  // The anti-amplification limit protects a peer address we have not
  // validated (RFC 9000 §8, §9.3): only a server sees its peer move. A
  // client probing a path of its own (migration, preferred address) sends
  // to the server's address, which it trusts.
  params.amplification_budget =
      role_ == wire::Role::kServer ? paths_.amplification_budget(burst.path) : UINT64_MAX;
  params.congestion_budget = cwnd > in_flight ? cwnd - in_flight : 0;
  bool probing = false;
  for (int s = 0; s < wire::kPacketNumberSpaceCount; ++s) {
    if (loss_.probes_pending(static_cast<PacketNumberSpace>(s)) != 0) probing = true;
  }
  if (probing || state_ == ConnectionState::kClosing) params.congestion_budget = UINT64_MAX;
  // PATH_CHALLENGE and PATH_RESPONSE go out even with the window full (a
  // migration resets it while the old path's packets are still in flight):
  // one datagram carrying nothing else (RFC 9000 §9.4 allows exceptions for
  // probe packets).
  const bool path_frames_due =
      state_ != ConnectionState::kClosing &&
      (paths_.response_due(burst.path) || paths_.challenge_due(burst.path));
  burst.path_frames_only = path_frames_due && params.congestion_budget < lent.segment_size;

  if (const uint64_t rate = cc_->pacing_rate(); rate != 0) {
    pacer_.update_rate(rate, cwnd, lent.segment_size);
  } else {
    pacer_.update(cwnd, loss_.rtt().smoothed_rtt(), lent.segment_size);
  }
  size_t allowed = pacer_.datagrams_allowed(now);
  if (allowed == 0 || burst.path_frames_only) {
    // ACKs, probes, path validation and closes are not held back by pacing.
    bool urgent = probing || path_frames_due || state_ == ConnectionState::kClosing;
    for (const Space& sp : spaces_) {
      if (!sp.discarded && sp.acks.ack_required(now)) urgent = true;
    }
    if (!urgent) {
      pacing_deadline_ = pacer_.next_send_time(now);
      return false;
    }
    allowed = 1;
  }
  if (burst.path_frames_only) {
    params.congestion_budget = lent.segment_size;
    allowed = 1;
  }
  params.max_datagrams = std::min(allowed, lent.datagrams.size());
  return true;
}

transmit::BurstStatus Connection::build_burst(Burst& burst, transmit::BurstBuilder& builder,
                                              const transmit::BurstBuffers& buffers,
                                              const transmit::BurstParams& params,
                                              transmit::BurstDescriptor& out) {
  const Instant now = burst.now;
  BurstSource source(*this, burst);
  const transmit::BurstStatus status = builder.build(source, buffers, params, out);
  if (status == transmit::BurstStatus::kSealFailed) {
    enter_closing(now, transport_error(wire::TransportErrorCode::kInternalError, "sealing failed"),
                  false, 0);
    return status;
  }
  const uint64_t total = out.total_bytes();
  if (total != 0) {
    pacer_.on_datagram_sent(total);
    paths_.path(params.path_id).bytes_sent += total;
    stats_.bytes_sent += total;
    if (state_ == ConnectionState::kClosing) close_frame_pending_ = close_levels_pending_ != 0;
    if (tracer_) trace_metrics(now);
  }
  return status;
}

DPQUIC_INLINE_STEP bool Connection::next_packet(const Burst& burst, EncryptionLevel level,
                                                const transmit::SendAllowance& allowance,
                                                transmit::PacketHeader& header) {
  const crypto::PacketKeys* keys = keys_.write_keys(level);
  if (keys == nullptr) return false;
  const PacketNumberSpace space_id = space_of_level(level);
  Space& sp = space(space_id);
  if (in_bulk_run(burst, level, allowance)) {
    // The run's first packet set every other field, which the builder keeps.
    header.keys = keys;
    header.long_header = false;
    header.short_fields.packet_number = sp.next_packet_number;
    return true;
  }
  if (sp.discarded) return false;
  if (level == EncryptionLevel::kEarlyData &&
      keys_.write_keys(EncryptionLevel::kApplication) != nullptr) {
    return false;  // 1-RTT keys supersede 0-RTT
  }
  if (burst.mtu_probe_size != 0) {
    if (level != EncryptionLevel::kApplication) return false;  // a probe is 1-RTT alone
  } else if (state_ == ConnectionState::kClosing) {
    // CONNECTION_CLOSE at each level queue_close_frames() chose.
    if ((close_levels_pending_ & (1u << static_cast<unsigned>(level))) == 0) return false;
  } else if (!level_wants_to_send(burst, level, allowance.ack_eliciting)) {
    return false;
  }

  // Long headers only during the handshake (their keys are gone after).
  if (level != EncryptionLevel::kApplication && handshake_ == nullptr) return false;
  header.keys = keys;
  const std::optional<uint64_t> largest_acked = loss_.largest_acked(space_id);
  if (level == EncryptionLevel::kApplication) {
    header.long_header = false;
    wire::ShortHeaderFields fields;
    fields.dcid = path_dcid(burst.path);  // the path's own CID (§9.5)
    fields.packet_number = sp.next_packet_number;
    fields.largest_acked = largest_acked;
    fields.key_phase = keys_.write_key_phase();
    header.short_fields = fields;
  } else {
    header.long_header = true;
    wire::LongHeaderFields fields;
    fields.version = version_;
    fields.type = level == EncryptionLevel::kInitial     ? PacketType::kInitial
                  : level == EncryptionLevel::kEarlyData ? PacketType::kZeroRtt
                                                         : PacketType::kHandshake;
    fields.dcid = path_dcid(burst.path);  // the path's own CID (§9.5)
    fields.scid = handshake_->local_initial_cid.span();
    if (level == EncryptionLevel::kInitial && role_ == wire::Role::kClient) {
      fields.token = handshake_->initial_token;
    }
    fields.packet_number = sp.next_packet_number;
    fields.largest_acked = largest_acked;
    header.long_fields = fields;
  }
  return true;
}

bool Connection::level_wants_to_send(const Burst& burst, EncryptionLevel level,
                                     bool ack_eliciting_allowed) const {
  const PacketNumberSpace space_id = space_of_level(level);
  const Space& sp = space(space_id);
  const auto s = static_cast<size_t>(space_id);
  if (level != EncryptionLevel::kEarlyData) {
    if (!burst.ack_written[s] && sp.acks.ack_required(burst.now)) return true;
    if (burst.probes_written[s] < loss_.probes_pending(space_id)) return true;
  }
  if (!ack_eliciting_allowed) return false;
  if (level == EncryptionLevel::kEarlyData) {
    return !send_queue_.empty() || !control_queue_.empty() || !datagrams_out_.empty();
  }
  if (tls_ != nullptr &&
      (!tls_->pending_handshake_data(level).empty() || !sp.crypto_lost.empty())) {
    return true;
  }
  if (level == EncryptionLevel::kApplication) return application_wants_to_send(burst, true);
  return false;
}

bool Connection::application_wants_to_send(const Burst& burst, bool ack_eliciting_allowed) const {
  if (!ack_eliciting_allowed) return false;
  if (paths_.response_due(burst.path) || paths_.challenge_due(burst.path)) return true;
  if (burst.path != active_path_) return false;
  // Streams with data first: then the rest of the checks need not run.
  return !send_queue_.empty() || connection_frames_due();
}

bool Connection::connection_frames_due() const {
  return !control_queue_.empty() || handshake_done_pending_ || new_token_pending_ ||
         max_data_pending_ || keep_alive_pending_ || receive_window_.update_due() ||
         stream_limits_.max_streams_due(StreamDirection::kBidirectional) ||
         stream_limits_.max_streams_due(StreamDirection::kUnidirectional) ||
         stream_limits_.streams_blocked_due(StreamDirection::kBidirectional) ||
         stream_limits_.streams_blocked_due(StreamDirection::kUnidirectional) ||
         local_cids_.new_cid_frame_due() || peer_cids_.retire_frame_due() ||
         send_credit_.blocked_frame_due() || !datagrams_out_.empty();
}

DPQUIC_INLINE_STEP transmit::PacketContents Connection::write_frames(
    Burst& burst, EncryptionLevel level, transmit::PacketPayloadWriter& writer,
    const transmit::SendAllowance& allowance) {
  const PacketNumberSpace space_id = space_of_level(level);
  Space& sp = space(space_id);
  if (in_bulk_run(burst, level, allowance)) return write_bulk_packet(burst, sp, writer);
  transmit::PacketContents contents;
  wire::ByteWriter& frames = writer.frames();
  sent_frames_.begin_packet();
  PendingPacket pending;
  burst.data_slot = Burst::kNoSlot;

  if (burst.mtu_probe_size != 0) {
    // A PMTU probe: PING, padded by the builder to exactly the probe size
    // (RFC 9000 §14.4); nothing else, so its loss costs no data.
    if (write_ping(frames, contents)) {
      contents.pad_to_segment = true;
      pending.mtu_probe = true;
    }
  } else if (state_ == ConnectionState::kClosing) {
    if (write_close_frame(level, frames)) {
      contents.connection_close = true;
      close_levels_pending_ &= static_cast<uint8_t>(~(1u << static_cast<unsigned>(level)));
    }
  } else {
    write_ack(burst, level, sp, frames, pending);
    const bool probe =
        level != EncryptionLevel::kEarlyData &&
        burst.probes_written[static_cast<size_t>(space_id)] < loss_.probes_pending(space_id);
    if (allowance.ack_eliciting || probe) {
      write_eliciting_frames(burst, level, sp, writer, probe, contents, pending);
    }
    // RFC 9000 §13.2.4: the peer need not acknowledge ACK-only packets, and
    // each stays in the sent-packet ring until a later packet is
    // acknowledged; a peer that only ever gets ACKs from us would make that
    // ring grow for the rest of the connection. Now and then a PING makes
    // one acknowledged.
    if (level == EncryptionLevel::kApplication && pending.ack_written && !contents.ack_eliciting &&
        allowance.ack_eliciting && sp.ack_only_run >= kMaxAckOnlyRun) {
      (void)write_ping(frames, contents);
    }
  }
  if (writer.written() == 0) {
    sent_frames_.abandon_packet();
    return contents;
  }
  finish_packet(burst, level, sp, frames, contents, pending);
  if (level == EncryptionLevel::kApplication && contents.ack_eliciting && !pending.probe &&
      !pending.path_challenge && burst.mtu_probe_size == 0 && state_ != ConnectionState::kClosing) {
    maybe_start_bulk_run(burst, sp);
  }
  return contents;
}

DPQUIC_INLINE_STEP bool Connection::in_bulk_run(const Burst& burst, EncryptionLevel level,
                                                const transmit::SendAllowance& allowance) const {
  return burst.bulk_slot != Burst::kNoSlot && level == EncryptionLevel::kApplication &&
         allowance.ack_eliciting;
}

void Connection::maybe_start_bulk_run(Burst& burst, const Space& sp) {
  const auto s = static_cast<size_t>(PacketNumberSpace::kApplication);
  const bool only_stream_data =
      !burst.path_frames_only && burst.path == active_path_ && !send_queue_.empty() &&
      burst.probes_written[s] >= loss_.probes_pending(PacketNumberSpace::kApplication) &&
      !ack_due(burst, EncryptionLevel::kApplication, sp) && !paths_.response_due(burst.path) &&
      !paths_.challenge_due(burst.path) && sp.crypto_lost.empty() &&
      (tls_ == nullptr || tls_->pending_handshake_data(EncryptionLevel::kApplication).empty()) &&
      !connection_frames_due();
  // The stream that just wrote is the front again: the general path would
  // pick it for every following packet too (a non-incremental stream, or an
  // incremental one alone at its level: stream_scheduler.h).
  if (!only_stream_data || send_queue_.front() != burst.data_slot) return;
  const Stream* stream = stream_slots_[burst.data_slot].get();
  if (stream != nullptr && stream->send) burst.bulk_slot = burst.data_slot;
}

transmit::PacketContents Connection::write_bulk_packet(Burst& burst, Space& sp,
                                                       transmit::PacketPayloadWriter& writer) {
  transmit::PacketContents contents;
  Stream& stream = *stream_slots_[burst.bulk_slot];
  sent_frames_.begin_packet();
  write_stream_data(stream, writer);
  const bool more = writer.remaining() <= 8 && stream.send->data_due(send_credit_.available()) &&
                    !stream_control_due(stream) && !send_credit_.blocked_frame_due();
  if (!more) {
    end_bulk_run(burst, stream);
    // The stream's data ended mid-packet: the next streams fill the rest.
    if (writer.remaining() > 8) (void)write_stream_frames(writer, contents);
  }
  if (writer.written() == 0) {
    sent_frames_.abandon_packet();
    return contents;
  }
  contents.ack_eliciting = true;
  contents.in_flight = true;
  PendingPacket pending;
  finish_packet(burst, EncryptionLevel::kApplication, sp, writer.frames(), contents, pending);
  return contents;
}

void Connection::end_bulk_run(Burst& burst, Stream& stream) {
  burst.bulk_slot = Burst::kNoSlot;
  // The run's stream stayed the scheduler's front throughout: take it off
  // and queue it again for whatever it still owes, as the general path does
  // after each packet.
  send_queue_.pop();
  schedule_stream(stream);
  free_stream_if_done(stream);
}

DPQUIC_INLINE_STEP bool Connection::ack_due(const Burst& burst, EncryptionLevel level,
                                            const Space& sp) const {
  return level != EncryptionLevel::kEarlyData && sp.acks.has_received() &&
         !burst.ack_written[static_cast<size_t>(space_of_level(level))] &&
         (sp.acks.has_ack_to_send() || sp.acks.ack_required(burst.now));
}

bool Connection::write_ping(wire::ByteWriter& frames, transmit::PacketContents& contents) {
  wire::Frame ping;
  ping.type = wire::FrameType::kPing;
  if (!encode(frames, ping)) return false;
  contents.ack_eliciting = true;
  contents.in_flight = true;
  return true;
}

DPQUIC_INLINE_STEP void Connection::write_ack(Burst& burst, EncryptionLevel level, Space& sp,
                                              wire::ByteWriter& frames, PendingPacket& pending) {
  if (!ack_due(burst, level, sp)) return;
  const uint64_t largest = sp.acks.largest_received();
  if (sp.acks.write_ack_frame(frames, burst.now) == 0) return;
  pending.ack_written = true;
  burst.ack_written[static_cast<size_t>(space_of_level(level))] = true;
  sent_frames_.add(SentFrame{.offset = largest, .type = SentFrameType::kAck});
  if (level == EncryptionLevel::kApplication) keys_.on_ack_sent(largest);
}

DPQUIC_INLINE_STEP void Connection::write_eliciting_frames(
    Burst& burst, EncryptionLevel level, Space& sp, transmit::PacketPayloadWriter& writer,
    bool probe, transmit::PacketContents& contents, PendingPacket& pending) {
  const size_t before = writer.written();
  size_t& probes_written = burst.probes_written[static_cast<size_t>(space_of_level(level))];
  if (level == EncryptionLevel::kEarlyData) {
    (void)write_stream_frames(writer, contents);
  } else {
    if (level == EncryptionLevel::kApplication)
      write_path_frames(burst, writer.frames(), contents, pending);
    // A second probe repeats the unacknowledged CRYPTO data when the first
    // one carried all of it (RFC 9002 §6.2.4: two probes so that a single
    // loss does not cost another, doubled, PTO).
    if (probe && probes_written != 0 && sp.crypto_lost.empty() &&
        level != EncryptionLevel::kApplication) {
      for (const RangeSet::Range& range : sp.crypto_in_flight.ranges()) {
        sp.crypto_lost.insert(range.begin, range.end);
      }
      sp.crypto_in_flight.clear();
    }
    if (!burst.path_frames_only) write_crypto_frames(level, writer, contents);
    if (level == EncryptionLevel::kApplication && burst.path == active_path_ &&
        !burst.path_frames_only) {
      write_control_frames(writer, contents);
      burst.data_slot = write_stream_frames(writer, contents);
    }
  }
  if (probe && writer.written() == before) (void)write_ping(writer.frames(), contents);
  if (writer.written() != before) {
    contents.ack_eliciting = true;
    contents.in_flight = true;
    pending.probe = probe;
    if (probe) ++probes_written;
  }
}

DPQUIC_INLINE_STEP void Connection::write_path_frames(const Burst& burst, wire::ByteWriter& frames,
                                                      transmit::PacketContents& contents,
                                                      PendingPacket& pending) {
  if (paths_.response_due(burst.path) && paths_.write_path_response(burst.path, frames)) {
    contents.needs_initial_padding = true;  // RFC 9000 §8.2.2: 1200 bytes
  }
  if (paths_.challenge_due(burst.path) && paths_.write_path_challenge(burst.path, frames)) {
    paths_.on_challenge_sent(burst.path);
    sent_frames_.add(SentFrame{.stream_id = burst.path, .type = SentFrameType::kPathChallenge});
    contents.needs_initial_padding = true;  // RFC 9000 §8.2.1
    pending.path_challenge = true;
  }
}

DPQUIC_INLINE_STEP void Connection::finish_packet(Burst& burst, EncryptionLevel level, Space& sp,
                                                  const wire::ByteWriter& frames,
                                                  transmit::PacketContents& contents,
                                                  PendingPacket& pending) {
  if (level == EncryptionLevel::kInitial &&
      (role_ == wire::Role::kClient || contents.ack_eliciting)) {
    contents.needs_initial_padding = true;  // RFC 9000 §14.1
  }
  if (tracer_) {
    tracer_->on_packet_built(burst.now, packet_type_of(level), sp.next_packet_number,
                             frames.written());
  }
  pending.frames = sent_frames_.end_packet();
  pending_[burst.pending_count++] = pending;
  ++sp.next_packet_number;
  // RFC 9000 §21.4: a 1-RTT packet number skipped now and then exposes a peer
  // acknowledging packets it never received (an optimistic ACK, to inflate
  // our congestion window): recovery takes an ACK of a skipped number for
  // PROTOCOL_VIOLATION (recovery/sent_packets.h).
  if (level == EncryptionLevel::kApplication) {
    if (sp.packets_until_skip == 0) {
      sp.packets_until_skip =
          kMinSkipInterval + static_cast<uint32_t>(core_.random->next_u64() % kSkipIntervalSpread);
    } else if (--sp.packets_until_skip == 0) {
      ++sp.next_packet_number;
    }
  }
}

DPQUIC_INLINE_STEP void Connection::on_packet_sent(Burst& burst,
                                                   const transmit::SentPacketInfo& info) {
  if (tracer_) {
    tracer_->on_packet_sent(burst.now, packet_type_of(info.level), info.packet_number, info.size);
  }
  const PendingPacket pending = pending_[burst.pending_sent++];
  if (!track_sent_packet(burst, info, pending)) return;
  const PacketNumberSpace space_id = space_of_level(info.level);
  Space& sp = space(space_id);
  if (pending.mtu_probe) {
    path_mtu_.on_probe_sent(burst.now, info.packet_number, burst.mtu_probe_size,
                            loss_.pto_duration(PacketNumberSpace::kApplication));
  }
  if (pending.ack_written) (void)sp.acks.on_ack_sent(burst.now);
  sp.ack_only_run = info.ack_eliciting ? 0 : sp.ack_only_run + 1;
  if (pending.probe && info.ack_eliciting) loss_.on_probe_sent(space_id);
  ecn_.on_packet_sent(space_id, burst.ecn_marked);
  if (burst.ecn_marked) ecn_marked_[static_cast<size_t>(space_id)].add(info.packet_number);
  // A 1-RTT packet ends its datagram, so its size alone reaching 1200 bytes
  // shows the datagram did (RFC 9000 §8.2.1).
  if (pending.path_challenge && info.size >= wire::kMinInitialDatagramSize) {
    paths_.path(burst.path).challenge_padded = true;
  }
  if (info.ack_eliciting) {
    // RFC 9000 §10.1: the idle timer restarts on the first ack-eliciting
    // packet sent after a packet was received.
    if (!ack_eliciting_since_receive_) reset_idle_timer(burst.now);
    ack_eliciting_since_receive_ = true;
    if (config_.keep_alive_interval != 0 && handshake_confirmed_) {
      keep_alive_deadline_ = burst.now + config_.keep_alive_interval;
    }
  }
  if (space_id == PacketNumberSpace::kApplication && info.level == EncryptionLevel::kApplication) {
    ++packets_under_key_;
    if (!first_packet_in_phase_) first_packet_in_phase_ = info.packet_number;
  }
  ++stats_.packets_sent;
  // RFC 9001 §4.9.1: a client drops Initial keys when it first sends a
  // Handshake packet.
  if (role_ == wire::Role::kClient && info.level == EncryptionLevel::kHandshake &&
      !initial_discarded_) {
    discard_space(burst.now, PacketNumberSpace::kInitial);
  }
}

DPQUIC_INLINE_STEP bool Connection::track_sent_packet(const Burst& burst,
                                                      const transmit::SentPacketInfo& info,
                                                      const PendingPacket& pending) {
  const PacketNumberSpace space_id = space_of_level(info.level);
  recovery::SentPacket record;
  record.time_sent = burst.now;
  record.frames = pending.frames;
  record.size = static_cast<uint16_t>(info.size);
  record.ack_eliciting = info.ack_eliciting;
  record.in_flight = info.in_flight;
  if (pending.mtu_probe) {
    // A PMTU probe stays out of loss detection's accounting: its loss is no
    // congestion signal and does not count toward persistent congestion
    // (RFC 9000 §14.4, RFC 8899 §3 item 7), and it arms no PTO; PathMtu
    // times it out itself. poll_transmit counts it against the window.
    record.ack_eliciting = false;
    record.in_flight = false;
  }
  if (loss_.on_packet_sent(burst.now, space_id, info.packet_number, record)) return true;
  if (space(space_id).discarded) {
    // Sent after its keys were dropped in this burst: nothing to track.
    sent_frames_.consume(pending.frames, [](const SentFrame&) {});
    return false;
  }
  // The sent-packet ring is at its bound: the packet could never be
  // acknowledged or declared lost, so its frames would be stranded.
  enter_closing(
      burst.now,
      transport_error(wire::TransportErrorCode::kInternalError, "too many packets in flight"),
      false, 0);
  return false;
}

void Connection::MarkedRanges::add(uint64_t packet_number) {
  if (count != 0 && ranges[count - 1].second + 1 == packet_number) {
    ranges[count - 1].second = packet_number;
    return;
  }
  if (count == kMax) {
    std::copy(ranges.begin() + 1, ranges.end(), ranges.begin());
    --count;
  }
  ranges[count++] = {packet_number, packet_number};
}

bool Connection::MarkedRanges::contains(uint64_t packet_number) const {
  for (size_t i = 0; i < count; ++i) {
    if (packet_number >= ranges[i].first && packet_number <= ranges[i].second) return true;
  }
  return false;
}

}  // namespace dpquic::conn
