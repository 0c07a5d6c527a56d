#include "quic/conn/send_stream.h"

#include <algorithm>
#include <span>
#include <utility>

#include "quic/wire/frame_codec.h"
#include "quic/wire/frames.h"

namespace dpquic::conn {
namespace {

// Initial ring slots. A stream with more chunks in flight is a bulk stream:
// its ring grows at once to what a bulk stream needs
// (kMaxRetainedChunkSlots), and doubles only beyond that. Growing in steps
// allocated again each time the bytes in flight first reached a new high,
// which a download can do well after its start.
constexpr size_t kInitialChunkSlots = 8;

}  // namespace

SendStream::SendStream(uint64_t stream_id, uint64_t peer_max_stream_data, uint64_t max_buffered)
    : SendStream(stream_id, peer_max_stream_data, max_buffered,
                 std::make_unique<QueuedChunk[]>(kInitialChunkSlots), kInitialChunkSlots,
                 RangeSet(), RangeSet()) {}

SendStream::SendStream(uint64_t stream_id, uint64_t peer_max_stream_data, uint64_t max_buffered,
                       std::unique_ptr<QueuedChunk[]> ring, size_t ring_capacity,
                       RangeSet acked_above, RangeSet lost)
    : id_(stream_id),
      peer_max_stream_data_(peer_max_stream_data),
      max_buffered_(max_buffered),
      ring_(std::move(ring)),
      ring_capacity_(ring_capacity),
      acked_above_(std::move(acked_above)),
      lost_(std::move(lost)) {}

void SendStream::reinitialize(uint64_t stream_id, uint64_t peer_max_stream_data,
                              uint64_t max_buffered) {
  release_all_chunks();
  if (ring_capacity_ > kMaxRetainedChunkSlots) {
    ring_ = std::make_unique<QueuedChunk[]>(kInitialChunkSlots);
    ring_capacity_ = kInitialChunkSlots;
  }
  acked_above_.clear_and_trim(kMaxRetainedRanges);
  lost_.clear_and_trim(kMaxRetainedRanges);
  // Every other member back to its initial value, by construction rather
  // than by a list that could miss one.
  *this = SendStream(stream_id, peer_max_stream_data, max_buffered, std::move(ring_),
                     ring_capacity_, std::move(acked_above_), std::move(lost_));
}

// --- Chunk ring -----------------------------------------------------------------

void SendStream::push_chunk(transmit::Chunk chunk) {
  if (chunk_count_ == ring_capacity_) {
    // Full: grow, moving the held chunks to the front of the new ring.
    const size_t capacity =
        ring_capacity_ < kMaxRetainedChunkSlots ? kMaxRetainedChunkSlots : ring_capacity_ * 2;
    auto bigger = std::make_unique<QueuedChunk[]>(capacity);
    for (size_t i = 0; i < chunk_count_; ++i) bigger[i] = std::move(chunk_at(i));
    ring_ = std::move(bigger);
    ring_capacity_ = capacity;
    ring_head_ = 0;
    find_hint_slot_ = 0;
  }
  QueuedChunk& slot = chunk_at(chunk_count_);
  slot.offset = queued_end_;
  slot.chunk = std::move(chunk);
  ++chunk_count_;
}

size_t SendStream::find_chunk(uint64_t offset) const {
  const size_t mask = ring_capacity_ - 1;
  const auto holds = [&](size_t index) {
    const QueuedChunk& held = chunk_at(index);
    return held.offset <= offset && offset - held.offset < held.chunk.size();
  };
  const size_t hinted = (find_hint_slot_ - ring_head_) & mask;
  for (size_t index = hinted; index < chunk_count_ && index <= hinted + 1; ++index) {
    if (holds(index)) {
      find_hint_slot_ = (ring_head_ + index) & mask;
      return index;
    }
  }
  // Chunks tile the held offsets in order: binary search for the last chunk
  // starting at or below `offset`.
  size_t low = 0;
  size_t high = chunk_count_;  // the answer is in [low, high)
  while (high - low > 1) {
    const size_t middle = low + (high - low) / 2;
    if (chunk_at(middle).offset <= offset) {
      low = middle;
    } else {
      high = middle;
    }
  }
  find_hint_slot_ = (ring_head_ + low) & mask;
  return low;
}

void SendStream::release_acked_chunks() {
  while (chunk_count_ != 0) {
    QueuedChunk& oldest = chunk_at(0);
    if (oldest.offset + oldest.chunk.size() > acked_contiguous_) break;
    oldest.chunk.reset();
    ring_head_ = (ring_head_ + 1) & (ring_capacity_ - 1);
    --chunk_count_;
  }
}

void SendStream::release_all_chunks() {
  for (size_t i = 0; i < chunk_count_; ++i) chunk_at(i).chunk.reset();
  chunk_count_ = 0;
  ring_head_ = 0;
}

// --- Application ----------------------------------------------------------------

bool SendStream::write(transmit::Chunk chunk, bool fin) {
  if (reset_ || fin_queued_) return false;
  const uint64_t length = chunk.valid() ? chunk.size() : 0;
  // While nothing queued waits for credit, any chunk the buffer holds is
  // taken, however far past the credit it reaches: no chunk size can stall
  // a stream whose peer opens its window only as data arrives.
  const bool within_credit = length <= writable_bytes() ||
                             (queued_end_ <= peer_max_stream_data_ && length <= buffer_room());
  if (!within_credit || length > wire::kVarintMax - queued_end_) return false;
  if (length != 0) {
    push_chunk(std::move(chunk));
    queued_end_ += length;
  }
  if (fin) fin_queued_ = true;
  return true;
}

uint64_t SendStream::writable_bytes() const {
  if (reset_ || fin_queued_) return 0;
  const uint64_t credit_end = peer_max_stream_data_ + kSendAheadOfCredit;
  const uint64_t credit_room = queued_end_ >= credit_end ? 0 : credit_end - queued_end_;
  return std::min(buffer_room(), credit_room);
}

uint64_t SendStream::buffer_room() const {
  const uint64_t unacked = queued_end_ - acked_contiguous_;
  return unacked >= max_buffered_ ? 0 : max_buffered_ - unacked;
}

void SendStream::reset(uint64_t error_code) {
  if (reset_ || state() == SendStreamState::kDataRecvd) return;
  reset_ = true;
  reset_frame_pending_ = true;
  reset_error_code_ = error_code;
  reset_final_size_ = sent_end_;
  release_all_chunks();
  lost_.clear();
  acked_above_.clear();
}

// --- Peer frames ----------------------------------------------------------------

void SendStream::on_max_stream_data(uint64_t limit) {
  peer_max_stream_data_ = std::max(peer_max_stream_data_, limit);
}

void SendStream::on_stop_sending(uint64_t error_code) {
  if (!stop_sending_received_) {
    stop_sending_received_ = true;
    stop_sending_error_ = error_code;
  }
  reset(error_code);
}

// --- Transmit -------------------------------------------------------------------

bool SendStream::wants_to_send(uint64_t connection_credit) const {
  return data_due(connection_credit) || control_due();
}

bool SendStream::data_due(uint64_t connection_credit) const {
  if (reset_) return false;
  if (!lost_.empty()) return true;
  if (sent_end_ < queued_end_ && sent_end_ < peer_max_stream_data_ && connection_credit > 0) {
    return true;
  }
  return fin_pending() && sent_end_ == queued_end_;
}

bool SendStream::write_stream_frame(transmit::PacketPayloadWriter& writer,
                                    uint64_t connection_credit, StreamFrameRecord& record,
                                    uint64_t& new_bytes) {
  new_bytes = 0;
  if (reset_) return false;
  if (!lost_.empty()) {
    const RangeSet::Range& lost = lost_.front();
    return write_range(writer, lost.begin, lost.end, /*retransmission=*/true, record, new_bytes);
  }
  if (sent_end_ < queued_end_) {
    const uint64_t stream_end = std::min(queued_end_, peer_max_stream_data_);
    if (stream_end <= sent_end_ || connection_credit == 0) return false;  // flow control
    const uint64_t end = sent_end_ + std::min(stream_end - sent_end_, connection_credit);
    return write_range(writer, sent_end_, end, /*retransmission=*/false, record, new_bytes);
  }
  if (fin_pending()) return write_fin_only(writer, record);
  return false;
}

bool SendStream::write_range(transmit::PacketPayloadWriter& writer, uint64_t begin, uint64_t end,
                             bool retransmission, StreamFrameRecord& record, uint64_t& new_bytes) {
  const QueuedChunk& held = chunk_at(find_chunk(begin));
  const uint64_t chunk_end = held.offset + held.chunk.size();
  // A record holds 32 bits of length; packets are far smaller anyway.
  const uint64_t up_to = std::min<uint64_t>(std::min(end, chunk_end) - begin, UINT32_MAX);
  const uint64_t length = writer.write_stream_frame_up_to(
      id_, begin, held.chunk, static_cast<size_t>(begin - held.offset), static_cast<size_t>(up_to),
      fin_queued_ && begin + up_to == queued_end_);
  if (length == 0) return false;
  const bool fin = fin_queued_ && begin + length == queued_end_;
  if (retransmission) {
    lost_.remove(begin, begin + length);
  } else {
    sent_end_ += length;
    new_bytes = length;
  }
  if (fin) fin_sent_ = fin_in_flight_ = true;
  sent_any_ = true;
  record = StreamFrameRecord{begin, static_cast<uint32_t>(length), fin};
  return true;
}

bool SendStream::write_fin_only(transmit::PacketPayloadWriter& writer, StreamFrameRecord& record) {
  // No data, so no chunk: the header alone, in place. With a Length field,
  // which is valid wherever the frame ends up in the packet.
  if (!wire::encode_stream_frame_header(writer.frames(), id_, queued_end_, 0, /*fin=*/true,
                                        /*has_length=*/true)) {
    return false;
  }
  fin_sent_ = fin_in_flight_ = true;
  sent_any_ = true;
  record = StreamFrameRecord{queued_end_, 0, true};
  return true;
}

void SendStream::on_stream_frame_acked(const StreamFrameRecord& record) {
  if (reset_) return;
  if (record.fin) fin_acked_ = true;
  const uint64_t begin = record.offset;
  const uint64_t end = record.offset + record.length;
  if (end <= acked_contiguous_ || begin == end) return;
  lost_.remove(begin, end);
  if (begin > acked_contiguous_) {
    acked_above_.insert(begin, end);
    return;
  }
  acked_contiguous_ = end;
  // Absorb the ranges the new contiguous end now reaches, in one erase.
  size_t absorbed = 0;
  for (const RangeSet::Range& above : acked_above_.ranges()) {
    if (above.begin > acked_contiguous_) break;
    acked_contiguous_ = std::max(acked_contiguous_, above.end);
    ++absorbed;
  }
  acked_above_.pop_front(absorbed);
  release_acked_chunks();
}

void SendStream::on_stream_frame_lost(const StreamFrameRecord& record) {
  if (reset_) return;
  if (record.fin && !fin_acked_) fin_in_flight_ = false;
  // Requeue the parts of the range not acknowledged meanwhile: the gaps
  // between acknowledged ranges.
  uint64_t begin = std::max(record.offset, acked_contiguous_);
  const uint64_t end = record.offset + record.length;
  const std::span<const RangeSet::Range> acked = acked_above_.ranges();
  // From the first acknowledged range ending after `begin`.
  auto it =
      std::upper_bound(acked.begin(), acked.end(), begin,
                       [](uint64_t value, const RangeSet::Range& r) { return value < r.end; });
  for (; it != acked.end() && begin < end && it->begin < end; ++it) {
    if (it->begin > begin) lost_.insert(begin, it->begin);
    begin = std::max(begin, it->end);
  }
  if (begin < end) lost_.insert(begin, end);
}

// --- RESET_STREAM ---------------------------------------------------------------

bool SendStream::write_reset_frame(wire::ByteWriter& writer) {
  if (!reset_frame_due()) return false;
  wire::Frame frame;
  frame.type = wire::FrameType::kResetStream;
  frame.reset_stream = wire::ResetStreamFrame{id_, reset_error_code_, reset_final_size_};
  if (!wire::encode_frame(writer, frame)) return false;
  reset_frame_pending_ = false;
  return true;
}

void SendStream::on_reset_frame_acked() {
  if (!reset_) return;
  reset_acked_ = true;
  reset_frame_pending_ = false;
}

void SendStream::on_reset_frame_lost() {
  if (reset_ && !reset_acked_) reset_frame_pending_ = true;
}

// --- STREAM_DATA_BLOCKED --------------------------------------------------------

bool SendStream::blocked_frame_due() const {
  if (reset_ || sent_end_ < peer_max_stream_data_ || queued_end_ <= sent_end_) return false;
  return !(blocked_sent_ && blocked_sent_limit_ == peer_max_stream_data_);
}

bool SendStream::write_blocked_frame(wire::ByteWriter& writer) {
  if (!blocked_frame_due()) return false;
  wire::Frame frame;
  frame.type = wire::FrameType::kStreamDataBlocked;
  frame.stream_data_blocked = wire::StreamDataLimitFrame{id_, peer_max_stream_data_};
  if (!wire::encode_frame(writer, frame)) return false;
  blocked_sent_ = true;
  blocked_sent_limit_ = peer_max_stream_data_;
  sent_any_ = true;
  return true;
}

void SendStream::on_blocked_frame_lost() {
  // Only the frame for the current limit matters; one for an older limit is
  // stale once the peer has raised it.
  if (blocked_sent_ && blocked_sent_limit_ == peer_max_stream_data_) blocked_sent_ = false;
}

// --- State ----------------------------------------------------------------------

SendStreamState SendStream::state() const {
  if (reset_) return reset_acked_ ? SendStreamState::kResetRecvd : SendStreamState::kResetSent;
  if (fin_acked_ && acked_contiguous_ == queued_end_) return SendStreamState::kDataRecvd;
  if (fin_sent_) return SendStreamState::kDataSent;
  return sent_any_ ? SendStreamState::kSend : SendStreamState::kReady;
}

bool SendStream::finished() const {
  const SendStreamState current = state();
  return current == SendStreamState::kDataRecvd || current == SendStreamState::kResetRecvd;
}

}  // namespace dpquic::conn
