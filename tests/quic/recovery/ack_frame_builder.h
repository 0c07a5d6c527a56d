#pragma once
// ACK frames for recovery tests: the range section of an ACK frame encoded
// with the wire encoder and parsed back into the AckRangeView that
// process_ack takes, exactly as a received frame would be.

#include <cstdint>
#include <span>
#include <vector>

#include "quic/wire/ack_ranges.h"
#include "quic/wire/varint.h"

namespace dpquic::recovery::testing {

// Encodes `ranges` (descending, non-adjacent) into `buffer` and parses them
// back; the view refers to `buffer`. Allocates nothing. Returns false if the
// ranges are not encodable or do not fit.
inline bool make_ack_view(std::span<const wire::AckRange> ranges, std::span<uint8_t> buffer,
                          wire::AckRangeView& view) {
  if (ranges.empty()) return false;
  wire::ByteWriter writer(buffer);
  if (!wire::encode_ack_ranges(writer, ranges)) return false;
  wire::ByteReader reader(writer.written());
  return wire::AckRangeView::parse(reader, ranges[0].largest, view) == wire::WireError::kOk &&
         reader.empty();
}

// Owns the bytes its view refers to (not copyable: the view would dangle).
class AckFrame {
 public:
  explicit AckFrame(const std::vector<wire::AckRange>& ranges) : bytes_(16 + 20 * ranges.size()) {
    valid_ = make_ack_view(ranges, bytes_, view_);
  }
  AckFrame(const AckFrame&) = delete;
  AckFrame& operator=(const AckFrame&) = delete;

  bool valid() const { return valid_; }
  const wire::AckRangeView& view() const { return view_; }

 private:
  std::vector<uint8_t> bytes_;
  wire::AckRangeView view_;
  bool valid_ = false;
};

// Descending, non-adjacent ranges covering exactly the numbers in `sorted`
// (ascending, distinct).
inline std::vector<wire::AckRange> ranges_of(const std::vector<uint64_t>& sorted) {
  std::vector<wire::AckRange> ranges;
  for (const uint64_t pn : sorted) {
    if (!ranges.empty() && ranges.back().largest + 1 == pn) {
      ranges.back().largest = pn;
    } else {
      ranges.push_back({pn, pn});
    }
  }
  return {ranges.rbegin(), ranges.rend()};
}

}  // namespace dpquic::recovery::testing
