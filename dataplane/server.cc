#include "dataplane/server.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "dataplane/app/alpn_router.h"
#include "dataplane/app/h3_server.h"
#include "dataplane/app/perf_server.h"
#include "dataplane/dpdk/eal.h"
#include "dataplane/metrics/prometheus_text.h"
#include "dataplane/server_keys.h"
#include "dataplane/shard/on_cpu.h"
#include "dataplane/udp/socket_address_conv.h"

namespace dpquic::dataplane {

struct Server::ShardApps {
  ShardApps(endpoint::Endpoint& endpoint, size_t max_connections, const std::string& root,
            std::shared_ptr<const MimeTypes> types)
      : mime_types(std::move(types)),
        router(endpoint, max_connections),
        h3(endpoint,
           [&] {
             H3ServerConfig config;
             config.root = root;
             config.mime_types = mime_types;
             return config;
           }()),
        perf(endpoint, PerfServerConfig{}) {
    router.add("h3", &h3);
    router.add("perf", &perf);
  }
  std::shared_ptr<const MimeTypes> mime_types;  // one map, shared read-only by every shard
  AlpnRouter router;
  H3Server h3;
  PerfServer perf;
};

namespace {

void require_directory(const std::string& path, const char* flag) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw std::runtime_error(std::string(flag) + "=" + path + ": not a directory");
  }
  if (access(path.c_str(), R_OK | X_OK) != 0) {
    throw std::runtime_error(std::string(flag) + "=" + path + ": not readable");
  }
}

// SO_REUSEPORT lets a second server (same user) bind the same port and
// silently take half the traffic: bind once without it to refuse that.
void require_free_port(const conn::SocketAddress& address) {
  UdpSocketOptions probe;
  probe.bind = address;
  probe.reuse_port = false;
  probe.gro = false;
  UdpSocket socket(probe);
}

struct DescriptorLimit {
  uint64_t at_start = 0;  // RLIMIT_NOFILE's soft limit before
  uint64_t now = 0;       // and after
};

// Raises RLIMIT_NOFILE's soft limit to the hard one: every file response
// holds a descriptor while it is sent (H3ServerConfig::
// max_files_per_connection per connection), and the usual soft limit of
// 1024 would turn a few dozen busy connections into 503s for everyone. A
// hard limit of "unlimited" means the kernel's ceiling, fs.nr_open. The
// soft limit stays as it was when it cannot be raised.
DescriptorLimit raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  DescriptorLimit result{limit.rlim_cur, limit.rlim_cur};
  rlim_t target = limit.rlim_max;
  if (target == RLIM_INFINITY) {
    uint64_t nr_open = 0;
    std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
    target = static_cast<rlim_t>(nr_open);
  }
  if (target <= limit.rlim_cur) return result;
  limit.rlim_cur = target;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) result.now = target;
  return result;
}

