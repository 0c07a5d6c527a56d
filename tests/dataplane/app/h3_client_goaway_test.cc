// H3Client across a server's graceful stop: the old server drains (GOAWAY)
// while the client has requests in flight, requests sent but not yet taken
// and requests queued for stream credit; a new server behind the same
// address, reached by a connection from another source port (a layer-4
// balancer's view), takes what the old one refused. No request fails; the
// refused ones complete byte-exact on the new connection.

#include <gtest/gtest.h>
#include <nghttp3/nghttp3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "dataplane/app/h3_client.h"
#include "dataplane/app/h3_server.h"
#include "dataplane/app/synthetic_body.h"
#include "quic/conn/stream_id.h"
#include "tests/dataplane/app/h3_test_pair.h"
#include "tools/testbed/endpoint_node.h"
#include "tools/testbed/simulator.h"

namespace dpquic::dataplane::testing {
namespace {

using conn::PathAddresses;
using conn::SocketAddress;

constexpr uint16_t kOldClientPort = 50000;
constexpr uint16_t kNewClientPort = 50001;

// Two servers behind one address, as a layer-4 balancer spreads them:
// datagrams from the client's first port go to the old server, from any
// other port to the new one.
class BalancerNode final : public harness::Node {
 public:
  BalancerNode(harness::EndpointNode& old_server, harness::EndpointNode& new_server)
      : old_(old_server), new_(new_server) {}

  void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> bytes) override {
    (path.remote.port == kOldClientPort ? old_ : new_).handle_datagram(now, path, ecn, bytes);
  }
  void handle_timeout(Instant now) override {
    old_.handle_timeout(now);
    new_.handle_timeout(now);
  }
  Instant poll_timeout() override { return std::min(old_.poll_timeout(), new_.poll_timeout()); }
  void poll_transmit(Instant now, Sink& sink) override {
    old_.poll_transmit(now, sink);
    new_.poll_transmit(now, sink);
  }

 private:
  harness::EndpointNode& old_;
  harness::EndpointNode& new_;
};

struct ServerSide {
  ServerSide(const endpoint::EndpointConfig& config, const crypto::MbManager& mb,
             crypto::TlsContext& tls)
      : endpoint(config, mb, tls), h3(endpoint, H3ServerConfig{}), node(endpoint) {
    node.set_application([this](Instant now) { run_application(endpoint, h3, now); });
    node.set_application_deadline([this] { return h3.next_deadline(); });
  }
  endpoint::Endpoint endpoint;
  H3Server h3;
  harness::EndpointNode node;
};

// What the test asks for: a path, and whether it completed (possibly after
// being refused and sent again).
struct Wanted {
  std::string path;
  uint64_t size = 0;
  uint64_t request_id = 0;
  endpoint::ConnectionHandle handle = 0;
  int attempts = 0;
  uint64_t received = 0;
  bool synthetic_ok = true;
  bool done = false;
  H3Outcome outcome;
};

// The owner of the requests: it sends every refused one again on the
// replacement connection, as quicload and dpquic_client do.
class Owner final : public H3ResponseHandler, public H3GoawayHandler {
 public:
  explicit Owner(H3Client& client) : client_(client) { client_.set_goaway_handler(this); }

  size_t want(endpoint::ConnectionHandle handle, uint64_t size) {
    wanted_.push_back(Wanted{"/" + std::to_string(size), size});
    send(wanted_.size() - 1, handle);
    return wanted_.size() - 1;
  }

  void on_goaway(endpoint::ConnectionHandle handle, uint64_t stream_id) override {
    goaways_.push_back(stream_id);
    EXPECT_FALSE(client_.accepts_requests(handle));
  }
  void on_headers(uint64_t, int, std::optional<uint64_t>) override {}
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override {
    Wanted& w = wanted_[index_of(id)];
    if (!matches_synthetic(w.received, bytes)) w.synthetic_ok = false;
    w.received += bytes.size();
  }
  void on_complete(uint64_t id, H3Outcome outcome) override {
    const size_t index = index_of(id);
    if (outcome.result == H3Result::kRefused) {
      refused_after_goaway_.push_back({index, goaways_.size()});
      EXPECT_EQ(wanted_[index].received, 0u);
      // The replacement connection is opened by the test's loop; until
      // then, refused requests wait.
      waiting_.push_back(index);
      return;
    }
    wanted_[index].done = true;
    wanted_[index].outcome = outcome;
  }

  // Sends the waiting requests on `handle`.
  void resend(endpoint::ConnectionHandle handle) {
    for (size_t index : waiting_) send(index, handle);
    waiting_.clear();
  }

  const std::vector<Wanted>& wanted() const { return wanted_; }
  const std::vector<uint64_t>& goaways() const { return goaways_; }
  // (wanted index, GOAWAYs seen when it was refused)
  const std::vector<std::pair<size_t, size_t>>& refusals() const { return refused_after_goaway_; }
  bool waiting() const { return !waiting_.empty(); }
  bool all_done() const {
    return std::all_of(wanted_.begin(), wanted_.end(), [](const Wanted& w) { return w.done; });
  }

