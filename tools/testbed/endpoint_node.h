#pragma once
// A dpquic Endpoint as a node of the in-memory network, with an optional
// application driven after every input (tests only).

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "quic/endpoint/endpoint.h"
#include "tools/testbed/simulator.h"

namespace dpquic::harness {

class EndpointNode final : public Node {
 public:
  // `segment_size`: the largest datagram; `burst`: datagrams per burst;
  // `mode`: kGsoTrain lends one contiguous buffer, as the kernel-UDP shard
  // does (the train comes back at the segment size the connection used).
  explicit EndpointNode(endpoint::Endpoint& endpoint, size_t segment_size = 1472, size_t burst = 16,
                        transmit::BurstMode mode = transmit::BurstMode::kIndependent);

  // Runs after each datagram and timeout, before transmitting: the place for
  // the application to read events and write data.
  void set_application(std::function<void(Instant)> application) {
    application_ = std::move(application);
  }
  // When the application has timed work (a shard's Application::
  // next_deadline): the node wakes by then too.
  void set_application_deadline(std::function<Instant()> deadline) {
    application_deadline_ = std::move(deadline);
  }

  void handle_datagram(Instant now, const PathAddresses& path, transmit::EcnCodepoint ecn,
                       std::span<uint8_t> bytes) override;
  void handle_timeout(Instant now) override;
  Instant poll_timeout() override;
  void poll_transmit(Instant now, Sink& sink) override;

  endpoint::Endpoint& endpoint() { return endpoint_; }
  uint64_t datagrams_sent() const { return datagrams_sent_; }
  uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  endpoint::Endpoint& endpoint_;
  size_t segment_size_;
  transmit::BurstMode mode_;
  std::vector<uint8_t> storage_;
  std::vector<uint8_t*> slices_;
  std::function<void(Instant)> application_;
  std::function<Instant()> application_deadline_;
  uint64_t datagrams_sent_ = 0;
  uint64_t bytes_sent_ = 0;
};

}  // namespace dpquic::harness