bool ipv6_loopback_available() {
  try {
    UdpSocketOptions probe;
    probe.bind = conn::SocketAddress::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0);
    probe.reuse_port = false;
    UdpSocket socket(probe);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

Server::Server(const ServerOptions& options) : options_(options) {
  const DescriptorLimit descriptors = raise_descriptor_limit();
  descriptors_at_start_ = descriptors.at_start;
  descriptors_ = descriptors.now;
  const bool dpdk = options_.backend == Backend::kDpdk;
  if (!dpdk && options_.listen_is_default && !ipv6_loopback_available()) {
    std::erase_if(options_.listen, [](const conn::SocketAddress& a) {
      return a.family == conn::AddressFamily::kIpv6;
    });
  }
  if (options_.certificate_file.empty()) {
    certificate_ = std::make_shared<const crypto::CertificateChain>(
        crypto::CertificateChain::generate_self_signed("localhost"));
    certificate_generated_ = true;
  } else {
    certificate_ = std::make_shared<const crypto::CertificateChain>(
        crypto::CertificateChain::load_pem_files(options_.certificate_file, options_.key_file));
  }

  if (!options_.root.empty()) require_directory(options_.root, "--root");
  if (!options_.qlog_dir.empty()) {
    require_directory(options_.qlog_dir, "--qlog-dir");
    qlog_ = std::make_unique<QlogFactory>(options_.qlog_dir);
    qlog_->set_byte_budget(options_.qlog_max_mb << 20);
  }
  if (!dpdk) {
    for (const conn::SocketAddress& address : options_.listen) require_free_port(address);
  }
  if (options_.metrics) metrics_ = std::make_unique<MetricsHttpServer>(*options_.metrics);

  ServerKeys keys = load_server_keys(options_);
  crypto::TlsServerConfig tls;
  tls.certificate = certificate_.get();
  tls.alpn_protocols = {"h3", "perf"};
  tls.ticket_keys = std::move(keys.ticket_keys);
  if (const char* keylog = std::getenv("SSLKEYLOGFILE")) tls.keylog_file = keylog;

  endpoint::EndpointConfig endpoint;
  endpoint.role = wire::Role::kServer;
  endpoint.connection.congestion_control = options_.congestion_control;
  // The sockets receive up to 64 KiB: accept any datagram (RFC 9000 §18.2),
  // and send up to what PMTU discovery finds below --max-udp-payload.
  endpoint.connection.transport.max_udp_payload_size = wire::kDefaultMaxUdpPayloadSize;
  endpoint.connection.max_datagram_size = options_.max_udp_payload;
  endpoint.retry.mode = options_.retry;
  endpoint.max_half_open_per_prefix = options_.max_half_open_per_address;
  endpoint.cid_layout.server_id = options_.server_id;
  endpoint.stateless_reset_key = std::move(keys.stateless_reset_key);
  endpoint.address_token_key = std::move(keys.address_token_key);
  endpoint.previous_address_token_keys = std::move(keys.previous_address_token_keys);
  endpoint.token_clock_offset = token_clock_offset();
  endpoint.tracer_factory = qlog_.get();
  if (dpdk) {
    build_dpdk_shards(endpoint, tls);
  } else {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const size_t cores =
        options_.cores != 0 ? options_.cores : static_cast<size_t>(std::max(1L, online));
    build_udp_shards(endpoint, tls, cores, (options_.max_connections + cores - 1) / cores);
  }
  if (metrics_) metrics_->start([this] { return metrics_text(); });
}

void Server::add_apps(endpoint::Endpoint& endpoint, size_t per_shard) {
  // /etc/mime.types is read once, for the first shard, when files are served.
  std::shared_ptr<const MimeTypes> mime_types;
  if (!apps_.empty()) {
    mime_types = apps_.front()->mime_types;
  } else if (!options_.root.empty()) {
    mime_types = std::make_shared<const MimeTypes>(MimeTypes::load());
  }
  apps_.push_back(std::make_unique<ShardApps>(endpoint, per_shard, options_.root, mime_types));
  endpoints_.push_back(&endpoint);
}

void Server::build_udp_shards(const endpoint::EndpointConfig& base,
                              const crypto::TlsServerConfig& tls, size_t cores, size_t per_shard) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  endpoint::EndpointConfig endpoint = base;
  endpoint.max_connections = per_shard;
  for (size_t i = 0; i < cores; ++i) {
    tls_.push_back(crypto::TlsContext::create_server(tls));
    ShardConfig config;
    config.endpoint = endpoint;
    config.endpoint.core_id = static_cast<uint8_t>(i);
    config.shard_count = cores;
    config.cpu = online > 0 && cores <= static_cast<size_t>(online) ? static_cast<int>(i) : -1;
    config.listen = options_.listen;
    config.gso = options_.gso;
    config.max_datagram_size = options_.max_udp_payload;
    config.busy_poll = options_.poll == PollMode::kBusy;
    config.drain_timeout = static_cast<Duration>(options_.drain_timeout_seconds) * kSecond;
    // The shard and its applications are built on the core that runs them.
    run_on_cpu(config.cpu, [&] {
      shards_.push_back(std::make_unique<Shard>(config, *tls_.back()));
      add_apps(shards_.back()->endpoint(), per_shard);
    });
    shards_.back()->set_application(&apps_.back()->router);
    counters_.push_back(&shards_.back()->counters());
    cores_.push_back(&shards_.back()->core());
  }
  std::vector<Shard*> peers;
  for (auto& shard : shards_) peers.push_back(shard.get());
  for (auto& shard : shards_) shard->set_peers(peers);
}

