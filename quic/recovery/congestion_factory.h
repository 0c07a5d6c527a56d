#pragma once
// Builds the congestion controller a connection is configured with. Called
// once per connection at set-up (it allocates).

#include <cstdint>
#include <memory>

#include "quic/recovery/congestion_controller.h"

namespace dpquic::recovery {

// CUBIC comes with HyStart++ enabled.
std::unique_ptr<CongestionController> make_congestion_controller(
    CongestionControlAlgorithm algorithm, uint64_t max_datagram_size);

}  // namespace dpquic::recovery
