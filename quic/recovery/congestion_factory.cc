#include "quic/recovery/congestion_factory.h"

#include "quic/recovery/bbr.h"
#include "quic/recovery/cubic.h"
#include "quic/recovery/new_reno.h"

namespace dpquic::recovery {

std::unique_ptr<CongestionController> make_congestion_controller(
    CongestionControlAlgorithm algorithm, uint64_t max_datagram_size, uint64_t seed) {
  switch (algorithm) {
    case CongestionControlAlgorithm::kNewReno: return std::make_unique<NewReno>(max_datagram_size);
    case CongestionControlAlgorithm::kCubic: return std::make_unique<Cubic>(max_datagram_size);
    case CongestionControlAlgorithm::kBbr: return std::make_unique<Bbr>(max_datagram_size, seed);
  }
  return std::make_unique<Cubic>(max_datagram_size);
}

std::optional<CongestionControlAlgorithm> parse_congestion_control(std::string_view name) {
  if (name == "newreno") return CongestionControlAlgorithm::kNewReno;
  if (name == "cubic") return CongestionControlAlgorithm::kCubic;
  if (name == "bbr") return CongestionControlAlgorithm::kBbr;
  return std::nullopt;
}

const char* congestion_control_name(CongestionControlAlgorithm algorithm) {
  switch (algorithm) {
    case CongestionControlAlgorithm::kNewReno: return "newreno";
    case CongestionControlAlgorithm::kCubic: return "cubic";
    case CongestionControlAlgorithm::kBbr: return "bbr";
  }
  return "unknown";
}

}  // namespace dpquic::recovery