void Server::build_dpdk_shards(const endpoint::EndpointConfig& base,
                               const crypto::TlsServerConfig& tls) {
  dpdk::DpdkRuntimeConfig config;
  std::string error;
  config.eal_arguments = dpdk::split_eal_arguments(options_.eal, error);
  if (!error.empty()) throw std::runtime_error("--eal: " + error);
  // EAL's start-up chatter (INFO) off unless --eal asks for it (a later
  // --log-level wins); its warnings and errors still show.
  config.eal_arguments.insert(config.eal_arguments.begin(), "--log-level=lib.eal:warning");
  if (options_.ip) {
    config.interface.ipv4 = options_.ip->address;
    config.interface.ipv4_prefix = options_.ip->prefix_length;
  }
  if (options_.ip6) {
    config.interface.ipv6 = options_.ip6->address;
    config.interface.ipv6_prefix = options_.ip6->prefix_length;
  }
  if (options_.gateway) {
    auto& gateway = options_.gateway->family == conn::AddressFamily::kIpv4
                        ? config.interface.gateway4
                        : config.interface.gateway6;
    gateway = *options_.gateway;
  }
  // The ports of --listen (the addresses are --ip/--ip6 here).
  for (const conn::SocketAddress& address : options_.listen) {
    if (std::find(config.udp_ports.begin(), config.udp_ports.end(), address.port) ==
        config.udp_ports.end()) {
      config.udp_ports.push_back(address.port);
    }
  }
  config.max_udp_payload = static_cast<uint32_t>(options_.max_udp_payload);
  config.drain_timeout = static_cast<Duration>(options_.drain_timeout_seconds) * kSecond;
  config.shards = options_.cores;
  dpdk_ = std::make_unique<dpdk::DpdkRuntime>(config);
  const size_t shards = dpdk_->shard_count();
  endpoint::EndpointConfig endpoint = base;
  endpoint.max_connections = (options_.max_connections + shards - 1) / shards;
  endpoint.connection.max_datagram_size = dpdk_->max_udp_payload();
  for (size_t i = 0; i < shards; ++i) {
    tls_.push_back(crypto::TlsContext::create_server(tls));
    dpdk::DpdkShard& shard = dpdk_->add_shard(endpoint, *tls_.back());
    dpdk_->run_on_worker(i, [&] { add_apps(shard.endpoint(), endpoint.max_connections); });
    shard.set_application(&apps_.back()->router);
    counters_.push_back(&shard.counters());
    cores_.push_back(&shard.core());
  }
}

Server::~Server() {
  metrics_.reset();
  if (dpdk_) dpdk_->join();
  // Connections hold chunks from the applications' pools: drop them first.
  for (endpoint::Endpoint* endpoint : endpoints_) endpoint->reset_connections();
  apps_.clear();
  shards_.clear();
  dpdk_.reset();
}

std::string Server::banner() const {
  std::string text = "dataplane: serving h3 and perf on ";
  if (dpdk_) {
    for (const auto& ip : {options_.ip, options_.ip6}) {
      if (!ip) continue;
      for (const conn::SocketAddress& listen : options_.listen) {
        conn::SocketAddress address = ip->address;
        address.port = listen.port;
        text += format_address(address) + " ";
      }
    }
    text += "with " + std::to_string(endpoints_.size()) + " shard" +
            (endpoints_.size() == 1 ? "" : "s") + " (DPDK poll mode)\n";
    text += "dataplane: " + dpdk_->describe() + "\n";
  } else {
    for (size_t i = 0; i < options_.listen.size(); ++i) {
      text += (i ? ", " : "") + format_address(options_.listen[i]);
    }
    text += " with " + std::to_string(shards_.size()) + " shard" +
            (shards_.size() == 1 ? "" : "s") + " (kernel UDP, GSO " +
            (options_.gso ? "on" : "off") + ", " +
            (options_.poll == PollMode::kBusy ? "busy poll" : "epoll") + ")\n";
  }
  if (metrics_) {
    text += "dataplane: metrics on http://" + format_address(metrics_->address()) + "/metrics\n";
  }
  text +=
      std::string("dataplane: certificate ") +
      (certificate_generated_ ? "self-signed (generated at start)" : options_.certificate_file) +
      ", SHA-256 fingerprint " + certificate_->sha256_fingerprint() + "\n";
  text += describe_server_keys(options_);
  if (!options_.root.empty()) text += "dataplane: serving files under " + options_.root + "\n";
  text += "dataplane: open files limit " + std::to_string(descriptors_);
  if (descriptors_ != descriptors_at_start_) {
    text += " (raised from " + std::to_string(descriptors_at_start_) + ")";
  }
  if (!options_.root.empty()) {
    // What file responses may hold at once, all connections busy.
    const uint64_t files =
        static_cast<uint64_t>(options_.max_connections) * H3ServerConfig{}.max_files_per_connection;
    text += "; file responses hold up to " + std::to_string(files) + " (" +
            std::to_string(H3ServerConfig{}.max_files_per_connection) + " per connection)";
    if (files >= descriptors_) text += ", more than the limit: beyond it a file request gets 503";
  }
  return text + "\n";
}

CounterSnapshot Server::totals() const {
  CounterSnapshot snapshot;
  for (const ShardCounters* counters : counters_) snapshot.add(*counters);
  return snapshot;
}

