#pragma once
// Builds the congestion controller a connection is configured with. Called
// once per connection at set-up (it allocates), and names the algorithms
// for every binary's --cc flag.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "quic/recovery/congestion_controller.h"

namespace dpquic::recovery {

// CUBIC comes with HyStart++ enabled. `seed` varies BBR's randomized probe
// timing between connections.
std::unique_ptr<CongestionController> make_congestion_controller(
    CongestionControlAlgorithm algorithm, uint64_t max_datagram_size, uint64_t seed = 1);

// "newreno", "cubic" or "bbr"; nullopt for anything else.
std::optional<CongestionControlAlgorithm> parse_congestion_control(std::string_view name);
const char* congestion_control_name(CongestionControlAlgorithm algorithm);
// What --cc accepts, for help texts and errors.
inline constexpr const char* kCongestionControlNames = "cubic, newreno or bbr";

}  // namespace dpquic::recovery
