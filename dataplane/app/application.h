#pragma once
// What a shard runs on top of its endpoint: an application protocol (h3,
// perf) serving the connections that negotiated its ALPN.
//
// The shard drives every application in the endpoint's drain order (see
// quic/endpoint/endpoint.h): after the inputs of a loop iteration it hands
// each endpoint event to the application owning the connection, then calls
// pump() so applications write what flow control and buffers now allow,
// then polls the endpoint for transmit.
//
// Applications belong to one shard (one core): nothing in them is shared or
// locked. Per-request work must not allocate in steady state beyond what a
// request needs once (header strings); bodies move in pooled chunks.

#include <cstdint>

#include "quic/endpoint/endpoint.h"
#include "quic/time.h"

namespace dpquic::dataplane {

// While draining, a connection with nothing left to deliver is closed after
// this long idle, not at once: its client may close it first (a browser does
// after GOAWAY), and a client still handing received bytes to its user is
// not cut short by our CONNECTION_CLOSE.
inline constexpr Duration kDrainIdleGrace = kSecond;

class Application {
 public:
  virtual ~Application() = default;

  // One event of a connection this application serves. kClosed is the last
  // event of a handle (the handle may name another connection afterwards).
  virtual void on_event(Instant now, const endpoint::EndpointEvent& event) = 0;
  // Writes whatever became possible (after events, and once per iteration).
  virtual void pump(Instant now) = 0;
  // Whether pump() has work it could not finish for lack of buffers (not of
  // flow-control credit): the shard then does not sleep.
  virtual bool wants_pump() const { return false; }
  // The server is stopping: close this application's connections with its
  // protocol's "no error" code. The shard closes whatever remains (still in
  // the handshake) with the transport's NO_ERROR afterwards.
  virtual void shutdown(Instant now) { (void)now; }
  // A graceful stop begins (the endpoint already refuses new connections):
  // take no new work, let what was accepted finish, and close each
  // connection with the protocol's "no error" code once it is idle. What is
  // still open when the drain time is up gets shutdown(). By default the
  // application's connections are closed at once.
  virtual void drain(Instant now) { shutdown(now); }
  // When pump() has timed work to do (kNever: none): the shard runs it by
  // then even without input.
  virtual Instant next_deadline() const { return kNever; }
};

}  // namespace dpquic::dataplane
