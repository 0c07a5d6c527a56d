#include "quic/transmit/gso_split.h"

namespace dpquic::transmit {

size_t gso_split(std::span<const uint8_t> train, size_t segment_size,
                 std::span<std::span<const uint8_t>> out) {
  const size_t count = gso_segment_count(train.size(), segment_size);
  if (count == 0 || count > out.size()) return 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t offset = i * segment_size;
    const size_t remaining = train.size() - offset;
    out[i] = train.subspan(offset, remaining < segment_size ? remaining : segment_size);
  }
  return count;
}

}  // namespace dpquic::transmit
