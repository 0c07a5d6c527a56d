#include "quic/wire/ack_ranges.h"

namespace dpquic::wire {

namespace {

// Next range below `previous`, given an encoded Gap and ACK Range Length.
// Returns false where a packet number would be negative (RFC 9000 §19.3.1).
bool next_range(const AckRange& previous, uint64_t gap, uint64_t length, AckRange& next) {
  // largest = previous_smallest - gap - 2; gap <= 2^62-1, so gap + 2 cannot wrap.
  if (previous.smallest < gap + 2) return false;
  next.largest = previous.smallest - gap - 2;
  if (next.largest < length) return false;
  next.smallest = next.largest - length;
  return true;
}

// Writes the range section from any sequence of AckRange, all or nothing.
template <typename Ranges>
bool write_ranges(ByteWriter& out, const Ranges& ranges, uint64_t count) {
  if (count == 0) return false;
  ByteWriter writer(out.tail());
  auto it = ranges.begin();
  AckRange previous = *it;
  if (previous.smallest > previous.largest || previous.largest > kVarintMax) return false;
  if (!writer.write_varint(count - 1) || !writer.write_varint(previous.largest - previous.smallest))
    return false;
  for (++it; it != ranges.end(); ++it) {
    const AckRange& range = *it;
    // Descending, disjoint and not adjacent: adjacent ranges would need a gap
    // of -1, which the encoding cannot express.
    if (range.smallest > range.largest || range.largest >= previous.smallest ||
        previous.smallest - range.largest < 2)
      return false;
    const uint64_t gap = previous.smallest - range.largest - 2;
    if (!writer.write_varint(gap) || !writer.write_varint(range.largest - range.smallest))
      return false;
    previous = range;
  }
  return out.advance(writer.position());
}

}  // namespace

AckRangeView::Iterator& AckRangeView::Iterator::operator++() {
  if (left_ == 0) return *this;
  --left_;
  if (left_ == 0) return *this;
  // parse() validated every pair, so these reads and subtractions succeed.
  ByteReader reader(pairs_);
  uint64_t gap = 0, length = 0;
  if (!reader.read_varint(gap) || !reader.read_varint(length) ||
      !next_range(current_, gap, length, current_)) {
    left_ = 0;  // unreachable for a parsed view; end the iteration safely
    return *this;
  }
  pairs_ = reader.rest();
  return *this;
}

AckRangeView::Iterator AckRangeView::begin() const {
  Iterator it;
  it.current_ = {largest_ - first_range_, largest_};
  it.left_ = additional_ranges_ + 1;
  it.pairs_ = pairs_;
  return it;
}

WireError AckRangeView::parse(ByteReader& reader, uint64_t largest_acknowledged,
                              AckRangeView& out) {
  uint64_t range_count = 0, first_range = 0;
  if (!reader.read_varint(range_count) || !reader.read_varint(first_range))
    return WireError::kFrameEncodingError;
  if (first_range > largest_acknowledged) return WireError::kFrameEncodingError;
  const size_t pairs_start = reader.position();
  AckRange range{largest_acknowledged - first_range, largest_acknowledged};
  // Each pair takes at least two bytes, so a huge count fails on the bytes
  // long before it costs time.
  for (uint64_t i = 0; i < range_count; ++i) {
    uint64_t gap = 0, length = 0;
    if (!reader.read_varint(gap) || !reader.read_varint(length) ||
        !next_range(range, gap, length, range))
      return WireError::kFrameEncodingError;
  }
  out.largest_ = largest_acknowledged;
  out.first_range_ = first_range;
  out.smallest_ = range.smallest;
  out.additional_ranges_ = range_count;
  out.pairs_ = reader.all().subspan(pairs_start, reader.position() - pairs_start);
  return WireError::kOk;
}

bool encode_ack_ranges(ByteWriter& writer, std::span<const AckRange> ranges) {
  return write_ranges(writer, ranges, ranges.size());
}

bool encode_ack_ranges(ByteWriter& writer, const AckRangeView& ranges) {
  return write_ranges(writer, ranges, ranges.size());
}

bool same_ranges(const AckRangeView& a, const AckRangeView& b) {
  if (a.size() != b.size() || a.largest() != b.largest() || a.smallest() != b.smallest())
    return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (*ia != *ib) return false;
  }
  return true;
}

}  // namespace dpquic::wire