std::string Server::metrics_text() const {
  std::vector<ShardMetrics> shards(counters_.size());
  for (size_t i = 0; i < counters_.size(); ++i) {
    shards[i].counters.add(*counters_[i]);
    shards[i].handshake_time.add(counters_[i]->handshake_time);
    // Every shard is a DPDK one when dpdk_ is there, none otherwise.
    if (dpdk_) shards[i].loop_time.emplace().add(*counters_[i]);
  }
  return format_prometheus_text(shards);
}

std::string Server::totals_line() const {
  const CounterSnapshot t = totals();
  char line[512];
  std::snprintf(
      line, sizeof(line),
      "dataplane: totals: handshakes=%llu retries=%llu version_negotiations=%llu "
      "refused=%llu packets_in=%llu packets_out=%llu bytes_in=%llu bytes_out=%llu "
      "drops=%llu steered=%llu gso_fallbacks=%llu half_open_dropped=%llu stateless_resets=%llu\n",
      static_cast<unsigned long long>(t.handshakes), static_cast<unsigned long long>(t.retries),
      static_cast<unsigned long long>(t.version_negotiations),
      static_cast<unsigned long long>(t.refused), static_cast<unsigned long long>(t.datagrams_in),
      static_cast<unsigned long long>(t.datagrams_out), static_cast<unsigned long long>(t.bytes_in),
      static_cast<unsigned long long>(t.bytes_out), static_cast<unsigned long long>(t.drops),
      static_cast<unsigned long long>(t.steered), static_cast<unsigned long long>(t.gso_fallbacks),
      static_cast<unsigned long long>(t.half_open_dropped),
      static_cast<unsigned long long>(t.stateless_resets));
  return line;
}

void Server::print_stats(double seconds, const CounterSnapshot& previous,
                         const CounterSnapshot& now) {
  const double gbps = 8.0 / 1e9 / seconds;
  std::printf(
      "stats: connections=%llu handshakes/s=%.1f in=%.3fGbps out=%.3fGbps packets_in=%llu "
      "packets_out=%llu drops=%llu retries=%llu\n",
      static_cast<unsigned long long>(now.connections),
      static_cast<double>(now.handshakes - previous.handshakes) / seconds,
      static_cast<double>(now.bytes_in - previous.bytes_in) * gbps,
      static_cast<double>(now.bytes_out - previous.bytes_out) * gbps,
      static_cast<unsigned long long>(now.datagrams_in - previous.datagrams_in),
      static_cast<unsigned long long>(now.datagrams_out - previous.datagrams_out),
      static_cast<unsigned long long>(now.drops - previous.drops),
      static_cast<unsigned long long>(now.retries - previous.retries));
  std::fflush(stdout);
}

void Server::wake_shards() {
  for (auto& shard : shards_) shard->wake();
}

void Server::advance_phase() {
  if (phase_.load(std::memory_order_acquire) == RunPhase::kServe &&
      options_.drain_timeout_seconds != 0) {
    std::printf(
        "dataplane: draining: new connections refused, GOAWAY sent; at most %u s "
        "(signal again to stop at once)\n",
        options_.drain_timeout_seconds);
    phase_.store(RunPhase::kDrain, std::memory_order_release);
  } else {
    std::printf("dataplane: stopping: closing every connection\n");
    phase_.store(RunPhase::kStop, std::memory_order_release);
  }
  std::fflush(stdout);
  wake_shards();
}

void Server::run() {
  std::vector<std::thread> threads;
  for (auto& shard : shards_) {
    threads.emplace_back([this, s = shard.get()] {
      s->run(phase_);
      shards_finished_.fetch_add(1, std::memory_order_release);
    });
  }
  if (dpdk_) {
    dpdk_->launch_each([this](dpdk::DpdkShard& shard) {
      shard.run(phase_);
      shards_finished_.fetch_add(1, std::memory_order_release);
    });
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  CounterSnapshot previous = totals();
  Instant last = monotonic_now();
  const Duration stats_interval = static_cast<Duration>(options_.stats_seconds) * kSecond;
  // Woken by a signal, or every 100 ms to see whether the shards are done.
  while (shards_finished_.load(std::memory_order_acquire) < endpoints_.size()) {
    timespec timeout{0, 100 * 1000 * 1000};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM) advance_phase();
    if (signal == SIGHUP) reload();
    const Instant now = monotonic_now();
    if (stats_interval != 0 && now - last >= stats_interval) {
      const CounterSnapshot current = totals();
      print_stats(static_cast<double>(now - last) / kSecond, previous, current);
      previous = current;
      last = now;
    }
  }
  for (auto& thread : threads) thread.join();
  if (dpdk_) dpdk_->join();
}

}  // namespace dpquic::dataplane
