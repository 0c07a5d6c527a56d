#pragma once
// qlog output (`dataplane --qlog-dir=DIR`): one file per connection,
// DIR/<odcid-hex>_<server|client>.sqlog (never overwritten: a second
// connection with the same original DCID gets _2, _3 ... before .sqlog), in
// the JSON-SEQ serialization of qlog 0.3 (RFC 7464 records: 0x1E, one JSON
// text, LF), with the QUIC event definitions of
// draft-ietf-quic-qlog-quic-events. The first record is the
// header (qlog_version, qlog_format, the trace's vantage point and common
// fields); each further record one event {time, name, data}, time in
// milliseconds relative to common_fields.reference_time. qvis loads it.
//
// A QlogWriter is a conn::ConnectionTracer. Records go through a 64 KiB
// stdio buffer, flushed when it fills, on flush() and on destruction. A file
// that cannot be opened or written is reported once (to the factory, which
// counts it); the connection is never affected.
//
// A QlogFactory hands writers to an Endpoint (EndpointConfig::tracer_factory).
// It may be shared by the endpoints of several threads. It bounds the bytes
// all its writers write (`dataplane --qlog-max-mb`): every peer that sends a
// valid Initial gets a file, so without a bound a flood of handshakes would
// fill the disk. Once the budget is used up, no new file is created and the
// open ones stop growing (each ends after a whole record, so it stays valid
// JSON-SEQ); one line on stderr says so, and the connections are counted.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "dataplane/qlog/json_writer.h"
#include "quic/conn/connection_trace.h"

namespace dpquic::dataplane {

class QlogFactory;

class QlogWriter final : public conn::ConnectionTracer {
 public:
  static constexpr size_t kBufferSize = 64 * 1024;

  // Writes into directory `dir`; the file is created when the connection
  // starts (its name needs the ODCID). `epoch_unix_ms`: the wall-clock time
  // (ms since 1970) of Instant 0, for reference_time. `factory` (nullable)
  // is told when the file cannot be opened or written.
  QlogWriter(std::string dir, double epoch_unix_ms, QlogFactory* factory = nullptr);
  ~QlogWriter() override;
  QlogWriter(const QlogWriter&) = delete;
  QlogWriter& operator=(const QlogWriter&) = delete;

  void flush();
  bool is_open() const { return file_ != nullptr; }
  bool failed() const { return failed_; }
  // Stopped (or never opened) because the factory's byte budget ran out.
  bool over_budget() const { return over_budget_; }
  // The file's path once the connection started ("" before).
  const std::string& path() const { return path_; }
  // Records written: the header and every event.
  uint64_t records_written() const { return records_written_; }

  // conn::ConnectionTracer
  void on_connection_started(Instant now, const conn::TracedStart& start) override;
  void on_parameters_set(Instant now, bool local, const wire::TransportParameters& params) override;
  void on_packet_built(Instant now, wire::PacketType type, uint64_t packet_number,
                       std::span<const uint8_t> frames) override;
  void on_packet_sent(Instant now, wire::PacketType type, uint64_t packet_number,
                      size_t length) override;
  void on_packet_received(Instant now, wire::PacketType type, uint64_t packet_number, size_t length,
                          std::span<const uint8_t> frames) override;
  void on_packet_lost(Instant now, wire::PacketType type, uint64_t packet_number) override;
  void on_packet_dropped(Instant now, bool type_known, wire::PacketType type, size_t length,
                         conn::PacketDropReason reason) override;
  void on_metrics_updated(Instant now, const conn::RecoveryMetrics& metrics) override;
  void on_congestion_state_updated(Instant now, const char* old_state,
                                   const char* new_state) override;
  void on_key_updated(Instant now, uint64_t generation, bool local) override;
  void on_state_changed(Instant now, conn::TracedState state) override;
  void on_connection_closed(Instant now, const conn::TracedClose& close) override;

 private:
  // Names tried for one connection before giving up (see open_file).
  static constexpr uint32_t kMaxNameAttempts = 1000;
  // Creates the connection's file (path_, file_); false (reported) if none.
  bool open_file(const conn::TracedStart& start);
  // Frames of a packet built but not yet reported sent (see
  // connection_trace.h), as JSON in staged_.
  struct StagedPacket {
    wire::PacketType type;
    uint64_t packet_number;
    size_t offset;
    size_t length;
  };

