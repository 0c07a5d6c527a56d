#pragma once
// The server side of the perf protocol (draft-banks-quic-performance, ALPN
// "perf"): on each client-initiated bidirectional stream the client sends
// an 8-byte big-endian response size, optionally more bytes (an upload),
// then FIN. The server reads the stream to FIN, counting the upload, then
// sends exactly that many bytes and FIN.
//
// A stream whose FIN arrives before 8 bytes carries no request: the server
// answers it with RESET_STREAM(kPerfIncompleteRequest), so the client learns
// there will be no response (an empty FIN would look like a valid answer to
// a zero-size request). Streams the client resets or stops are abandoned the
// same way. Unidirectional streams are not part of the protocol: they are
// refused with STOP_SENDING(kPerfIncompleteRequest).
//
// Response bytes are the synthetic body (dataplane/app/synthetic_body.h),
// submitted as zero-copy views of the static block through ChunkPool::adopt:
// the server does no per-byte work beyond QUIC's own.
//
// State: one pooled record per live stream, found by (connection, stream)
// in a hash map; streams that can write now sit on a ready list that pump()
// works through (a stream refused with kBlocked leaves it until
// kStreamWritable). Nothing is allocated per stream once warm.
//
// Lifetime: connections keep references to the chunks until acknowledged,
// so the server must outlive them (the shard drops its connections with
// Endpoint::reset_connections() before destroying applications). After
// Endpoint::reset_connections(), which delivers no kClosed, call
// forget_connections().

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/app/application.h"
#include "dataplane/app/perf_streams.h"
#include "dataplane/app/synthetic_body.h"
#include "quic/endpoint/endpoint.h"
#include "quic/transmit/chunk.h"

namespace dpquic::dataplane {

// Application error code of the streams the server does not answer (FIN
// before the 8-byte size, a request the client reset or stopped, a
// unidirectional stream).
inline constexpr uint64_t kPerfIncompleteRequest = 0x1;

struct PerfServerConfig {
  // Bytes per submitted chunk (at most kSyntheticBlockSize - kSyntheticPeriod).
  size_t chunk_size = 64 * 1024 - kSyntheticPeriod;
  // Adopt records of the chunk pool: chunks in flight (queued and not yet
  // acknowledged) across all connections. Records are never allocated
  // later: when they run out, pump() waits for acknowledgments (wants_pump).
  size_t adopt_records = 8192;
};

struct PerfServerCounters {
  uint64_t streams_completed = 0;       // responses fully queued, FIN included
  uint64_t bytes_sent = 0;              // response bytes queued
  uint64_t uploads_bytes_received = 0;  // request bytes after the 8-byte size
  uint64_t ignored_streams = 0;         // FIN before 8 bytes (reset, not answered)
  uint64_t abandoned_streams = 0;       // reset or stopped by the client, or closed
};

class PerfServer final : public Application {
 public:
  // Throws std::invalid_argument on a chunk_size of 0 or above the limit.
  PerfServer(endpoint::Endpoint& endpoint, const PerfServerConfig& config = PerfServerConfig());
  ~PerfServer() override;
  PerfServer(const PerfServer&) = delete;
  PerfServer& operator=(const PerfServer&) = delete;

  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  // True while a stream could write but the chunk pool had no record free.
  bool wants_pump() const override { return out_of_records_; }
  // Graceful stop: streams the client opens from now on are refused
  // (RESET_STREAM and STOP_SENDING with kPerfIncompleteRequest); each
  // connection is closed (application code 0) once its streams are done and
  // it stayed idle for kDrainIdleGrace.
  void drain(Instant now) override;
  Instant next_deadline() const override { return next_close_; }

  // Drops all state (use after Endpoint::reset_connections()).
  void forget_connections();
  // Abandons one response (operator abort, tests): RESET_STREAM with
  // `error_code` (and STOP_SENDING if the request is still being read).
  // False if the server holds no such stream.
  bool abort_stream(endpoint::ConnectionHandle handle, uint64_t stream_id, uint64_t error_code);

  const PerfServerCounters& counters() const { return counters_; }
  uint64_t streams_completed() const { return counters_.streams_completed; }
  uint64_t bytes_sent() const { return counters_.bytes_sent; }
  uint64_t uploads_bytes_received() const { return counters_.uploads_bytes_received; }
  uint64_t ignored_streams() const { return counters_.ignored_streams; }
  // Streams with state now (requests being read or answered).
  size_t live_streams() const { return records_.live(); }

 private:
  struct Record {
    uint32_t slot = 0;
    endpoint::ConnectionHandle handle = 0;
    uint64_t stream_id = 0;
    std::array<uint8_t, 8> size_bytes{};
    uint8_t size_bytes_read = 0;
    bool responding = false;  // the request was read to FIN
    uint64_t response_size = 0;
    uint64_t response_sent = 0;
    ListLinks<Record> connection_links;  // all records of the connection
    ListLinks<Record> ready_links;       // streams pump() may write on
  };
  using ConnectionList = IntrusiveList<Record, &Record::connection_links>;
  using ReadyList = IntrusiveList<Record, &Record::ready_links>;

  Record* create(endpoint::ConnectionHandle handle, uint64_t stream_id);
  void release(Record* record);
  ConnectionList& streams_of(endpoint::ConnectionHandle handle);
  // Reads what arrived; false if there was nothing (no bytes, no FIN).
  // A stream with data: a request's header and upload, or a refused stream
  // whose data is dropped.
  void on_stream_readable(endpoint::ConnectionHandle handle, uint64_t stream_id);
  bool on_readable(Record* record);
  // Abandons the stream's send side (and receive side if unread) with
  // kPerfIncompleteRequest.
  void refuse(endpoint::ConnectionHandle handle, uint64_t stream_id, bool stop_receiving,
              uint64_t error_code = kPerfIncompleteRequest);
  // Writes on one stream; false if the pool ran out of adopt records.
  bool write(Record* record);
  void free_connection(endpoint::ConnectionHandle handle);
  // While draining: closes the connections whose streams are all done.
  void close_drained(Instant now);

  endpoint::Endpoint& endpoint_;
  PerfServerConfig config_;
  transmit::ChunkPool pool_;
  RecordPool<Record> records_;
  StreamTable<Record> table_;
  std::vector<ConnectionList> connections_;  // indexed by handle
  ReadyList ready_;
  bool out_of_records_ = false;
  bool draining_ = false;
  // Per handle: whether this server has had events of the connection, and
  // while draining since when it has been idle (kNever: busy).
  std::vector<bool> open_;
  std::vector<Instant> idle_since_;
  Instant next_close_ = kNever;
  PerfServerCounters counters_;
};

}  // namespace dpquic::dataplane
