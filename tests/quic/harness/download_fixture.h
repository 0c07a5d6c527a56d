#pragma once
// A gtest fixture for scenarios around one perf download: a QuicPair with the
// perf applications attached, a bottlenecked server-to-client link so the
// download spans many round trips, and helpers to run it part way or to the
// end with the byte-exact checks.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {

class DownloadFixture : public ::testing::Test {
 protected:
  // Builds the pair on `client`/`server` addresses and requests `bytes`.
  // Nothing runs yet, so an observer set afterwards sees every datagram.
  void start_download(PairOptions options, SocketAddress client, SocketAddress server,
                      uint64_t bytes) {
    options.client_address = client;
    options.server_address = server;
    options.server_to_client.bandwidth_bps = 40'000'000;
    options.server_to_client.queue_bytes = 256 * 1024;
    start_download(options, bytes);
  }
  // The same on exactly the links and addresses `options` name.
  void start_download(const PairOptions& options, uint64_t bytes) {
    download_bytes_ = bytes;
    pair_ = std::make_unique<QuicPair>(options);
    server_app_ = std::make_unique<PerfServer>(*pair_->server);
    client_app_ = std::make_unique<PerfClient>(*pair_->client);
    attach(*pair_, *server_app_, *client_app_);
    handle_ = pair_->connect();
    client_app_->request(handle_, bytes);
  }

  // Runs until `bytes` of the download arrived.
  void run_until_received(uint64_t bytes) {
    ASSERT_TRUE(pair_->run_until([&] { return client_app_->bytes_received() >= bytes; }));
  }
  // Runs to the end of the download and checks it byte for byte.
  void finish_download() {
    ASSERT_TRUE(pair_->run_until([&] { return client_app_->completed() == 1; }));
    ASSERT_NE(client(), nullptr);
    ASSERT_NE(server(), nullptr);
    EXPECT_EQ(client_app_->bytes_received(), download_bytes_);
    EXPECT_EQ(client_app_->mismatches(), 0u);
    EXPECT_EQ(client_app_->closed(), 0u);
  }

  conn::Connection* client() { return pair_->client_connection(handle_); }
  conn::Connection* server() { return pair_->server_connection(); }

  std::unique_ptr<QuicPair> pair_;
  std::unique_ptr<PerfServer> server_app_;
  std::unique_ptr<PerfClient> client_app_;
  endpoint::ConnectionHandle handle_ = 0;
  uint64_t download_bytes_ = 0;
};

}  // namespace dpquic::harness
