#pragma once
// Which end of a connection an endpoint is. Several wire rules depend on it:
// transport parameters only a server may send, frames only a client may
// receive.

#include <cstdint>

namespace dpquic::wire {

enum class Role : uint8_t { kClient, kServer };

}  // namespace dpquic::wire