 private:
  void send(size_t index, endpoint::ConnectionHandle handle) {
    H3Request request;
    request.authority = "localhost";
    request.path = wanted_[index].path;
    wanted_[index].request_id = client_.request(handle, request, this);
    wanted_[index].handle = handle;
    ++wanted_[index].attempts;
    ASSERT_NE(wanted_[index].request_id, 0u);
  }
  size_t index_of(uint64_t id) const {
    for (size_t i = 0; i < wanted_.size(); ++i) {
      if (wanted_[i].request_id == id) return i;
    }
    ADD_FAILURE() << "unknown request " << id;
    return 0;
  }

  H3Client& client_;
  std::vector<Wanted> wanted_;
  std::vector<uint64_t> goaways_;
  std::vector<std::pair<size_t, size_t>> refused_after_goaway_;
  std::vector<size_t> waiting_;
};

class H3ClientGoawayTest : public ::testing::Test {
 protected:
  H3ClientGoawayTest()
      : options_(h3_pair_options()),
        certificate_(crypto::CertificateChain::generate_self_signed("localhost")) {
    // Few streams at once, so that requests queue for stream credit.
    options_.server.connection.transport.initial_max_streams_bidi = kServerStreams;
    options_.server_tls.certificate = &certificate_;
    server_tls_ = crypto::TlsContext::create_server(options_.server_tls);
    client_tls_ = crypto::TlsContext::create_client(options_.client_tls);
    old_server_ = std::make_unique<ServerSide>(options_.server, mb_, *server_tls_);
    new_server_ = std::make_unique<ServerSide>(options_.server, mb_, *server_tls_);
    balancer_ = std::make_unique<BalancerNode>(old_server_->node, new_server_->node);
    client_endpoint_ = std::make_unique<endpoint::Endpoint>(options_.client, mb_, *client_tls_);
    client_ = std::make_unique<H3Client>(*client_endpoint_);
    client_node_ = std::make_unique<harness::EndpointNode>(*client_endpoint_);
    client_node_->set_application(
        [this](Instant now) { run_application(*client_endpoint_, *client_, now); });
    simulator_ = std::make_unique<harness::Simulator>(
        *client_node_, client_address(kOldClientPort), *balancer_, options_.server_address,
        options_.client_to_server, options_.server_to_client);
  }
  ~H3ClientGoawayTest() override {
    // Queued chunks refer to the applications' pools.
    old_server_->endpoint.reset_connections();
    new_server_->endpoint.reset_connections();
    client_endpoint_->reset_connections();
  }

  SocketAddress client_address(uint16_t port) const {
    SocketAddress address = options_.client_address;
    address.port = port;
    return address;
  }
  endpoint::ConnectionHandle connect(uint16_t port) {
    const PathAddresses path{client_address(port), options_.server_address};
    const auto handle = client_endpoint_->connect(simulator_->now(), path, "localhost");
    EXPECT_TRUE(handle.has_value());
    return handle.value_or(0);
  }
  bool run_until(const std::function<bool()>& done, Duration limit = 30 * kSecond) {
    return simulator_->run_until(done, simulator_->now() + limit);
  }
  // The client-to-server path's one-way delay from now on.
  void set_uplink_delay(Duration delay) {
    harness::LinkConfig link = options_.client_to_server;
    link.one_way_delay = delay;
    simulator_->reconfigure_link(true, link);
  }

  static constexpr uint64_t kServerStreams = 8;

