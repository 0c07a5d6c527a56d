#pragma once
// H3Server and H3Client over the in-memory QuicPair (real TLS, ALPN "h3"),
// driven like a shard drives them: every endpoint event to the application,
// then pump(). Plus a handler that records responses and checks synthetic
// bodies byte for byte.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/app/h3_client.h"
#include "dataplane/app/h3_server.h"
#include "dataplane/app/synthetic_body.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::dataplane::testing {

inline harness::PairOptions h3_pair_options() {
  harness::PairOptions options;
  options.server_tls.alpn_protocols = {"h3"};
  options.client_tls.alpn_protocols = {"h3"};
  return options;
}

template <typename App>
void run_application(endpoint::Endpoint& endpoint, App& app, Instant now) {
  endpoint::EndpointEvent event;
  while (endpoint.poll_event(event)) app.on_event(now, event);
  app.pump(now);
}

struct RecordedResponse {
  int status = 0;
  std::optional<uint64_t> content_length;
  std::vector<std::pair<std::string, std::string>> headers;
  uint64_t received = 0;
  bool synthetic_matches = true;  // every byte equals synthetic_byte(offset)
  std::vector<uint8_t> body;      // kept when the recorder keeps bodies
  int headers_calls = 0;
  bool done = false;
  H3Outcome outcome;

  std::optional<std::string> header(const std::string& name) const {
    for (const auto& [field, value] : headers) {
      if (field == name) return value;
    }
    return std::nullopt;
  }
};

class ResponseRecorder final : public H3ResponseHandler {
 public:
  explicit ResponseRecorder(bool keep_bodies = false) : keep_bodies_(keep_bodies) {}

  void on_header(uint64_t id, std::string_view name, std::string_view value) override {
    responses_[id].headers.emplace_back(std::string(name), std::string(value));
  }
  void on_headers(uint64_t id, int status, std::optional<uint64_t> content_length) override {
    RecordedResponse& response = responses_[id];
    response.status = status;
    response.content_length = content_length;
    ++response.headers_calls;
  }
  void on_body(uint64_t id, std::span<const uint8_t> bytes) override {
    RecordedResponse& response = responses_[id];
    if (!matches_synthetic(response.received, bytes)) response.synthetic_matches = false;
    if (keep_bodies_) response.body.insert(response.body.end(), bytes.begin(), bytes.end());
    response.received += bytes.size();
  }
  void on_complete(uint64_t id, H3Outcome outcome) override {
    RecordedResponse& response = responses_[id];
    EXPECT_FALSE(response.done) << "request " << id << " completed twice";
    response.done = true;
    response.outcome = outcome;
    ++completed_;
  }

  const RecordedResponse& operator[](uint64_t id) { return responses_[id]; }
  size_t completed() const { return completed_; }

 private:
  bool keep_bodies_;
  std::map<uint64_t, RecordedResponse> responses_;
  size_t completed_ = 0;
};

class H3Pair {
 public:
  explicit H3Pair(const H3ServerConfig& server_config = {},
                  harness::PairOptions options = h3_pair_options())
      : pair(std::move(options)), server(*pair.server, server_config), client(*pair.client) {
    pair.server_node->set_application(
        [this](Instant now) { run_application(*pair.server, server, now); });
    pair.server_node->set_application_deadline([this] { return server.next_deadline(); });
    pair.client_node->set_application(
        [this](Instant now) { run_application(*pair.client, client, now); });
  }
  ~H3Pair() {
    // Queued chunks refer to the applications' pools.
    pair.server->reset_connections();
    pair.client->reset_connections();
  }

  // Connects and runs until the client's handshake is confirmed.
  endpoint::ConnectionHandle connect() {
    const endpoint::ConnectionHandle handle = pair.connect();
    EXPECT_TRUE(pair.run_until([&] {
      const conn::Connection* c = pair.client_connection(handle);
      return c == nullptr || c->handshake_confirmed();
    }));
    return handle;
  }

  uint64_t get(endpoint::ConnectionHandle handle, const std::string& path,
               ResponseRecorder& recorder, const std::string& method = "GET",
               std::vector<std::pair<std::string, std::string>> fields = {}) {
    H3Request request;
    request.method = method;
    request.authority = "localhost";
    request.path = path;
    request.fields = std::move(fields);
    const uint64_t id = client.request(handle, request, &recorder);
    EXPECT_NE(id, 0u);
    return id;
  }

  bool run_until_completed(ResponseRecorder& recorder, size_t count,
                           Duration limit = 60 * kSecond) {
    return pair.run_until([&] { return recorder.completed() >= count; }, limit);
  }

  harness::QuicPair pair;
  H3Server server;
  H3Client client;
};

}  // namespace dpquic::dataplane::testing
