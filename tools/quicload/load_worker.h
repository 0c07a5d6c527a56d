#pragma once
// One client shard of quicload: a thread (kernel UDP) or a worker lcore
// (DPDK) driving its share of the connections and requests through its own
// endpoint, TLS context and HTTP/3 or perf client.
//
// Connections live in slots. A slot connects, sends up to --streams
// requests at once while the worker's budget lasts (or until --duration ran
// out), and closes with NO_ERROR when it has nothing more to send; with
// --per-connection or --handshake-only it then reconnects. A slot whose
// handshake failed is not reopened when a request count is the goal (it
// would retry forever against a dead server): the requests no slot can carry
// any more are counted failed ("not sent").
//
// A GOAWAY (h3) retires the slot's connection: it finishes the requests the
// server took and then closes, while the slot opens a new connection at
// once; the requests the server refused are sent again (first, on whichever
// connection has room), not counted as failures. Within --timeout of a
// GOAWAY, a new connection the server refuses (CONNECTION_REFUSED: it is
// draining) is opened again after kRefusedBackoff rather than failed: a
// replacement server, or another host behind the balancer, may take it.
//
// Each connection sends from a UDP source port of its own (LoadShard::
// open_local), freed when the connection is gone; --shared-port: the
// shard's one port.
//
// Counters and histograms belong to the worker's thread; every 100 ms a copy
// is published under a mutex for the progress line.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "crypto/tls_context.h"
#include "dataplane/app/application.h"
#include "dataplane/app/h3_client.h"
#include "dataplane/app/perf_client.h"
#include "quic/conn/socket_address.h"
#include "quic/endpoint/endpoint.h"
#include "tools/quicload/body_check.h"
#include "tools/quicload/connection_promise.h"
#include "tools/quicload/latency_histogram.h"
#include "tools/quicload/load_options.h"
#include "tools/quicload/load_report.h"
#include "tools/quicload/request_table.h"

