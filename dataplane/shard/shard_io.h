#pragma once
// What a shard's loop asks of its backend: the only things the kernel-UDP
// shard (shard.h) and the DPDK shard (dataplane/dpdk/dpdk_shard.h) do
// differently. The loop itself is ShardCore::poll_once and ShardCore::run,
// written once:
//
//   receive(now)               datagrams in, and those steered from other
//                              shards -> endpoint
//   core.service(now)          timers, events -> application, its pump
//   transmit(now)              one round of bursts out
//   core.after_transmit(now)   if that made work: transmit(now) once more
//   end_transmit()             what is staged leaves (DPDK's TX buffer)
//   publish_counters()         when anything happened, else every 100 ms
//
// and, when nothing happened, idle(deadline) until the endpoint's next
// deadline at most.

#include "quic/time.h"

namespace dpquic::dataplane {

class ShardIo {
 public:
  virtual ~ShardIo() = default;

  // The clock every `now` of the loop comes from.
  virtual Instant now() = 0;
  // True when anything arrived.
  virtual bool receive(Instant now) = 0;
  // Bursts from the endpoint's poll_transmit until it has none or the
  // output is full; true when any was built.
  virtual bool transmit(Instant now) = 0;
  virtual void end_transmit() {}
  // The figures ShardCounters shows other threads.
  virtual void publish_counters() = 0;
  // Nothing happened: wait for input until `deadline`, or spin.
  virtual void idle(Instant deadline) = 0;
};

}  // namespace dpquic::dataplane
