#pragma once
// The sending part of one stream (RFC 9000 §3.1, §4.1, §19.4, §19.8, §19.13).
//
// The application hands over refcounted chunks (transmit::Chunk); STREAM
// frames reference their bytes through PacketPayloadWriter, so stream data is
// never copied before the AEAD reads it. A chunk is kept until every byte up
// to its end is acknowledged, then released; a reset releases all at once.
//
// Offsets: everything below bytes_acked_contiguous() is acknowledged; the
// stream has sent up to sent_end() (the largest offset sent, which is the
// flow-control credit consumed and the final size of a reset) and holds
// queued data up to queued_end(). Lost ranges below sent_end() are sent again,
// lowest first, before new data; bytes acknowledged meanwhile are skipped.
//
// Per-frame paths never allocate: the chunk ring and the range sets grow by
// doubling only when the data in flight outgrows them (bounded by
// max_buffered), and keep their storage. A connection recycles a freed
// stream's object for its next stream (retire(), then reinitialize()), so
// opening streams does not allocate either once the storage exists; what a
// recycled object keeps is capped (kMaxRetainedChunkSlots, kMaxRetainedRanges).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "quic/conn/range_set.h"
#include "quic/transmit/chunk.h"
#include "quic/transmit/packet_writer.h"
#include "quic/wire/varint.h"

namespace dpquic::conn {

enum class SendStreamState : uint8_t {
  kReady,
  kSend,
  kDataSent,
  kDataRecvd,
  kResetSent,
  kResetRecvd
};

// What one sent STREAM frame carried; the connection keeps it with the packet
// and hands it back when the packet is acknowledged or declared lost.
struct StreamFrameRecord {
  uint64_t offset = 0;
  uint32_t length = 0;
  bool fin = false;
};

class SendStream {
 public:
  // A recycled stream keeps at most this many ring slots and ranges per
  // range set: far more than a short stream uses (8 of each at first, so
  // those never give storage back), little memory per stream slot. Writers
  // offer what writable_bytes() allows, which follows the peer's credit, so
  // a bulk stream's 4 MiB buffer holds chunks from 16 KiB up: 256 slots
  // (about 10 KiB) cover it. A ring that outgrows its first 8 slots grows
  // straight to 256, and the next bulk stream on the slot does not grow it
  // again.
  static constexpr size_t kMaxRetainedChunkSlots = 256;
  static constexpr size_t kMaxRetainedRanges = 64;
  // Bytes the stream queues beyond the peer's MAX_STREAM_DATA: enough that
  // data goes out as soon as the limit rises, before the application is
  // asked for more, and that STREAM_DATA_BLOCKED tells the peer we wait.
  // Past that the application keeps its data (a file server does not read
  // it yet): a peer that grants no credit pins no more than this.
  static constexpr uint64_t kSendAheadOfCredit = 16 * 1024;

  // peer_max_stream_data: the peer's initial limit for this stream.
  // max_buffered: bytes the application may queue beyond what is acknowledged
  // (back-pressure: write() refuses beyond it).
  SendStream(uint64_t stream_id, uint64_t peer_max_stream_data, uint64_t max_buffered);
  SendStream(const SendStream&) = delete;
  SendStream& operator=(const SendStream&) = delete;
  SendStream(SendStream&&) noexcept = default;
  SendStream& operator=(SendStream&&) noexcept = default;

  uint64_t id() const { return id_; }

  // --- Recycling ---
  // The connection freed the stream: releases every chunk now. The object
  // is not used again before reinitialize().
  void retire() { release_all_chunks(); }
  // Makes this a fresh stream, exactly as if constructed with these
  // arguments, but keeping the ring and the range sets' storage (trimmed
  // back to the initial size if it grew beyond the caps above). Chunks still
  // held are released.
  void reinitialize(uint64_t stream_id, uint64_t peer_max_stream_data, uint64_t max_buffered);

