// Connection exhaustion against our server (started with
// --max-connections=N): hold N connections open, check that one more is
// refused cleanly (a transport CONNECTION_CLOSE with CONNECTION_REFUSED,
// RFC 9000 §5.2.2) while the N keep working, then make many more refused
// attempts and report the server's RSS before and after them.
//
//   exhaustion_client --server=127.0.0.1:PORT [--connections=100]
//       [--refusals=1000] [--batch=50] [--server-pid=PID] [--body=BYTES]
//       [--timeout=SECONDS]
//
// Prints one line per phase and "exhaustion: ok" when every check passed
// (exit 0); exit 1 when a check failed, 2 for a bad command line or a
// failed start-up.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dataplane/app/h3_client.h"
#include "dataplane/app/synthetic_body.h"
#include "dataplane/shard/shard.h"
#include "dataplane/udp/socket_address_conv.h"
#include "tools/client/client_rig.h"

namespace dpquic::interop {
namespace {

constexpr uint64_t kConnectionRefused = 0x2;

const char kUsage[] =
    "usage: exhaustion_client --server=HOST:PORT [--connections=100] [--refusals=1000]\n"
    "                         [--batch=50] [--server-pid=PID] [--body=BYTES] [--timeout=SECONDS]\n"
    "Holds --connections connections to our server (started with --max-connections equal to\n"
    "it), checks that one more is refused with CONNECTION_REFUSED while they keep working\n"
    "(each downloads --body bytes), then makes --refusals more refused attempts, --batch at a\n"
    "time, and reports the server's RSS (with --server-pid) before and after them.\n"
    "Exit 0 when every check passed, 1 when one failed, 2 on a bad command line.\n";

struct Options {
  conn::SocketAddress server;
  std::string authority;
  uint64_t connections = 100;
  uint64_t refusals = 1000;
  uint64_t batch = 50;
  uint64_t server_pid = 0;  // 0: RSS not measured
  uint64_t body = 10'000;
  uint64_t timeout_seconds = 60;
};

std::optional<Options> parse_options(int argc, char** argv, std::string& error) {
  Options options;
  bool have_server = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto [flag, value] = split_flag(arg);
    bool ok = true;
    if (flag == "--server") {
      std::string reason;
      const auto address = dataplane::parse_host_port(value, reason);
      ok = address.has_value();
      if (ok) {
        options.server = *address;
        options.authority = std::string(value);
        have_server = true;
      }
    } else if (flag == "--connections") {
      ok = parse_number(value, 1, 10'000, options.connections);
    } else if (flag == "--refusals") {
      ok = parse_number(value, 0, 100'000, options.refusals);
    } else if (flag == "--batch") {
      ok = parse_number(value, 1, 1'000, options.batch);
    } else if (flag == "--server-pid") {
      ok = parse_number(value, 1, 1u << 30, options.server_pid);
    } else if (flag == "--body") {
      ok = parse_number(value, 0, 100'000'000, options.body);
    } else if (flag == "--timeout") {
      ok = parse_number(value, 1, 600, options.timeout_seconds);
    } else {
      error = "unknown argument '" + std::string(arg) + "'";
      return std::nullopt;
    }
    if (!ok) {
      error = std::string(flag) + ": bad value '" + std::string(value) + "'";
      return std::nullopt;
    }
  }
  if (!have_server) {
    error = "--server=HOST:PORT is required";
    return std::nullopt;
  }
  return options;
}

// VmRSS of `pid` in kB, 0 if unreadable.
uint64_t rss_kb(uint64_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// One connection we opened and what happened to it.
struct Tracked {
  bool held = false;  // one of the N that must stay open
  bool established = false;
  bool closed = false;
  conn::CloseReason close_reason = conn::CloseReason::kNone;
  uint64_t close_code = 0;
  bool application_close = false;
  uint64_t requests_ok = 0;
  uint64_t requests_failed = 0;
};

class Exhaustion final : public dataplane::Application, public dataplane::H3ResponseHandler {
 public:
  Exhaustion(const Options& options, dataplane::Shard& shard)
      : options_(options), shard_(shard), h3_(shard.endpoint(), h3_config()) {}

  bool run() {
    deadline_ = dataplane::monotonic_now() + options_.timeout_seconds * kSecond;
    // 1. N connections, one request each, kept open.
    for (uint64_t i = 0; i < options_.connections; ++i) {
      const auto handle = connect();
      if (!handle)
        return failed("the client endpoint could not open connection " + std::to_string(i));
      held_.push_back(*handle);
      tracked_[*handle].held = true;
      request(*handle);
    }
    if (!wait_requests(1, "the first request")) return false;
    std::printf("held: %llu connections established, 1 request each ok\n",
                static_cast<unsigned long long>(options_.connections));

    // 2. One more: refused.
    const auto extra = connect();
    if (!extra) return failed("the client endpoint could not open the extra connection");
    if (!run_until([&] { return tracked_[*extra].closed; })) {
      return failed("connection " + std::to_string(options_.connections + 1) + " was not closed");
    }
    if (!refused_cleanly(tracked_[*extra])) {
      return failed("connection " + std::to_string(options_.connections + 1) + " ended with " +
                    describe(tracked_[*extra]));
    }
    std::printf("refused: connection %llu closed by the server with transport error 0x%llx\n",
                static_cast<unsigned long long>(options_.connections + 1),
                static_cast<unsigned long long>(kConnectionRefused));
    tracked_.erase(*extra);

    // 3. The held connections still work.
    for (const auto handle : held_) request(handle);
    if (!wait_requests(2, "the request after the refusal")) return false;
    std::printf("held: %llu connections, a second request each ok after the refusal\n",
                static_cast<unsigned long long>(options_.connections));

    // 4. Many refused attempts: one batch to warm up, then the measured ones.
    uint64_t refused = 0;
    if (!refuse(options_.batch, refused)) return false;
    const uint64_t rss_before = options_.server_pid ? rss_kb(options_.server_pid) : 0;
    refused = 0;
    if (!refuse(options_.refusals, refused)) return false;
    const uint64_t rss_after = options_.server_pid ? rss_kb(options_.server_pid) : 0;
    std::printf(
        "refusals: %llu attempts, %llu refused with 0x%llx; server rss_before_kb=%llu "
        "rss_after_kb=%llu delta_kb=%lld\n",
        static_cast<unsigned long long>(options_.refusals),
        static_cast<unsigned long long>(refused),
        static_cast<unsigned long long>(kConnectionRefused),
        static_cast<unsigned long long>(rss_before), static_cast<unsigned long long>(rss_after),
        static_cast<long long>(rss_after) - static_cast<long long>(rss_before));

    // 5. And the held connections work after all of them.
    for (const auto handle : held_) request(handle);
    if (!wait_requests(3, "the request after the refusals")) return false;
    std::printf("held: %llu connections, a third request each ok after the refusals\n",
                static_cast<unsigned long long>(options_.connections));

    // A graceful close of the held connections.
    const Instant now = dataplane::monotonic_now();
    for (const auto handle : held_) shard_.endpoint().close(now, handle, 0, "done");
    run_until([&] {
      for (const auto handle : held_) {
        if (!tracked_[handle].closed) return false;
      }
      return true;
    });
    return true;
  }

  // Application
  void on_event(Instant now, const endpoint::EndpointEvent& event) override {
    auto it = tracked_.find(event.connection);
    if (it != tracked_.end()) {
      Tracked& t = it->second;
      if (event.event.type == conn::ConnectionEventType::kEstablished) t.established = true;
      if (event.event.type == conn::ConnectionEventType::kClosed) {
        t.closed = true;
        t.close_reason = event.event.close_reason;
        t.close_code = event.event.error_code;
        t.application_close = event.event.application_error;
      }
    }
    h3_.on_event(now, event);
  }
  void pump(Instant now) override { h3_.pump(now); }
  bool wants_pump() const override { return h3_.wants_pump(); }

  // H3ResponseHandler
  void on_headers(uint64_t id, int status, std::optional<uint64_t>) override {
    if (auto it = requests_.find(id); it != requests_.end()) it->second.status = status;
  }
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override {
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    if (!dataplane::matches_synthetic(it->second.bytes, bytes)) it->second.body_ok = false;
    it->second.bytes += bytes.size();
  }
  void on_complete(uint64_t id, dataplane::H3Outcome outcome) override {
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    const Request& r = it->second;
    Tracked& t = tracked_[r.handle];
    if (outcome.result == dataplane::H3Result::kOk && r.status == 200 && r.body_ok &&
        r.bytes == options_.body) {
      ++t.requests_ok;
    } else {
      ++t.requests_failed;
      std::printf("request on connection %u failed: result %d code 0x%llx status %d, %llu bytes\n",
                  r.handle, static_cast<int>(outcome.result),
                  static_cast<unsigned long long>(outcome.error_code), r.status,
                  static_cast<unsigned long long>(r.bytes));
    }
    requests_.erase(it);
  }

 private:
  struct Request {
    endpoint::ConnectionHandle handle = 0;
    int status = 0;
    uint64_t bytes = 0;
    bool body_ok = true;
  };

  static dataplane::H3ClientConfig h3_config() {
    dataplane::H3ClientConfig config;
    // Control, QPACK and request streams of every held connection.
    config.chunk_size = 4096;
    config.chunk_count = 8192;
    return config;
  }

  std::optional<endpoint::ConnectionHandle> connect() {
    const conn::PathAddresses path{shard_.sockets().front()->local(), options_.server};
    // A slot may still be draining a refused attempt: let the endpoint run.
    for (;;) {
      const Instant now = dataplane::monotonic_now();
      if (auto handle = shard_.endpoint().connect(now, path, "localhost")) {
        if (tracked_.count(*handle) != 0) return std::nullopt;  // a handle still in use
        tracked_[*handle] = Tracked{};
        return handle;
      }
      if (now >= deadline_) return std::nullopt;
      poll_or_wait(shard_, now, deadline_, 10 * kMillisecond);
    }
  }

  void request(endpoint::ConnectionHandle handle) {
    dataplane::H3Request r;
    r.authority = options_.authority;
    r.path = "/" + std::to_string(options_.body);
    const uint64_t id = h3_.request(handle, r, this);
    if (id != 0) requests_[id] = Request{handle};
  }

  bool run_until(const std::function<bool()>& done) {
    for (;;) {
      if (done()) return true;
      Instant now = dataplane::monotonic_now();
      if (now >= deadline_) return false;
      poll_or_wait(shard_, now, deadline_, 20 * kMillisecond);
    }
  }

  // Waits until every held connection has `count` successful requests; any
  // failure or close is the end.
  bool wait_requests(uint64_t count, const char* what) {
    bool broken = false;
    const bool done = run_until([&] {
      bool all = true;
      for (const auto handle : held_) {
        const Tracked& t = tracked_[handle];
        if (t.closed || t.requests_failed != 0) broken = true;
        all &= t.requests_ok >= count;
      }
      return all || broken;
    });
    for (const auto handle : held_) {
      const Tracked& t = tracked_[handle];
      if (t.closed || t.requests_failed != 0 || t.requests_ok < count) {
        return failed(std::string(what) + " on held connection " + std::to_string(handle) +
                      (done ? "" : " timed out") + ": " + describe(t) + ", " +
                      std::to_string(t.requests_ok) + " requests ok");
      }
    }
    return true;
  }

  // `total` attempts, at most options_.batch at a time; each must be refused.
  bool refuse(uint64_t total, uint64_t& refused) {
    uint64_t started = 0;
    std::vector<endpoint::ConnectionHandle> batch;
    while (started < total) {
      batch.clear();
      while (batch.size() < options_.batch && started < total) {
        const auto handle = connect();
        if (!handle) return failed("could not open refused attempt " + std::to_string(started));
        batch.push_back(*handle);
        ++started;
      }
      const bool closed = run_until([&] {
        for (const auto handle : batch) {
          if (!tracked_[handle].closed) return false;
        }
        return true;
      });
      for (const auto handle : batch) {
        const Tracked t = tracked_[handle];
        tracked_.erase(handle);
        if (!closed || !refused_cleanly(t)) {
          return failed("attempt " + std::to_string(started) + " ended with " + describe(t));
        }
        ++refused;
      }
    }
    return true;
  }

  static bool refused_cleanly(const Tracked& t) {
    return t.closed && !t.established && t.close_reason == conn::CloseReason::kPeerClose &&
           !t.application_close && t.close_code == kConnectionRefused;
  }

  static std::string describe(const Tracked& t) {
    if (!t.closed) return std::string(t.established ? "established" : "handshaking") + ", open";
    char text[128];
    std::snprintf(
        text, sizeof(text), "close reason %d, %s code 0x%llx%s", static_cast<int>(t.close_reason),
        t.application_close ? "application" : "transport",
        static_cast<unsigned long long>(t.close_code), t.established ? " after the handshake" : "");
    return text;
  }

  bool failed(const std::string& what) {
    std::printf("FAILED: %s\n", what.c_str());
    return false;
  }

  const Options& options_;
  dataplane::Shard& shard_;
  dataplane::H3Client h3_;
  Instant deadline_ = 0;
  std::vector<endpoint::ConnectionHandle> held_;
  std::unordered_map<endpoint::ConnectionHandle, Tracked> tracked_;
  std::unordered_map<uint64_t, Request> requests_;
};

int run(const Options& options) {
  auto tls = make_client_tls(ClientTlsOptions{});
  // The held connections, a batch of attempts, and attempts still draining.
  const dataplane::ShardConfig config = client_shard_config(
      loopback_for(options.server), options.connections + 4 * options.batch + 16);
  dataplane::Shard shard(config, *tls);
  Exhaustion exhaustion(options, shard);
  shard.set_application(&exhaustion);
  const bool ok = exhaustion.run();
  shard.endpoint().reset_connections();
  std::printf("%s\n", ok ? "exhaustion: ok" : "exhaustion: FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace dpquic::interop

int main(int argc, char** argv) {
  std::string error;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help") {
      std::fputs(dpquic::interop::kUsage, stdout);
      return 0;
    }
  }
  const auto options = dpquic::interop::parse_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "exhaustion_client: %s\n", error.c_str());
    return 2;
  }
  return dpquic::interop::guarded_main("exhaustion_client",
                                       [&] { return dpquic::interop::run(*options); });
}
