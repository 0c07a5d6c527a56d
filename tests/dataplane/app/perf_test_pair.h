#pragma once
// The dataplane perf server and client on the two endpoints of an in-memory
// QuicPair that negotiates ALPN "perf", driven the way a shard drives its
// applications: every endpoint event to on_event, then pump().

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "dataplane/app/perf_client.h"
#include "dataplane/app/perf_server.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::dataplane::testing {

// Keeps what the client reports (allocation-free once its maps hold the ids
// it is given, so tests that count allocations use their own handler).
struct RecordingHandler : PerfResponseHandler {
  void on_complete(uint64_t request_id, const PerfOutcome& outcome) override {
    outcomes[request_id] = outcome;
  }
  void on_stream_opened(uint64_t request_id, endpoint::ConnectionHandle,
                        uint64_t stream_id) override {
    streams[request_id] = stream_id;
  }
  std::map<uint64_t, PerfOutcome> outcomes;
  std::map<uint64_t, uint64_t> streams;
};

class PerfPair {
 public:
  explicit PerfPair(harness::PairOptions options = harness::PairOptions(),
                    const PerfServerConfig& server_config = PerfServerConfig(),
                    const PerfClientConfig& client_config = PerfClientConfig()) {
    options.server_tls.alpn_protocols = {"perf"};
    options.client_tls.alpn_protocols = {"perf"};
    pair = std::make_unique<harness::QuicPair>(options);
    server = std::make_unique<PerfServer>(*pair->server, server_config);
    client = std::make_unique<PerfClient>(*pair->client, client_config);
    pair->server_node->set_application([this](Instant now) {
      endpoint::EndpointEvent event;
      while (pair->server->poll_event(event)) {
        if (event.event.type == conn::ConnectionEventType::kEstablished) {
          server_handles.push_back(event.connection);
        }
        if (server_observer) server_observer(event);
        server->on_event(now, event);
      }
      server->pump(now);
    });
    pair->server_node->set_application_deadline([this] { return server->next_deadline(); });
    pair->client_node->set_application([this](Instant now) {
      endpoint::EndpointEvent event;
      while (pair->client->poll_event(event)) {
        if (client_observer) client_observer(event);
        client->on_event(now, event);
      }
      client->pump(now);
    });
  }
  // The endpoints go first: their connections hold the apps' chunks.
  ~PerfPair() { pair.reset(); }

  // Connects and waits for the handshake, with ALPN "perf".
  endpoint::ConnectionHandle connect() {
    const auto handle = pair->connect();
    const bool established = pair->run_until([&] {
      const conn::Connection* c = pair->client_connection(handle);
      return c != nullptr && c->is_established() && !server_handles.empty();
    });
    if (!established) throw std::runtime_error("perf pair: no handshake");
    return handle;
  }

  std::unique_ptr<PerfServer> server;
  std::unique_ptr<PerfClient> client;
  std::unique_ptr<harness::QuicPair> pair;  // declared last: destroyed first
  std::vector<endpoint::ConnectionHandle> server_handles;
  // Seen before the apps get each event.
  std::function<void(const endpoint::EndpointEvent&)> server_observer;
  std::function<void(const endpoint::EndpointEvent&)> client_observer;
};

}  // namespace dpquic::dataplane::testing
