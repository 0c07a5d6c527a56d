#include "quic/wire/coalesced.h"

namespace dpquic::wire {

bool DatagramSplitter::next(CoalescedPacket& out) {
  while (next_any(out)) {
    if (out.same_dcid) return true;
  }
  return false;
}

}  // namespace dpquic::wire
