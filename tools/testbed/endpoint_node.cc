#include "tools/testbed/endpoint_node.h"

#include <algorithm>

namespace dpquic::harness {

EndpointNode::EndpointNode(endpoint::Endpoint& endpoint, size_t segment_size, size_t burst,
                           transmit::BurstMode mode)
    : endpoint_(endpoint),
      segment_size_(segment_size),
      mode_(mode),
      storage_(segment_size * burst),
      slices_(burst) {
  for (size_t i = 0; i < burst; ++i) slices_[i] = storage_.data() + i * segment_size;
}

void EndpointNode::handle_datagram(Instant now, const PathAddresses& path,
                                   transmit::EcnCodepoint ecn, std::span<uint8_t> bytes) {
  // Through the batch entry the backends use, as a batch of one.
  const conn::InboundDatagram datagram{path, ecn, bytes};
  endpoint_.handle_datagrams(now, {&datagram, 1});
  if (application_) application_(now);
}

void EndpointNode::handle_timeout(Instant now) {
  endpoint_.handle_timeout(now);
  if (application_) application_(now);
}

Instant EndpointNode::poll_timeout() {
  const Instant endpoint = endpoint_.poll_timeout();
  return application_deadline_ ? std::min(endpoint, application_deadline_()) : endpoint;
}

void EndpointNode::poll_transmit(Instant now, Sink& sink) {
  if (application_) application_(now);
  transmit::BurstBuffers buffers;
  buffers.datagrams = slices_;
  buffers.capacity = segment_size_;
  buffers.segment_size = segment_size_;
  buffers.mode = mode_;
  transmit::BurstDescriptor out;
  PathAddresses path;
  // Bounded: a connection sends at most its window before waiting for ACKs.
  for (int bursts = 0; bursts < 4096 && endpoint_.poll_transmit(now, buffers, out, path);
       ++bursts) {
    for (size_t i = 0; i < out.datagram_count; ++i) {
      sink.send(path, out.ecn, {transmit::burst_datagram(buffers, out, i), out.lengths[i]});
      ++datagrams_sent_;
      bytes_sent_ += out.lengths[i];
    }
  }
}

}  // namespace dpquic::harness