  harness::PairOptions options_;
  crypto::MbManager mb_;
  crypto::CertificateChain certificate_;
  std::unique_ptr<crypto::TlsContext> server_tls_;
  std::unique_ptr<crypto::TlsContext> client_tls_;
  std::unique_ptr<ServerSide> old_server_;
  std::unique_ptr<ServerSide> new_server_;
  std::unique_ptr<BalancerNode> balancer_;
  std::unique_ptr<endpoint::Endpoint> client_endpoint_;
  std::unique_ptr<H3Client> client_;
  std::unique_ptr<harness::EndpointNode> client_node_;
  std::unique_ptr<harness::Simulator> simulator_;
};

TEST_F(H3ClientGoawayTest, RefusedRequestsMoveToANewConnectionAndNoneFails) {
  Owner owner(*client_);
  const auto first = connect(kOldClientPort);
  ASSERT_TRUE(run_until([&] {
    const conn::Connection* c = client_endpoint_->connection(first);
    return c != nullptr && c->handshake_confirmed();
  }));

  // Four large responses under way (streams 0, 4, 8, 12).
  std::vector<size_t> large;
  for (int i = 0; i < 4; ++i) large.push_back(owner.want(first, 3'000'000));
  ASSERT_TRUE(run_until([&] {
    return std::all_of(large.begin(), large.end(),
                       [&](size_t i) { return owner.wanted()[i].received > 100'000; });
  }));

  // Four requests that reach the server only after its final GOAWAY (the
  // uplink slows down just before they leave), and six more that wait for
  // stream credit. Then the old server stops.
  set_uplink_delay(200 * kMillisecond);
  std::vector<size_t> late, queued;
  for (int i = 0; i < 4; ++i) late.push_back(owner.want(first, 20'000 + i));
  for (int i = 0; i < 6; ++i) queued.push_back(owner.want(first, 30'000 + i));
  old_server_->endpoint.set_accepting(false);
  old_server_->h3.drain(simulator_->now());

  // The final GOAWAY names the first stream the server did not take: the
  // late ones are at or above it. The replacement connection opens at the
  // first GOAWAY, from a new source port (so the balancer sends it to the
  // new server); refused requests go on it.
  endpoint::ConnectionHandle second = 0;
  bool second_open = false;
  ASSERT_TRUE(run_until([&] {
    if (!second_open && !owner.goaways().empty()) {
      second = connect(kNewClientPort);
      second_open = true;
    }
    if (second_open && owner.waiting()) owner.resend(second);
    return owner.goaways().size() >= 2;
  }));
  set_uplink_delay(options_.client_to_server.one_way_delay);
  ASSERT_TRUE(run_until([&] {
    if (owner.waiting()) owner.resend(second);
    return owner.all_done();
  }));

  ASSERT_EQ(owner.goaways().size(), 2u);
  EXPECT_EQ(owner.goaways()[0], NGHTTP3_SHUTDOWN_NOTICE_STREAM_ID);
  EXPECT_EQ(owner.goaways()[1], 16u);  // after streams 0, 4, 8 and 12
  for (const Wanted& w : owner.wanted()) {
    EXPECT_EQ(w.outcome.result, H3Result::kOk) << w.path;
    EXPECT_EQ(w.received, w.size) << w.path;
    EXPECT_TRUE(w.synthetic_ok) << w.path;
  }
  for (size_t i : large) {
    EXPECT_EQ(owner.wanted()[i].attempts, 1);
    EXPECT_EQ(owner.wanted()[i].handle, first);
  }
  // Queued ones were refused at the first GOAWAY, the late ones at the
  // second; all of them completed on the new connection.
  for (const auto& [index, goaways_seen] : owner.refusals()) {
    const bool is_late = std::find(late.begin(), late.end(), index) != late.end();
    EXPECT_EQ(goaways_seen, is_late ? 2u : 1u) << owner.wanted()[index].path;
  }
  EXPECT_EQ(owner.refusals().size(), late.size() + queued.size());
  for (const std::vector<size_t>* group : {&late, &queued}) {
    for (size_t i : *group) {
      EXPECT_EQ(owner.wanted()[i].attempts, 2) << owner.wanted()[i].path;
      EXPECT_EQ(owner.wanted()[i].handle, second);
    }
  }
  EXPECT_EQ(client_->stats().refused, late.size() + queued.size());
  EXPECT_EQ(client_->stats().failed, 0u);
  EXPECT_EQ(old_server_->h3.stats().requests, large.size());
  EXPECT_EQ(new_server_->h3.stats().requests, late.size() + queued.size());
  EXPECT_TRUE(client_->accepts_requests(second));
}

TEST(H3ClientRejectedTest, AStreamTheServerRejectsIsRefusedNotFailed) {
  // A server that rejects every request stream with H3_REQUEST_REJECTED
  // (RFC 9114 §4.1.1), as one does for requests above its GOAWAY's ID that
  // arrive before the client read that GOAWAY.
  harness::QuicPair pair(h3_pair_options());
  H3Client client(*pair.client);
  pair.client_node->set_application(
      [&](Instant now) { run_application(*pair.client, client, now); });
  pair.server_node->set_application([&](Instant) {
    endpoint::EndpointEvent event;
    while (pair.server->poll_event(event)) {
      const uint64_t stream = event.event.stream_id;
      if (event.event.type == conn::ConnectionEventType::kStreamOpened &&
          conn::is_client_bidirectional(stream)) {
        pair.server->stop_sending(event.connection, stream, NGHTTP3_H3_REQUEST_REJECTED);
        pair.server->reset_stream(event.connection, stream, NGHTTP3_H3_REQUEST_REJECTED);
      }
    }
  });
  const auto handle = pair.connect();
  ResponseRecorder recorder;
  H3Request request;
  request.authority = "localhost";
  request.path = "/1000";
  const uint64_t id = client.request(handle, request, &recorder);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(pair.run_until([&] { return recorder.completed() == 1; }));
  EXPECT_EQ(recorder[id].outcome.result, H3Result::kRefused);
  EXPECT_EQ(recorder[id].outcome.error_code, NGHTTP3_H3_REQUEST_REJECTED);
  EXPECT_EQ(client.stats().refused, 1u);
  EXPECT_EQ(client.stats().failed, 0u);
  // No GOAWAY: the connection still takes requests.
  EXPECT_TRUE(client.accepts_requests(handle));
  pair.client->reset_connections();
  pair.server->reset_connections();
}

}  // namespace
}  // namespace dpquic::dataplane::testing
