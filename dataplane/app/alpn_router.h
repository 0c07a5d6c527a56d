#pragma once
// Hands each connection's events to the application of the ALPN protocol
// it negotiated (RFC 7301), so one shard serves h3 and perf side by side.
// A server connection is assigned at its first event (the ALPN is known
// once the ClientHello was processed, before any stream can open); a
// client's connection is assigned by whoever opened it.

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/app/application.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

class AlpnRouter final : public Application {
 public:
  // `max_connections`: the endpoint's pool size (handles are below it).
  AlpnRouter(endpoint::Endpoint& endpoint, size_t max_connections);

  // Routes connections that negotiated `alpn` to `application` (not owned).
  void add(std::string alpn, Application* application);
  // Client side: `handle`'s events go to `application` from now on.
  void assign(endpoint::ConnectionHandle handle, Application* application);

  void on_event(Instant now, const endpoint::EndpointEvent& event) override;
  void pump(Instant now) override;
  bool wants_pump() const override;
  void shutdown(Instant now) override;
  void drain(Instant now) override;
  Instant next_deadline() const override;

  // Events of connections whose ALPN no application serves (none reach
  // here after a successful handshake: TLS refuses unknown ALPNs).
  uint64_t unrouted_events() const { return unrouted_events_; }

 private:
  static constexpr uint8_t kUnassigned = 0xff;
  uint8_t index_of(Application* application);

  endpoint::Endpoint& endpoint_;
  struct Route {
    std::string alpn;
    Application* application;
  };
  std::vector<Route> routes_;
  std::vector<uint8_t> owner_;  // per handle: index in routes_, or kUnassigned
  uint64_t unrouted_events_ = 0;
};

}  // namespace dpquic::dataplane