namespace dpquic::tools {

// The I/O under a worker: a kernel-UDP Shard or a DPDK shard.
class LoadShard {
 public:
  virtual ~LoadShard() = default;
  virtual endpoint::Endpoint& endpoint() = 0;
  virtual void set_application(dataplane::Application* application) = 0;
  // The local address for a new connection: a source port of its own (a
  // new socket on kernel UDP), or the shard's one address with
  // --shared-port. nullopt when none can be had now (descriptors or ports
  // ran out): the connection waits, as for a full pool.
  virtual std::optional<conn::SocketAddress> open_local() = 0;
  // The connection made from `local` is gone (or never started): its port
  // is free again.
  virtual void close_local(const conn::SocketAddress& local) = 0;
  // One loop turn at `now`: the shard's pending work; when there was none, a
  // kernel shard sleeps until input or `limit` (a poll-mode shard returns).
  virtual void turn(Instant now, Instant limit) = 0;
};

// This worker's share of the load.
struct WorkerPlan {
  uint64_t connections = 1;  // slots
  uint64_t budget = 0;       // requests (handshakes with --handshake-only); unused with a duration
  Instant start = 0;
  Instant end = kNever;  // --duration ran out
};

// The endpoint connections a worker needs room for (closing ones linger).
size_t worker_max_connections(const LoadOptions& options, uint64_t slots);

// A new connection refused by a draining server waits this long before
// the next attempt.
inline constexpr Duration kRefusedBackoff = 100 * kMillisecond;

class LoadWorker final : public dataplane::Application,
                         public dataplane::H3ResponseHandler,
                         public dataplane::H3GoawayHandler,
                         public dataplane::PerfResponseHandler {
 public:
  // `verify` (nullable) must outlive the worker; so must `io` and `tls`.
  LoadWorker(const LoadOptions& options, const WorkerPlan& plan, LoadShard& io,
             crypto::TlsContext& tls, const MappedFile* verify);
  ~LoadWorker() override;

  // Runs the load to its end, then closes and drops every connection. On
  // the worker's own thread. `interrupted` (SIGINT) stops it early.
  void run(const std::atomic<bool>& interrupted);

  // For the progress thread: the latest published figures.
  void snapshot(LoadCounters& counters, LatencyHistogram& latency) const;
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  // After run() returned (same thread, or after joining it).
  const LoadCounters& counters() const { return counters_; }
  const LatencyHistogram& latency() const { return latency_; }
  const LatencyHistogram& handshake_latency() const { return handshake_; }
  Instant finished_at() const { return finished_at_; }
  // --idle: when the last connection was established (0: never).
  Instant all_established_at() const { return all_established_at_; }
  // The UDP source ports the connections used, a bit per port.
  const std::vector<uint64_t>& source_ports() const { return source_ports_; }

  // dataplane::Application
  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  bool wants_pump() const override;

  // dataplane::H3ResponseHandler
  void on_headers(uint64_t id, int status, std::optional<uint64_t> content_length) override;
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override;
  void on_complete(uint64_t id, dataplane::H3Outcome outcome) override;
  // dataplane::H3GoawayHandler
  void on_goaway(endpoint::ConnectionHandle handle, uint64_t stream_id) override;
  // dataplane::PerfResponseHandler
  void on_complete(uint64_t id, const dataplane::PerfOutcome& outcome) override;

 private:
  enum class SlotState : uint8_t { kIdle, kConnecting, kEstablished, kDone };
  struct Slot {
    SlotState state = SlotState::kIdle;
    endpoint::ConnectionHandle handle = 0;
    uint32_t generation = 0;  // bumped at each connect
    Instant connect_at = 0;
    uint32_t in_flight = 0;
    uint64_t issued = 0;  // requests on the current connection
    bool early = false;   // requests went out before the handshake (0-RTT)
  };
  static constexpr int32_t kNoSlot = -1;
  // A connection retired by a GOAWAY while it still carries requests the
  // server took; it closes when the last of them ends.
  struct Retiring {
    endpoint::ConnectionHandle handle = 0;
    uint32_t slot = 0;
    uint32_t generation = 0;
    uint32_t in_flight = 0;
  };

  bool can_issue() const;
  bool reopen_allowed() const;
  bool live(const Slot& slot) const;
  static LiveConnection live_connection(const Slot& slot);
  void schedule(Instant now);
  void open_slots(Instant now);
  bool connect(uint32_t index, Instant now);
  // Puts a ticket where connect() takes it; false when there is none.
  bool offer_ticket();
  void collect_tickets();
  void fill(uint32_t index, Instant now);
  bool issue(uint32_t index, Instant now);
  // Closes the slot's connection (deferred when inside a client callback)
  // and frees the slot for a new one or marks it done.
  void finish_connection(uint32_t index);
  void release_slot(uint32_t index, bool may_reopen);
  void on_established(uint32_t index, Instant now);
  void on_closed(uint32_t index, const conn::ConnectionEvent& event, Instant now);
  void complete(uint64_t id, std::optional<ErrorKind> error);
  // One request of the slot's connection `generation` ended.
  void settle(uint32_t index, uint32_t generation, Instant now);
  // A request the server refused goes back to be sent again.
  void retry(uint64_t id);
  void forget_retiring(endpoint::ConnectionHandle handle);
  // Within --timeout of a GOAWAY: a refused connection is a draining server's.
  bool peer_draining(Instant now) const;
  // The next URL to request: a refused request's first, else the next in turn.
  uint32_t next_target() const;
  void release_local(endpoint::ConnectionHandle handle);
  // Frees the ports of closed connections the endpoint has let go of (their
  // closing period over: CONNECTION_CLOSE may still go out until then).
  void sweep_closing();
  void check_confirmed();
  // --idle: once every connection is established, the idle period starts.
  void check_all_established(Instant now);
  // --duration ran out (or SIGINT): no new requests; what is open may
  // finish until `abandon_at`.
  void begin_stop(Instant abandon_at);
  void abandon_all();
  void settle_unsent();
  bool all_done() const;
  void publish(Instant now, bool force);
  void drain(Instant now);

  const LoadOptions& options_;
  WorkerPlan plan_;
  LoadShard& io_;
  crypto::TlsContext& tls_;
  const MappedFile* verify_;
  std::unique_ptr<dataplane::H3Client> h3_;
  std::unique_ptr<dataplane::PerfClient> perf_;
  std::vector<dataplane::H3Request> h3_requests_;  // one per URL, built once

  std::vector<Slot> slots_;
  std::vector<int32_t> slot_of_handle_;  // by connection handle
  std::vector<uint32_t> idle_;           // slots waiting to connect
  std::vector<endpoint::ConnectionHandle> to_close_;
  std::vector<Retiring> retiring_;
  std::vector<uint32_t> retry_targets_;               // URLs of refused requests, to send first
  std::vector<conn::SocketAddress> local_of_handle_;  // by connection handle
  std::vector<endpoint::ConnectionHandle> closing_;   // kClosed seen, port still held
  std::vector<uint64_t> source_ports_;                // a bit per port
  Instant last_goaway_ = 0;
  Instant reconnect_at_ = 0;  // after a refusal by a draining server
  RequestTable requests_;
  uint64_t remaining_ = 0;  // budget not yet issued (requests or handshakes)
  bool unbounded_ = false;  // --duration: no budget
  uint32_t next_target_ = 0;
  bool stopping_ = false;
  Instant abandon_at_ = kNever;
  size_t live_slots_ = 0;  // connecting or established
  size_t connecting_ = 0;  // in their handshake
  // --idle (see LoadOptions::idle_mode).
  const bool idle_mode_;
  Instant all_established_at_ = 0;

  // --resume: fresh tickets (latest last) and the last one seen, for reuse.
  std::vector<crypto::CachedSession> tickets_;
  std::optional<crypto::CachedSession> last_ticket_;
  bool ticket_seen_ = false;
  bool first_ended_ = false;  // a connection ended (with or without a ticket)

  LoadCounters counters_;
  LatencyHistogram latency_;
  LatencyHistogram handshake_;
  Instant finished_at_ = 0;

  mutable std::mutex published_mutex_;
  LoadCounters published_;
  LatencyHistogram published_latency_;
  Instant next_publish_ = 0;
  std::atomic<bool> finished_{false};
};

}  // namespace dpquic::tools