  // --- Application ---
  // Queues the chunk (keeping a reference until its bytes are acknowledged).
  // False, queueing nothing, after FIN or reset, beyond writable_bytes(), or
  // past the largest stream offset (2^62 - 1); except that while everything
  // queued is within the peer's limit a chunk up to the buffer room is taken
  // whole, even past writable_bytes() (so a stream holds at most one write
  // beyond kSendAheadOfCredit). A zero-length (or empty) chunk with fin sends
  // FIN alone; without fin it queues nothing and succeeds.
  bool write(transmit::Chunk chunk, bool fin);
  // What the stream takes now: the smaller of the buffer room
  // (max_buffered - queued but not yet acknowledged) and the peer's credit
  // (peer_max_stream_data + kSendAheadOfCredit - queued_end). Nonzero
  // whenever a write can succeed.
  uint64_t writable_bytes() const;
  // Abandons the stream: RESET_STREAM with final size sent_end(), nothing is
  // (re)transmitted afterwards and every chunk is released now. No effect in
  // a terminal or reset state (the first reset's code stays).
  void reset(uint64_t error_code);

  // --- Peer frames ---
  // MAX_STREAM_DATA: raises the limit (a lower value is ignored, §4.1).
  void on_max_stream_data(uint64_t limit);
  // STOP_SENDING: reset with the peer's code (§3.5), unless all data is
  // already acknowledged or the stream was reset.
  void on_stop_sending(uint64_t error_code);
  bool stop_sending_received() const { return stop_sending_received_; }
  uint64_t stop_sending_error() const { return stop_sending_error_; }

  // --- Transmit ---
  // Whether there is anything to send: lost ranges, new data within the
  // stream limit (and connection_credit > 0), a pending FIN, a RESET_STREAM
  // or a STREAM_DATA_BLOCKED.
  bool wants_to_send(uint64_t connection_credit) const;
  // The STREAM-frame part of wants_to_send(): lost ranges, new data within
  // the limits, or a pending FIN (what the stream scheduler orders).
  bool data_due(uint64_t connection_credit) const;
  // The control part: a RESET_STREAM or STREAM_DATA_BLOCKED is owed.
  bool control_due() const { return reset_frame_due() || blocked_frame_due(); }
  // Writes one STREAM frame from one chunk: retransmissions first (lowest
  // offset), else new data within the stream limit and connection_credit,
  // else a FIN alone. `record` says what it carried; `new_bytes` is how many
  // bytes were never sent before (to be charged to the connection's credit).
  // False, writing nothing, if nothing is to be sent or nothing fits.
  bool write_stream_frame(transmit::PacketPayloadWriter& writer, uint64_t connection_credit,
                          StreamFrameRecord& record, uint64_t& new_bytes);
  // Marks the frame's bytes (and FIN) acknowledged and releases chunks that
  // end at or below bytes_acked_contiguous().
  void on_stream_frame_acked(const StreamFrameRecord& record);
  // Queues the frame's bytes not acknowledged meanwhile (and its FIN) for
  // retransmission; nothing after a reset.
  void on_stream_frame_lost(const StreamFrameRecord& record);

  // RESET_STREAM: due after reset() until sent; resent when lost.
  bool reset_frame_due() const { return reset_ && reset_frame_pending_; }
  bool write_reset_frame(wire::ByteWriter& writer);
  void on_reset_frame_acked();
  void on_reset_frame_lost();
  uint64_t reset_error_code() const { return reset_error_code_; }

  // STREAM_DATA_BLOCKED: once per stream limit value, when data is queued
  // beyond the limit and everything up to it has been sent.
  bool blocked_frame_due() const;
  bool write_blocked_frame(wire::ByteWriter& writer);
  void on_blocked_frame_lost();

  SendStreamState state() const;
  // kDataRecvd or kResetRecvd: the connection may free the stream.
  bool finished() const;

