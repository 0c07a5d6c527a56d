#pragma once
// In-memory endpoints for the endpoint fuzz targets: our client and server
// endpoints with null packet protection (tests/fuzz/null_packet_protection.h),
// real TLS, fixed random seeds, driven by hand without the simulator.
//
// Shared once per process: the MbManager (with the null protection
// installed), the certificate and both TLS contexts (the client keeps no
// sessions, so no input resumes one an earlier input left behind). Each
// FuzzPair has fresh endpoints, so inputs do not influence each other.
//
// Determinism: both endpoints' RandomSource use fixed seeds from their
// creation on, so connection IDs, reset tokens and PATH_CHALLENGE data repeat
// from run to run; only TLS randomness (key shares, hello randoms) differs,
// and no fuzz input depends on it: with null protection packets open whatever
// the keys, and the CIDs an input must name are the fixed-seed ones (printed
// by endpoint_seed_capture).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/tls_context.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::fuzz {

inline const conn::SocketAddress kClientAddress = conn::SocketAddress::ipv4(10, 0, 0, 1, 50000);
inline const conn::SocketAddress kServerAddress = conn::SocketAddress::ipv4(10, 0, 0, 2, 443);
// Another address of each peer (a migrated client, a server's preferred
// address), for datagrams that start with kAltPathPrefix.
inline const conn::SocketAddress kClientAltAddress = conn::SocketAddress::ipv4(10, 0, 1, 1, 50001);
inline const conn::SocketAddress kServerAltAddress = conn::SocketAddress::ipv4(10, 0, 1, 2, 4433);

// The marker between datagrams in the inputs of the multi-datagram targets.
inline constexpr uint8_t kDatagramMarker[4] = {'Q', 'D', 'G', 'M'};
// A datagram of a multi-datagram input that starts with this comes from the
// peer's other address (the prefix is not delivered).
inline constexpr uint8_t kAltPathPrefix[4] = {'Q', 'P', 'T', 'H'};
// Splits `input` on kDatagramMarker (empty pieces are skipped).
std::vector<std::span<const uint8_t>> split_datagrams(std::span<const uint8_t> input);
// Strips kAltPathPrefix from `datagram`; true if it was there.
bool take_alt_path_prefix(std::span<const uint8_t>& datagram);

// The process-wide MbManager with null packet protection installed.
crypto::MbManager& null_protection_manager();

// Endpoint configurations of the fuzz pair (small pools, fixed keys).
endpoint::EndpointConfig server_config();
endpoint::EndpointConfig client_config();

// A fresh server endpoint (fixed seed) on the shared resources.
std::unique_ptr<endpoint::Endpoint> make_server();
// A fresh client endpoint (fixed seed); `alpn` is "perf" or "h3".
std::unique_ptr<endpoint::Endpoint> make_client(const std::string& alpn = "perf");

// Every datagram `from` sends at `now`, in order (at most `limit`).
std::vector<std::vector<uint8_t>> take_transmit(endpoint::Endpoint& from, Instant now,
                                                size_t limit = 256);

// The initial targets: one datagram into `endpoint`, which has no peer,
// arriving on `path` at `now`; then up to three rounds of what it sends
// (discarded), its events and its next timer. A datagram larger than any
// UDP payload is ignored.
void deliver_alone(endpoint::Endpoint& endpoint, Instant now, const conn::PathAddresses& path,
                   std::span<const uint8_t> datagram);

// The established targets: a fresh pair past its handshake, disconnected,
// then each datagram of `input` (split_datagrams, at most 64, kAltPathPrefix
// honoured) to the server (`to_server`) or the client, from the other side.
void deliver_established(bool to_server, std::span<const uint8_t> input);

class FuzzPair {
 public:
  explicit FuzzPair(const std::string& alpn = "perf");

  // Connects the client and runs both endpoints until the handshake is
  // confirmed on both sides. Returns false if it was not (a bug: the null
  // protection handshake is deterministic apart from TLS randomness).
  bool handshake();

  // One datagram to the server from the client's address (`to_server`), or
  // to the client from the server's (`alt`: from the peer's other address),
  // then settle().
  void deliver(bool to_server, std::span<const uint8_t> datagram, bool alt = false);

  // From now on what each endpoint sends is dropped rather than delivered
  // (both still run: transmit, timers). The established targets call it
  // after the handshake, so the input alone plays the peer: otherwise the
  // server's ACKs of input packets would reach the real client, which never
  // sent them and rightly closes the connection (RFC 9000 §13.1).
  void disconnect() { connected_ = false; }

  // Exchanges datagrams between the endpoints until both are quiet (at most
  // `rounds` exchanges), firing timers due within `timer_horizon` of virtual
  // time (at most `timer_steps` of them). Events are drained after each
  // input: the server's go to on_server_event, or are consumed as the
  // client's are (streams read and discarded).
  void settle(int rounds = 16, Duration timer_horizon = kSecond, int timer_steps = 4);

  // Optional taps: every datagram exchanged, in order (seed capture).
  std::function<void(bool to_server, std::span<const uint8_t>)> observer;
  // The server's events, instead of the default consumer; after_server_input
  // runs after each batch of server inputs (an application's pump).
  std::function<void(Instant, const endpoint::EndpointEvent&)> on_server_event;
  std::function<void(Instant)> after_server_input;

  endpoint::Endpoint& server() { return *server_; }
  endpoint::Endpoint& client() { return *client_; }
  endpoint::ConnectionHandle client_handle() const { return client_handle_; }
  conn::Connection* client_connection() { return client_->connection(client_handle_); }
  conn::Connection* server_connection();
  Instant now() const { return now_; }

 private:
  // Hands what each endpoint sends to the other; true if anything moved.
  bool exchange();
  // Half of exchange(): what the client (`to_server`) or the server sends
  // goes to the other side, whose events are then drained.
  bool forward(bool to_server);
  void drain_events(endpoint::Endpoint& endpoint, bool is_server);
  void fire_timers(Duration horizon, int steps);

  std::unique_ptr<endpoint::Endpoint> server_;
  std::unique_ptr<endpoint::Endpoint> client_;
  endpoint::ConnectionHandle client_handle_ = 0;
  Instant now_ = kSecond;
  bool connected_ = true;
  std::vector<uint8_t> scratch_;      // the datagram being delivered
  std::vector<uint8_t> read_buffer_;  // stream data read and discarded
};

}  // namespace dpquic::fuzz
