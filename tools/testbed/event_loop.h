#pragma once
// The virtual-time event loop shared by the in-memory networks: nodes that
// send and receive datagrams, links that carry them, and time that jumps to
// the next event. A network (the two-node Simulator, the Dumbbell of several
// pairs on one bottleneck) derives from EventLoop, registers its nodes in the
// order they are served and says how datagrams reach them; the loop, its
// ordering within an instant and its stall guards live only here.

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "quic/conn/socket_address.h"
#include "quic/time.h"
#include "quic/transmit/burst.h"

namespace dpquic::harness {

using conn::PathAddresses;
using dpquic::Duration;
using dpquic::Instant;

// Virtual time starts here rather than at 0, so code computing `now - d`
// behaves as with a real monotonic clock.
inline constexpr Instant kSimulationStart = 1000 * kSecond;

// What a simulated endpoint implements.
class Node {
 public:
  virtual ~Node() = default;
  // A datagram arrives: `path.local` = this node's address it was sent to,
  // `path.remote` = its source. `bytes` is writable (decryption in place) and
  // valid only during the call.
  virtual void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                               std::span<uint8_t> bytes) = 0;
  virtual void handle_timeout(Instant now) = 0;
  virtual Instant poll_timeout() = 0;
  // Emits the datagrams to send now through `sink` (send copies them into the
  // network); returns when it has nothing more to send at `now`.
  class Sink {
   public:
    virtual ~Sink() = default;
    // `path.local` is the source, `path.remote` the destination.
    virtual void send(const PathAddresses& path, transmit::EcnCodepoint ecn,
                      std::span<const uint8_t> bytes) = 0;
  };
  virtual void poll_transmit(Instant now, Sink& sink) = 0;
};

// Thrown by run_until when the simulation cannot make progress: a node keeps
// reporting a timeout at or before `now` although handle_timeout was called,
// or virtual time stops advancing altogether.
class SimulationStalled : public std::runtime_error {
 public:
  explicit SimulationStalled(const std::string& what) : std::runtime_error(what) {}
};

class EventLoop {
 public:
  EventLoop() = default;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  virtual ~EventLoop() = default;

  // Runs from now() until `done()` returns true (checked before starting and
  // after every event) or virtual time would pass `deadline` (then now() is
  // left at the deadline). Each round delivers every datagram due, fires the
  // nodes' timeouts due, then polls each node for datagrams, nodes in the
  // order they were added; time then advances to the next event, the
  // earliest link arrival or node timeout. Returns whether done() became
  // true. Throws SimulationStalled if the nodes stop making progress.
  bool run_until(const std::function<bool()>& done, Instant deadline);
  Instant now() const { return now_; }

  // Stall guards: a node may report a timeout <= now after handle_timeout at
  // most `timeout_repeats` consecutive times without sending or receiving
  // anything, and at most `rounds_per_instant` rounds may run without virtual
  // time advancing.
  void set_stall_limits(uint64_t timeout_repeats, uint64_t rounds_per_instant);

 protected:
  // A node as the loop serves it. The network owns it (at a stable address)
  // and sets `active` whenever the node sends or receives a datagram.
  struct Member {
    Node* node = nullptr;
    Node::Sink* sink = nullptr;  // where the node's datagrams go
    std::string name;            // for stall reports
    bool active = false;         // sent or received in the current round
    uint64_t stuck_timeouts = 0;
  };
  void add_member(Member& member) { members_.push_back(&member); }

  // Hands the earliest datagram due at now() to its node (or drops it);
  // false when none is due.
  virtual bool deliver_one() = 0;
  // The earliest scheduled arrival on any link, or kNever.
  virtual Instant next_delivery() const = 0;

  Instant now_ = kSimulationStart;

 private:
  void check_timeout_stall(Member& member);
  // Runs one round at now(); true as soon as done() does.
  bool run_round(const std::function<bool()>& done);
  Instant next_event() const;

  std::vector<Member*> members_;
  std::vector<bool> fired_;
  uint64_t max_timeout_repeats_ = 1000;
  uint64_t max_rounds_per_instant_ = 10'000'000;
};

}  // namespace dpquic::harness