  uint64_t bytes_acked_contiguous() const { return acked_contiguous_; }
  uint64_t queued_end() const { return queued_end_; }
  // Largest offset sent: the flow-control credit this stream has used.
  uint64_t sent_end() const { return sent_end_; }
  uint64_t peer_max_stream_data() const { return peer_max_stream_data_; }
  // The final size once known: queued_end() after FIN, sent_end() at reset.
  bool final_size_known() const { return fin_queued_ || reset_; }
  uint64_t final_size() const { return reset_ ? reset_final_size_ : queued_end_; }
  // Bytes waiting for retransmission.
  uint64_t lost_bytes() const { return lost_.total_length(); }
  // Chunks held (not yet released), and the ring's slot count.
  size_t chunk_count() const { return chunk_count_; }
  size_t chunk_capacity() const { return ring_capacity_; }

 private:
  struct QueuedChunk {
    transmit::Chunk chunk;
    uint64_t offset = 0;  // stream offset of chunk.data()[0]
  };

  // A fresh stream on the given storage (ring empty, range sets cleared).
  SendStream(uint64_t stream_id, uint64_t peer_max_stream_data, uint64_t max_buffered,
             std::unique_ptr<QueuedChunk[]> ring, size_t ring_capacity, RangeSet acked_above,
             RangeSet lost);

  QueuedChunk& chunk_at(size_t index) { return ring_[(ring_head_ + index) & (ring_capacity_ - 1)]; }
  const QueuedChunk& chunk_at(size_t index) const {
    return ring_[(ring_head_ + index) & (ring_capacity_ - 1)];
  }
  // Index of the held chunk containing stream offset `offset` (which must be
  // in [lowest held offset, queued_end_)).
  size_t find_chunk(uint64_t offset) const;
  void push_chunk(transmit::Chunk chunk);
  void release_acked_chunks();
  void release_all_chunks();
  // One frame of [begin, end) from the chunk holding `begin`.
  bool write_range(transmit::PacketPayloadWriter& writer, uint64_t begin, uint64_t end,
                   bool retransmission, StreamFrameRecord& record, uint64_t& new_bytes);
  bool write_fin_only(transmit::PacketPayloadWriter& writer, StreamFrameRecord& record);
  bool fin_pending() const { return fin_queued_ && !fin_in_flight_ && !fin_acked_; }
  // max_buffered - (queued but not yet acknowledged).
  uint64_t buffer_room() const;

  uint64_t id_;
  uint64_t peer_max_stream_data_;
  uint64_t max_buffered_;

  // Chunk ring: a power-of-two number of slots, in stream-offset order.
  std::unique_ptr<QueuedChunk[]> ring_;
  size_t ring_capacity_ = 0;
  size_t ring_head_ = 0;
  size_t chunk_count_ = 0;
  // Ring slot of the chunk find_chunk() found last: sending walks the
  // chunks in order, so the next lookup is almost always there or in the
  // next slot (a binary search over a large ring misses the cache).
  mutable size_t find_hint_slot_ = 0;

  uint64_t queued_end_ = 0;
  uint64_t sent_end_ = 0;
  uint64_t acked_contiguous_ = 0;
  RangeSet acked_above_;  // acknowledged ranges above acked_contiguous_
  RangeSet lost_;         // to retransmit; never holds acknowledged bytes

  bool sent_any_ = false;
  bool fin_queued_ = false;
  bool fin_sent_ = false;       // a frame with FIN has been sent at least once
  bool fin_in_flight_ = false;  // ... and not since declared lost
  bool fin_acked_ = false;

  bool blocked_sent_ = false;
  uint64_t blocked_sent_limit_ = 0;

  bool stop_sending_received_ = false;
  uint64_t stop_sending_error_ = 0;

  bool reset_ = false;
  bool reset_frame_pending_ = false;
  bool reset_acked_ = false;
  uint64_t reset_error_code_ = 0;
  uint64_t reset_final_size_ = 0;
};

}  // namespace dpquic::conn
