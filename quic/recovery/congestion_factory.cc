#include "quic/recovery/congestion_factory.h"

#include "quic/recovery/cubic.h"
#include "quic/recovery/new_reno.h"

namespace dpquic::recovery {

std::unique_ptr<CongestionController> make_congestion_controller(
    CongestionControlAlgorithm algorithm, uint64_t max_datagram_size) {
  switch (algorithm) {
    case CongestionControlAlgorithm::kNewReno: return std::make_unique<NewReno>(max_datagram_size);
    case CongestionControlAlgorithm::kCubic: return std::make_unique<Cubic>(max_datagram_size);
  }
  return std::make_unique<Cubic>(max_datagram_size);
}

}  // namespace dpquic::recovery
