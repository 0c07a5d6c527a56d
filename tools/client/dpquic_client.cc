// dpquic's client, driven from the command line for interop tests and
// benchmarks: one connection per run (or two with --resume), h3 GETs or
// perf downloads, bodies saved or verified, a one-line result per request.
// When the server sends GOAWAY, the requests it refused go on a new
// connection once the current one is done (one it refuses while draining is
// tried again after a pause), all within --timeout.
//
//   dpquic_client [flags] URL...
//     https://HOST:PORT/PATH  HTTP/3 GET        perf://HOST:PORT/N  perf download of N bytes
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dataplane/app/h3_client.h"
#include "dataplane/app/perf_client.h"
#include "dataplane/app/synthetic_body.h"
#include "dataplane/shard/shard.h"
#include "dataplane/udp/socket_address_conv.h"
#include "quic/wire/errors.h"
#include "tools/client/client_options.h"
#include "tools/client/client_rig.h"

namespace dpquic::interop {
namespace {

using dataplane::H3Outcome;
using dataplane::H3Result;

// GOAWAY rounds of one connection at most, and the pause before trying
// again after a draining server refused the new connection.
constexpr int kMaxGoawayRounds = 16;
constexpr Duration kRefusedPause = 100 * kMillisecond;

const char* cipher_name(std::optional<crypto::CipherSuite> suite) {
  if (!suite) return "none";
  switch (*suite) {
    case crypto::CipherSuite::kAes128Gcm: return "TLS_AES_128_GCM_SHA256";
    case crypto::CipherSuite::kAes256Gcm: return "TLS_AES_256_GCM_SHA384";
    case crypto::CipherSuite::kChaCha20Poly1305: return "TLS_CHACHA20_POLY1305_SHA256";
  }
  return "unknown";
}

// What one connection did, as seen at its last event: printed at the end so
// tests can check it (the connection itself is gone by then).
struct ConnectionFacts {
  std::optional<crypto::CipherSuite> cipher;
  bool retry = false;  // the server's parameters name a Retry's SCID
  uint64_t packets_lost = 0;
  uint64_t key_updates_initiated = 0;
  uint64_t peer_key_generation = 0;  // 1-RTT read generation: the peer followed
  bool on_new_local = false;         // the active path uses the migrated-to address
};

// Where a download's bytes go: a file, a synthetic-body check, or nowhere.
struct Download {
  std::string url;
  std::string authority;
  std::string path;
  uint64_t request_id = 0;  // 0: not sent on the current connection
  int status = 0;
  uint64_t bytes = 0;
  bool synthetic_ok = true;
  bool done = false;
  bool ok = false;
  std::string failure;
  std::unique_ptr<std::ofstream> file;
};

class Run final : public dataplane::Application,
                  public dataplane::H3ResponseHandler,
                  public dataplane::H3GoawayHandler,
                  public dataplane::PerfResponseHandler {
 public:
  Run(const ClientOptions& options, dataplane::Shard& shard)
      : options_(options), shard_(shard), h3_(shard.endpoint()), perf_(shard.endpoint()) {
    h3_.set_goaway_handler(this);
  }

  // One connection: every URL, then a graceful close. True if all succeeded.
  // A Version Negotiation packet that lists a version we speak leads to one
  // new attempt in that version (RFC 9368 §2.1), within the same timeout;
  // so does a GOAWAY that refused requests (at most kMaxGoawayRounds).
  bool connection(int attempt) {
    Instant now = dataplane::monotonic_now();
    const Instant deadline = now + options_.timeout;
    uint32_t version = options_.version;
    uint32_t negotiated_from = 0;
    downloads_.clear();
    for (const Target& target : options_.targets) add_download(target);
    bool goaway_round = false;
    for (int round = 0;; ++round) {
      if (!attempt_connection(now, deadline, version, negotiated_from, !goaway_round)) {
        return report_failure("the endpoint refused to open a connection");
      }
      now = dataplane::monotonic_now();
      if (closed_ && version_after_negotiation_ != 0 && negotiated_from == 0) {
        std::printf("connection %d: version negotiation from 0x%08x to 0x%08x\n", attempt, version,
                    version_after_negotiation_);
        negotiated_from = version;
        version = version_after_negotiation_;
        restart_downloads();  // they failed with the refused attempt
        continue;
      }
      if (!after_goaway(attempt, round, now, deadline)) break;
      goaway_round = true;
    }
    return finish_connection(attempt);
  }

  // After a connection that got GOAWAY (or that a draining server refused):
  // whether to open another one for the requests not done.
  bool after_goaway(int attempt, int round, Instant now, Instant deadline) {
    const size_t waiting = waiting_downloads();
    const bool refused =
        !established_ &&
        close_code_ == static_cast<uint64_t>(wire::TransportErrorCode::kConnectionRefused);
    if (!closed_ || waiting == 0 || !(goaway_ || (refused && goaway_seen_))) return false;
    if (round + 1 >= kMaxGoawayRounds || now + kRefusedPause >= deadline) return false;
    if (goaway_) {
      std::printf("connection %d: GOAWAY: %zu requests go on a new connection\n", attempt, waiting);
    } else {
      std::printf("connection %d: refused by the draining server, trying again\n", attempt);
      std::this_thread::sleep_for(std::chrono::nanoseconds(kRefusedPause));
    }
    return true;
  }

  // Opens the connection, runs it until it closed or `deadline`. Requests
  // go out at once (0-RTT when resuming), or with `requests_at_start` false
  // once the handshake completed (a draining server may refuse it).
  bool attempt_connection(Instant now, Instant deadline, uint32_t version, uint32_t negotiated_from,
                          bool requests_at_start) {
    established_ = closed_ = goaway_ = false;
    requests_at_start_ = requests_at_start;
    key_update_done_ = migrated_ = false;
    version_after_negotiation_ = 0;
    version_ = 0;
    facts_ = ConnectionFacts{};
    bytes_after_migration_ = 0;
    conn::PathAddresses path{next_local(), options_.server};
    const auto handle =
        shard_.endpoint().connect(now, path, options_.server_name, version, negotiated_from);
    if (!handle) return false;
    handle_ = *handle;
    if (requests_at_start) send_waiting();
    while (!closed_ && now < deadline) {
      if (!all_done()) after_progress(now);
      // After a GOAWAY, the connection ends once what the server took is done.
      if ((all_done() || (goaway_ && in_flight() == 0)) && !close_sent_) {
        shard_.endpoint().close(now, handle_, 0, "done");
        close_sent_ = true;
      }
      poll_or_wait(shard_, now, deadline, 50 * kMillisecond);
      now = dataplane::monotonic_now();
    }
    close_sent_ = false;
    return true;
  }

  // The first connection sends from the shard's socket, each later one from
  // a port of its own (as a browser's would): a layer-4 balancer sees a new
  // flow and hashes it afresh.
  conn::SocketAddress next_local() {
    conn::SocketAddress local = shard_.sockets().front()->local();
    if (std::exchange(opened_connection_, true)) {
      local.port = 0;
      local = shard_.add_socket(local).local();
    }
    return local;
  }

  bool finish_connection(int attempt) {
    if (!closed_) {
      std::printf("connection %d: timed out after %.1f s\n", attempt,
                  static_cast<double>(options_.timeout) / kSecond);
      shard_.endpoint().reset_connections();
      perf_.forget_connections();
    }
    bool ok = closed_ && all_done();
    for (Download& d : downloads_) {
      if (d.done && d.ok) {
        std::printf("%s: ok, status %d, %llu bytes\n", d.url.c_str(), d.status,
                    static_cast<unsigned long long>(d.bytes));
      } else {
        std::printf("%s: FAILED: %s\n", d.url.c_str(), d.done ? d.failure.c_str() : "not finished");
        ok = false;
      }
    }
    // "migrated yes": the new path was validated and carried data after it.
    const bool migrated = migrated_ && facts_.on_new_local && bytes_after_migration_ > 0;
    std::printf(
        "connection %d: version 0x%08x, resumed %s, 0-RTT %s, key updates %llu, "
        "migrated %s\n",
        attempt, version_, resumed_ ? "yes" : "no",
        early_data_accepted_ ? "accepted" : (early_data_offered_ ? "rejected" : "not offered"),
        static_cast<unsigned long long>(key_updates_), migrated ? "yes" : "no");
    std::printf(
        "connection %d: cipher %s, retry %s, packets lost %llu, key updates initiated "
        "%llu, peer key generation %llu, bytes after migration %llu\n",
        attempt, cipher_name(facts_.cipher), facts_.retry ? "yes" : "no",
        static_cast<unsigned long long>(facts_.packets_lost),
        static_cast<unsigned long long>(facts_.key_updates_initiated),
        static_cast<unsigned long long>(facts_.peer_key_generation),
        static_cast<unsigned long long>(bytes_after_migration_));
    if (closed_) {
      std::printf("connection %d: closed with code 0x%llx\n", attempt,
                  static_cast<unsigned long long>(close_code_));
    }
    if (options_.migrate && !migrated) ok = false;
    return ok;
  }

  bool resumed() const { return resumed_; }
  bool early_data_accepted() const { return early_data_accepted_; }

  // Application: the events of our one connection.
  void on_event(Instant now, const endpoint::EndpointEvent& event) override {
    const conn::Connection* c = shard_.endpoint().connection(event.connection);
    if (event.event.type == conn::ConnectionEventType::kEstablished && c != nullptr) {
      established_ = true;
      if (!requests_at_start_) send_waiting();
      version_ = c->version();
      if (const crypto::TlsSession* tls = c->tls()) {
        resumed_ = tls->session_resumed();
        early_data_offered_ = tls->early_data_offered();
        early_data_accepted_ = tls->early_data_accepted();
      }
    }
    if (c != nullptr) {
      key_updates_ = c->stats().key_updates;
      record_facts(*c);
    }
    if (event.event.type == conn::ConnectionEventType::kClosed) {
      closed_ = true;
      if (c != nullptr && c->close_reason() == conn::CloseReason::kVersionNegotiation) {
        version_after_negotiation_ = c->version_after_negotiation();
      }
      close_code_ = event.event.error_code;
    }
    if (options_.perf)
      perf_.on_event(now, event);
    else
      h3_.on_event(now, event);
  }
  void pump(Instant now) override {
    if (options_.perf)
      perf_.pump(now);
    else
      h3_.pump(now);
  }
  bool wants_pump() const override { return options_.perf ? perf_.wants_pump() : h3_.wants_pump(); }

  // H3ResponseHandler
  void on_headers(uint64_t id, int status, std::optional<uint64_t>) override {
    if (Download* d = find(id)) d->status = status;
  }
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override {
    Download* d = find(id);
    if (d == nullptr) return;
    if (d->file) d->file->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (facts_.on_new_local) bytes_after_migration_ += bytes.size();
    if (options_.verify_synthetic && !dataplane::matches_synthetic(d->bytes, bytes)) {
      d->synthetic_ok = false;
    }
    d->bytes += bytes.size();
  }
  void on_complete(uint64_t id, H3Outcome outcome) override {
    Download* d = find(id);
    if (d == nullptr) return;
    if (outcome.result == H3Result::kRefused) {
      d->request_id = 0;  // not processed: it goes again on the next connection
      return;
    }
    d->done = true;
    if (d->file) d->file->close();
    if (outcome.result != H3Result::kOk) {
      d->failure = "request failed (" + std::to_string(static_cast<int>(outcome.result)) +
                   ", code " + std::to_string(outcome.error_code) + ")";
    } else if (d->status != 200) {
      d->failure = "status " + std::to_string(d->status);
    } else if (!d->synthetic_ok) {
      d->failure = "body differs from the synthetic bytes";
    } else if (options_.verify_synthetic && d->bytes != synthetic_size(d->path)) {
      d->failure = "body has " + std::to_string(d->bytes) + " bytes";
    } else {
      d->ok = true;
    }
  }

  // H3GoawayHandler: no new request on this connection.
  void on_goaway(endpoint::ConnectionHandle, uint64_t) override { goaway_ = goaway_seen_ = true; }

  // PerfResponseHandler
  void on_complete(uint64_t id, const dataplane::PerfOutcome& outcome) override {
    Download* d = find(id);
    if (d == nullptr) return;
    d->done = true;
    d->bytes = outcome.bytes_received;
    d->status = 200;
    d->ok = outcome.result == dataplane::PerfResult::kOk;
    if (!d->ok) d->failure = "perf outcome " + std::to_string(static_cast<int>(outcome.result));
  }

 private:
  void record_facts(const conn::Connection& c) {
    if (const crypto::TlsSession* tls = c.tls()) {
      if (auto suite = tls->cipher_suite()) facts_.cipher = suite;
    }
    if (c.peer_parameters().has(wire::TransportParameter::kRetrySourceConnectionId)) {
      facts_.retry = true;
    }
    facts_.packets_lost = c.stats().packets_lost;
    facts_.key_updates_initiated = c.stats().key_updates_initiated;
    facts_.peer_key_generation = c.keys().key_phase().read_generation();
    if (migrated_) facts_.on_new_local = c.active_path().local == migrated_local_;
  }

  static uint64_t synthetic_size(const std::string& path) {
    return std::strtoull(path.c_str() + 1, nullptr, 10);
  }

  void add_download(const Target& target) {
    Download d;
    d.url = target.url;
    d.authority = target.authority;
    d.path = target.path;
    if (!options_.download_dir.empty()) {
      const size_t slash = target.path.rfind('/');
      std::string name = target.path.substr(slash + 1);
      if (name.empty()) name = "index.html";
      d.file = std::make_unique<std::ofstream>(options_.download_dir + "/" + name,
                                               std::ios::binary | std::ios::trunc);
    }
    downloads_.push_back(std::move(d));
  }

  // Requests every download not done and not under way on this connection.
  void send_waiting() {
    for (Download& d : downloads_) {
      if (d.done || d.request_id != 0) continue;
      if (options_.perf) {
        d.request_id = perf_.request(handle_, synthetic_size(d.path), 0, this);
      } else {
        dataplane::H3Request request;
        request.authority = d.authority;
        request.path = d.path;
        d.request_id = h3_.request(handle_, request, this);
      }
    }
  }
  void restart_downloads() {
    for (Download& d : downloads_) {
      d.request_id = 0;
      d.status = 0;
      d.bytes = 0;
      d.synthetic_ok = true;
      d.done = d.ok = false;
      d.failure.clear();
    }
  }
  size_t waiting_downloads() const {
    size_t n = 0;
    for (const Download& d : downloads_) n += !d.done && d.request_id == 0 ? 1 : 0;
    return n;
  }
  size_t in_flight() const {
    size_t n = 0;
    for (const Download& d : downloads_) n += !d.done && d.request_id != 0 ? 1 : 0;
    return n;
  }

  // Key update and migration happen once the download is under way.
  void after_progress(Instant now) {
    uint64_t received = 0;
    for (const Download& d : downloads_) received += d.bytes;
    conn::Connection* c = shard_.endpoint().connection(handle_);
    if (c == nullptr || !established_ || received < options_.act_after_bytes) return;
    if (options_.key_update && !key_update_done_ && c->handshake_confirmed()) {
      key_update_done_ = c->initiate_key_update();
      shard_.endpoint().wake(handle_);
    }
    if (options_.migrate && !migrated_ && c->handshake_confirmed()) {
      conn::SocketAddress local = shard_.sockets().front()->local();
      local.port = 0;
      const dataplane::UdpSocket& socket = shard_.add_socket(local);
      migrated_local_ = socket.local();
      migrated_ = c->migrate(now, migrated_local_);
      shard_.endpoint().wake(handle_);
    }
    if (migrated_) record_facts(*c);
  }

  bool all_done() const {
    for (const Download& d : downloads_) {
      if (!d.done) return false;
    }
    return true;
  }
  Download* find(uint64_t id) {
    for (Download& d : downloads_) {
      if (d.request_id == id && !d.done) return &d;
    }
    return nullptr;
  }
  bool report_failure(const char* what) {
    std::printf("FAILED: %s\n", what);
    return false;
  }

  const ClientOptions& options_;
  dataplane::Shard& shard_;
  dataplane::H3Client h3_;
  dataplane::PerfClient perf_;
  endpoint::ConnectionHandle handle_ = 0;
  std::vector<Download> downloads_;
  bool established_ = false, closed_ = false, close_sent_ = false;
  bool requests_at_start_ = true;
  bool opened_connection_ = false;  // a connection was opened before
  bool goaway_ = false;            // on the current connection
  bool goaway_seen_ = false;  // on any connection so far
  bool key_update_done_ = false, migrated_ = false;
  bool resumed_ = false, early_data_offered_ = false, early_data_accepted_ = false;
  uint32_t version_ = 0;
  uint32_t version_after_negotiation_ = 0;
  uint64_t key_updates_ = 0;
  uint64_t close_code_ = 0;
  ConnectionFacts facts_;
  conn::SocketAddress migrated_local_;
  uint64_t bytes_after_migration_ = 0;
};

int run_client(const ClientOptions& options) {
  auto tls = make_client_tls(ClientTlsOptions{
      .alpn = options.perf ? "perf" : "h3",
      .ca_file = options.ca_file,
      .early_data = options.zero_rtt,
  });

  dataplane::ShardConfig config = client_shard_config(options.local, 4);
  config.endpoint.connection.congestion_control = options.congestion_control;
  // The socket receives up to 64 KiB: accept any datagram; send up to what
  // PMTU discovery finds below --max-udp-payload.
  config.endpoint.connection.transport.max_udp_payload_size = wire::kDefaultMaxUdpPayloadSize;
  config.endpoint.connection.max_datagram_size = options.max_udp_payload;
  config.max_datagram_size = options.max_udp_payload;
  dataplane::Shard shard(config, *tls);
  Run run(options, shard);
  shard.set_application(&run);

  bool ok = run.connection(1);
  if (ok && options.resume) {
    ok = run.connection(2);
    if (!run.resumed()) {
      std::printf("FAILED: the second connection was not resumed\n");
      ok = false;
    }
    if (options.zero_rtt && !run.early_data_accepted()) {
      std::printf("FAILED: the server did not accept 0-RTT\n");
      ok = false;
    }
  }
  shard.endpoint().reset_connections();
  std::printf("%s\n", ok ? "all requests succeeded" : "some requests FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace dpquic::interop

int main(int argc, char** argv) {
  std::string error;
  const auto options = dpquic::interop::parse_client_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(dpquic::interop::client_usage(), stdout);
    return 0;
  }
  return dpquic::interop::guarded_main("dpquic_client",
                                       [&] { return dpquic::interop::run_client(*options); });
}
