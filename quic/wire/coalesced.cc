#include "quic/wire/coalesced.h"

#include <algorithm>

namespace dpquic::wire {

bool DatagramSplitter::next(CoalescedPacket& out) {
  while (error_ == WireError::kOk && offset_ < datagram_.size()) {
    const std::span<const uint8_t> rest = datagram_.subspan(offset_);
    ParsedHeader header;
    const WireError error = parse_packet_header(rest, local_cid_length_, header);
    if (error != WireError::kOk) {
      error_ = error;
      offset_ = datagram_.size();
      return false;
    }
    const size_t start = offset_;
    offset_ += header.packet_size;
    if (have_first_ && !std::ranges::equal(header.dcid, first_dcid_)) {
      ++skipped_;
      continue;
    }
    if (!have_first_) {
      have_first_ = true;
      first_dcid_ = header.dcid;
    }
    out.bytes = rest.first(header.packet_size);
    out.offset = start;
    out.header = header;
    return true;
  }
  return false;
}

}  // namespace dpquic::wire