  void write_header(const conn::TracedStart& start);
  // Starts an event record in record_; false when nothing is written (not
  // started, or the file failed).
  bool begin_event(Instant now, std::string_view name);
  void write_model(const conn::RecoveryMetrics& metrics, const conn::RecoveryMetrics* last);
  void end_event();
  void write_record();
  void write_packet_header(wire::PacketType type, uint64_t packet_number);
  void fail_once(const char* what, int error);
  // The factory's byte budget is used up: the file ends here.
  void stop_over_budget();

  std::string dir_;
  double epoch_unix_ms_;
  QlogFactory* factory_;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  bool started_ = false;
  bool failed_ = false;
  bool over_budget_ = false;
  Instant start_time_ = 0;
  uint64_t records_written_ = 0;

  std::string record_;
  JsonWriter json_{record_};
  std::string staged_;
  std::vector<StagedPacket> staged_packets_;
  size_t staged_head_ = 0;

  // The ACK Delay exponents of our ACKs and of the peer's (RFC 9000 §18.2).
  uint64_t local_ack_delay_exponent_ = 3;
  uint64_t peer_ack_delay_exponent_ = 3;
  // The last metrics written: only changes are logged.
  std::optional<conn::RecoveryMetrics> last_metrics_;
  std::optional<conn::TracedState> last_state_;
  bool is_server_ = false;
};

class QlogFactory final : public conn::ConnectionTracerFactory {
 public:
  // `dir` must be a writable directory: std::runtime_error (one line) if
  // not. `epoch_unix_ms`: the wall-clock time of Instant 0; by default the
  // offset between CLOCK_REALTIME and CLOCK_MONOTONIC now, right for
  // Instants read from CLOCK_MONOTONIC (in ns) as the dataplane does.
  explicit QlogFactory(std::string dir, std::optional<double> epoch_unix_ms = std::nullopt);
  ~QlogFactory() override;
  QlogFactory(const QlogFactory&) = delete;
  QlogFactory& operator=(const QlogFactory&) = delete;

  // A new writer (the vantage point is the connection's own role, which the
  // writer learns when the connection starts).
  conn::ConnectionTracer* create_tracer(wire::Role role) override;
  // Flushes, closes and frees the writer.
  void release_tracer(conn::ConnectionTracer* tracer) override;

  // Flushes every live writer (tests, and before a process exits without
  // releasing connections).
  void flush_all();

  const std::string& directory() const { return dir_; }
  uint64_t writers_created() const;
  size_t live_writers() const;
  // Files that could not be opened or written (each writer counts once).
  uint64_t failures() const;

  static constexpr uint64_t kDefaultByteBudget = uint64_t{1} << 30;
  // Bytes all writers may write in all (default kDefaultByteBudget).
  void set_byte_budget(uint64_t bytes) { budget_.store(bytes); }
  uint64_t byte_budget() const { return budget_.load(); }
  uint64_t bytes_written() const { return charged_.load(); }
  bool budget_exhausted() const { return charged_.load() >= budget_.load(); }
  // Connections whose qlog was cut short or never written for the budget.
  uint64_t over_budget_writers() const { return over_budget_.load(); }
  // For writers: takes `bytes` from the budget; false (nothing taken) if
  // they do not fit.
  bool charge(uint64_t bytes);
  // For writers: a writer stopped for the budget (counted; the first one
  // is reported on stderr).
  void report_over_budget();

  // For writers: a file failed (printed to stderr for the first failure of
  // the factory only; later ones are just counted).
  void report_failure(const std::string& path, const char* what, int error);

 private:
  std::string dir_;
  double epoch_unix_ms_;
  mutable std::mutex mutex_;
  std::unordered_set<QlogWriter*> live_;
  uint64_t created_ = 0;
  // Outside mutex_: a writer may fail while flush_all() holds it.
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> budget_{kDefaultByteBudget};
  std::atomic<uint64_t> charged_{0};
  std::atomic<uint64_t> over_budget_{0};
};

}  // namespace dpquic::dataplane
