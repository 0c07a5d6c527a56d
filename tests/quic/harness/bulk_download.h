#pragma once
// A bulk perf download through the whole stack in virtual time, from a
// server running a chosen congestion controller over a 100 Mbit/s
// bottleneck with a 40 ms base RTT: on a network of its own (with loss and
// a queue depth to choose), or as one of several flows on a shared
// Dumbbell. The congestion-control scenario tests drive it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "quic/recovery/bbr.h"
#include "tools/testbed/dumbbell.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness::bulk {

using recovery::Bbr;
using recovery::CongestionControlAlgorithm;

constexpr uint64_t kLinkBps = 100'000'000;
constexpr double kLinkBytesPerSecond = kLinkBps / 8.0;
constexpr Duration kOneWay = 20 * kMillisecond;
constexpr uint64_t kMegabyte = 1'000'000;
constexpr size_t kOneBdp = 500'000;  // bytes at 100 Mbit/s over 40 ms

struct Path {
  double loss = 0;         // each way, independent
  size_t queue_bytes = 0;  // bottleneck queue; 0: one BDP
  uint64_t seed = 1;
};

// The server-to-client (bottleneck) and client-to-server links of `path`.
inline LinkConfig downlink(const Path& path) {
  LinkConfig link;
  link.one_way_delay = kOneWay;
  link.bandwidth_bps = kLinkBps;
  link.queue_bytes = path.queue_bytes != 0 ? path.queue_bytes : kOneBdp;
  link.loss = path.loss;
  link.seed = path.seed;
  return link;
}
inline LinkConfig uplink(const Path& path) {
  LinkConfig link;
  link.one_way_delay = kOneWay;
  link.loss = path.loss;
  link.seed = path.seed + 1000;
  return link;
}

// Pair options for a download by a server running `algorithm`, flow
// `index` (its own addresses) on `path`.
inline PairOptions bulk_options(CongestionControlAlgorithm algorithm, const Path& path,
                                uint8_t index = 0) {
  PairOptions options;
  options.server_to_client = downlink(path);
  options.client_to_server = uplink(path);
  options.client_address = SocketAddress::ipv4(10, 0, 0, static_cast<uint8_t>(1 + index), 50000);
  options.server_address = SocketAddress::ipv4(10, 0, 1, static_cast<uint8_t>(1 + index), 443);
  options.server.connection.congestion_control = algorithm;
  // Receive windows far above the path's BDP plus its deepest queue, so
  // flow control never caps either algorithm.
  conn::TransportConfig& transport = options.client.connection.transport;
  transport.initial_max_data = 64 << 20;
  transport.initial_max_stream_data = 32 << 20;
  transport.max_connection_window = 128 << 20;
  transport.max_stream_window = 64 << 20;
  for (endpoint::EndpointConfig* config : {&options.client, &options.server}) {
    config->connection.transport.max_idle_timeout_ms = 120'000;
  }
  return options;
}

// One download from a server running `algorithm`.
class Download {
 public:
  // On a network of its own; the download starts at once.
  Download(CongestionControlAlgorithm algorithm, const Path& path, uint64_t bytes) : bytes_(bytes) {
    pair_ = std::make_unique<QuicPair>(bulk_options(algorithm, path));
    set_up(path.seed);
    start();
  }
  // Flow `index` on a shared `network`; the download waits for start().
  Download(CongestionControlAlgorithm algorithm, Dumbbell& network, uint8_t index, uint64_t bytes)
      : bytes_(bytes), network_(&network) {
    pair_ = std::make_unique<QuicPair>(bulk_options(algorithm, Path{}, index), network);
    set_up(1 + index);
  }

  void start() {
    handle_ = pair_->connect();
    client_app_->request(handle_, bytes_);
  }
  // Runs `duration` of virtual time (or to the download's end).
  void run(Duration duration) {
    pair_->run_until([&] { return done(); }, duration);
  }
  bool done() const { return client_app_->completed() == 1; }
  void check_complete() const {
    EXPECT_TRUE(done());
    EXPECT_EQ(client_app_->bytes_received(), bytes_);
    EXPECT_EQ(client_app_->mismatches(), 0u);
  }
  uint64_t received() const { return client_app_->bytes_received(); }
  // Bytes the bottleneck delivered toward the client: datagrams whole,
  // retransmissions included.
  uint64_t link_bytes() const {
    if (network_ != nullptr) return network_->bytes_delivered_to(pair_->options.client_address);
    return pair_->simulator->server_to_client_stats().bytes_delivered;
  }
  Instant now() const { return pair_->now(); }
  const conn::Connection& server() const { return *pair_->server_connection(); }
  const Bbr& bbr() const {
    EXPECT_EQ(server().congestion().algorithm(), CongestionControlAlgorithm::kBbr);
    return static_cast<const Bbr&>(server().congestion());
  }
  Duration smoothed_rtt() const { return server().recovery().rtt().smoothed_rtt(); }
  // A new bottleneck rate (own network only).
  void set_bandwidth(uint64_t bps) {
    LinkConfig link = pair_->options.server_to_client;
    link.bandwidth_bps = bps;
    link.seed += 7;
    pair_->simulator->reconfigure_link(false, link);
  }

 private:
  void set_up(uint64_t seed) {
    // BBR's probe timing is randomized (PickProbeWait): a fixed seed makes
    // each scenario repeat from run to run.
    pair_->server->core().random->use_fixed_seed(seed);
    server_app_ = std::make_unique<PerfServer>(*pair_->server);
    client_app_ = std::make_unique<PerfClient>(*pair_->client);
    attach(*pair_, *server_app_, *client_app_);
  }

  uint64_t bytes_ = 0;
  Dumbbell* network_ = nullptr;
  std::unique_ptr<QuicPair> pair_;
  std::unique_ptr<PerfServer> server_app_;
  std::unique_ptr<PerfClient> client_app_;
  endpoint::ConnectionHandle handle_ = 0;
};

}  // namespace dpquic::harness::bulk
