#include "quic/recovery/ack_processing.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

namespace dpquic::recovery {

namespace {

constexpr uint64_t kAllOnes = ~uint64_t{0};

// Sets bits [from, to] (inclusive) of a word array, a word at a time.
void set_bits(uint64_t* words, uint64_t from, uint64_t to) {
  const uint64_t first_word = from >> 6;
  const uint64_t last_word = to >> 6;
  const uint64_t first_mask = kAllOnes << (from & 63);
  const uint64_t last_mask = kAllOnes >> (63 - (to & 63));
  if (first_word == last_word) {
    words[first_word] |= first_mask & last_mask;
    return;
  }
  words[first_word] |= first_mask;
  for (uint64_t w = first_word + 1; w < last_word; ++w) words[w] = kAllOnes;
  words[last_word] |= last_mask;
}

void acknowledge(uint64_t packet_number, SentPackets& sent, NewlyAckedVisitor& visitor,
                 AckSummary& summary) {
  const SentPacket& packet = sent.slot(packet_number)->packet;
  visitor.on_newly_acked(packet_number, packet);
  ++summary.newly_acked;
  summary.largest_newly_acked = packet_number;
  summary.ack_eliciting_newly_acked |= packet.ack_eliciting;
  sent.remove(packet_number);
}

}  // namespace

AckXorBuffer::~AckXorBuffer() { delete[] storage_; }

void AckXorBuffer::reserve(size_t packets) { ensure_words((packets + 63) / 64); }

size_t AckXorBuffer::capacity_bits() const { return capacity_words_ * 64; }

size_t AckXorBuffer::growth_count() const { return growth_count_; }

bool AckXorBuffer::ensure_words(size_t words) {
  if (words <= capacity_words_) return true;
  const size_t grown = std::bit_ceil(words);
  auto* storage = new (std::nothrow) uint64_t[2 * grown];
  if (storage == nullptr) return false;
  delete[] storage_;
  storage_ = storage;
  previous_ = storage;
  current_ = storage + grown;
  capacity_words_ = grown;
  ++growth_count_;
  return true;
}

wire::WireError process_ack(const wire::AckRangeView& ranges, SentPackets& sent,
                            AckXorBuffer& buffer, NewlyAckedVisitor& visitor, AckSummary& summary) {
  summary = {};
  if (ranges.largest() >= sent.window_begin() + sent.window_size()) {
    return wire::WireError::kProtocolViolation;  // above the largest sent
  }
  // The part of the window the ACK reaches, [lo, hi], as window words
  // first_word.. (bit i of buffer word j is window_begin + 64 * (first_word +
  // j) + i). Empty when the ACK lies wholly below the window.
  const uint64_t base = sent.window_begin();
  const uint64_t lo = std::max(ranges.smallest(), base);
  const uint64_t hi = ranges.largest();
  const bool reaches_window = sent.window_size() != 0 && lo <= hi;
  uint64_t first_word = 0;
  size_t words = 0;
  if (reaches_window) {
    first_word = (lo - base) >> 6;
    words = static_cast<size_t>(((hi - base) >> 6) - first_word + 1);
    if (!buffer.ensure_words(words)) {
      return process_ack_range_walk(ranges, sent, visitor, summary);  // out of memory
    }
    ++buffer.rebuilds_;
    buffer.words_rebuilt_ += words;
    // previous: what is already known acknowledged (vacant slots).
    uint64_t* previous = buffer.previous_;
    uint64_t* current = buffer.current_;
    for (size_t j = 0; j < words; ++j) {
      previous[j] = ~sent.live_bits((first_word + j) * 64);
      current[j] = previous[j];
    }
  }

  // current = previous | the ranges, validating every range before anything
  // changes.
  const uint64_t bit_origin = base + first_word * 64;
  for (const wire::AckRange& range : ranges) {
    if (sent.any_never_sent(range.smallest, range.largest)) {
      return wire::WireError::kProtocolViolation;
    }
    if (!reaches_window || range.largest < lo) continue;  // duplicates
    const uint64_t from = std::max(range.smallest, lo);
    set_bits(buffer.current_, from - bit_origin, range.largest - bit_origin);
  }
  if (!reaches_window) return wire::WireError::kOk;

  // Newly acknowledged = current XOR previous, ascending.
  const uint64_t* previous = buffer.previous_;
  const uint64_t* current = buffer.current_;
  for (size_t j = 0; j < words; ++j) {
    for (uint64_t newly = current[j] ^ previous[j]; newly != 0; newly &= newly - 1) {
      acknowledge(bit_origin + j * 64 + std::countr_zero(newly), sent, visitor, summary);
    }
  }
  // current is now the known-acknowledged state: it becomes previous.
  std::swap(buffer.previous_, buffer.current_);
  return wire::WireError::kOk;
}

namespace {

// Ranges a range walk holds at once to visit them lowest first: the view
// yields them largest first and cannot go backwards.
constexpr uint64_t kWalkBatch = 64;

void walk_range(const wire::AckRange& range, SentPackets& sent, NewlyAckedVisitor& visitor,
                AckSummary& summary) {
  const uint64_t from = std::max(range.smallest, sent.window_begin());
  for (uint64_t packet_number = from; packet_number <= range.largest; ++packet_number) {
    if (sent.contains(packet_number)) acknowledge(packet_number, sent, visitor, summary);
  }
}

}  // namespace

wire::WireError process_ack_range_walk(const wire::AckRangeView& ranges, SentPackets& sent,
                                       NewlyAckedVisitor& visitor, AckSummary& summary) {
  summary = {};
  for (const wire::AckRange& range : ranges) {
    if (sent.any_never_sent(range.smallest, range.largest)) {
      return wire::WireError::kProtocolViolation;
    }
  }
  // Lowest ranges first, a batch at a time: batch k holds the ranges with
  // indices [count - done - n, count - done) in the view's order.
  wire::AckRange batch[kWalkBatch];
  const uint64_t count = ranges.size();
  for (uint64_t done = 0; done < count;) {
    const uint64_t stop = count - done;
    const uint64_t n = std::min(kWalkBatch, stop);
    auto it = ranges.begin();
    for (uint64_t i = 0; i < stop - n; ++i) ++it;
    for (uint64_t i = 0; i < n; ++i, ++it) batch[i] = *it;
    for (uint64_t i = n; i > 0; --i) walk_range(batch[i - 1], sent, visitor, summary);
    done += n;
  }
  return wire::WireError::kOk;
}

}  // namespace dpquic::recovery
