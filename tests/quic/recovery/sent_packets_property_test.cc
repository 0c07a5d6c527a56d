// SentPackets against a reference model: a std::map of live packets plus the
// documented skip record. The same random operations go to both, and every
// observable is compared after each step (size, counts, window, the full
// ascending iteration, lookups, ranges with both start forms, never_sent,
// live_bits). Runs a fixed seed and a fresh one from std::random_device; a
// failure prints both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include "quic/recovery/sent_packet_pool.h"
#include "quic/recovery/sent_packets.h"

namespace dpquic::recovery {
namespace {

constexpr uint64_t kFixedSeed = 0x5e17'9ac4'e75ull;
constexpr int kOperations = 150'000;

class Model {
 public:
  explicit Model(size_t max_slots) : max_slots_(max_slots) {}

  bool insert(uint64_t pn, const SentPacket& packet) {
    if (pn < next_) return false;
    if (!live_.empty() && pn - live_.begin()->first + 1 > max_slots_) return false;
    if (pn > next_) {
      skips_.emplace_back(next_, pn);
      if (skips_.size() > SentPackets::kMaxSkipRanges) skips_.pop_front();
    }
    next_ = pn + 1;
    live_[pn] = packet;
    return true;
  }

  std::optional<SentPacket> remove(uint64_t pn) {
    const auto it = live_.find(pn);
    if (it == live_.end()) return std::nullopt;
    const SentPacket packet = it->second;
    live_.erase(it);
    return packet;
  }

  void clear() { live_.clear(); }

  bool never_sent(uint64_t pn) const {
    if (pn >= next_) return true;
    return std::any_of(skips_.begin(), skips_.end(),
                       [pn](const auto& skip) { return pn >= skip.first && pn < skip.second; });
  }

  uint64_t bytes_in_flight() const {
    uint64_t bytes = 0;
    for (const auto& [pn, packet] : live_) bytes += packet.in_flight ? packet.size : 0;
    return bytes;
  }
  size_t ack_eliciting() const {
    return std::count_if(live_.begin(), live_.end(),
                         [](const auto& entry) { return entry.second.ack_eliciting; });
  }
  uint64_t window_begin() const { return live_.empty() ? next_ : live_.begin()->first; }
  std::optional<uint64_t> largest_sent() const {
    return next_ == 0 ? std::nullopt : std::optional<uint64_t>(next_ - 1);
  }
  uint64_t next() const { return next_; }
  const std::map<uint64_t, SentPacket>& live() const { return live_; }

 private:
  size_t max_slots_;
  std::map<uint64_t, SentPacket> live_;
  uint64_t next_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> skips_;
};

bool same_packet(const SentPacket& a, const SentPacket& b) {
  return a.time_sent == b.time_sent && a.frames == b.frames && a.size == b.size &&
         a.ack_eliciting == b.ack_eliciting && a.in_flight == b.in_flight;
}

::testing::AssertionResult same_range(const SentPackets::Range& range, const Model& model,
                                      uint64_t lo, uint64_t hi, const char* what) {
  auto expected = model.live().lower_bound(lo);
  const auto expected_end = model.live().lower_bound(std::max(lo, hi));
  for (const SentPackets::Entry entry : range) {
    if (expected == expected_end || expected->first != entry.packet_number ||
        !same_packet(expected->second, entry.packet)) {
      return ::testing::AssertionFailure()
             << what << "(" << lo << ", " << hi << ") yields " << entry.packet_number << ", model "
             << (expected == expected_end ? UINT64_MAX : expected->first);
    }
    ++expected;
  }
  if (expected != expected_end) {
    return ::testing::AssertionFailure()
           << what << "(" << lo << ", " << hi << ") ends before " << expected->first;
  }
  return ::testing::AssertionSuccess();
}

// A probe packet number near something interesting, or anywhere.
uint64_t probe(std::mt19937_64& rng, const Model& model) {
  const uint64_t begin = model.window_begin();
  switch (rng() % 6) {
    case 0: return begin + rng() % 8 - std::min<uint64_t>(begin, 4);
    case 1: return model.next() + rng() % 4 - std::min<uint64_t>(model.next(), 2);
    case 2: return rng() % (model.next() + 10);
    case 3: return rng();  // far out, usually
    default: return begin + rng() % (model.next() - begin + 3);
  }
}

::testing::AssertionResult compare(const SentPackets& sent, const Model& model,
                                   std::mt19937_64& rng) {
  if (sent.size() != model.live().size()) {
    return ::testing::AssertionFailure()
           << "size " << sent.size() << " model " << model.live().size();
  }
  if (sent.empty() != model.live().empty()) return ::testing::AssertionFailure() << "empty";
  if (sent.bytes_in_flight() != model.bytes_in_flight()) {
    return ::testing::AssertionFailure()
           << "bytes_in_flight " << sent.bytes_in_flight() << " model " << model.bytes_in_flight();
  }
  if (sent.ack_eliciting_in_flight() != model.ack_eliciting() ||
      sent.has_ack_eliciting_in_flight() != (model.ack_eliciting() != 0)) {
    return ::testing::AssertionFailure()
           << "ack_eliciting_in_flight " << sent.ack_eliciting_in_flight() << " model "
           << model.ack_eliciting();
  }
  if (sent.largest_sent() != model.largest_sent()) {
    return ::testing::AssertionFailure() << "largest_sent";
  }
  if (sent.window_begin() != model.window_begin() ||
      sent.window_size() != model.next() - model.window_begin()) {
    return ::testing::AssertionFailure()
           << "window [" << sent.window_begin() << ", +" << sent.window_size() << ") model ["
           << model.window_begin() << ", " << model.next() << ")";
  }
  if (auto r = same_range(sent.all(), model, 0, UINT64_MAX, "all"); !r) return r;

  for (int i = 0; i < 4; ++i) {
    const uint64_t pn = probe(rng, model);
    const auto it = model.live().find(pn);
    const SentPacket* got = sent.get(pn);
    if ((got != nullptr) != (it != model.live().end()) || sent.contains(pn) != (got != nullptr) ||
        (got != nullptr && !same_packet(*got, it->second))) {
      return ::testing::AssertionFailure() << "get(" << pn << ")";
    }
    const bool in_window = pn >= model.window_begin() && pn < model.next();
    const SentPackets::Slot* slot = sent.slot(pn);
    if ((slot != nullptr) != in_window || (got != nullptr && &slot->packet != got) ||
        (slot != nullptr &&
         ((sent.live_bits(pn - sent.window_begin()) & 1) != 0) != (got != nullptr))) {
      return ::testing::AssertionFailure() << "slot(" << pn << ")";
    }
    if (sent.never_sent(pn) != model.never_sent(pn)) {
      return ::testing::AssertionFailure() << "never_sent(" << pn << ") " << sent.never_sent(pn)
                                           << " model " << model.never_sent(pn);
    }
  }

  // any_never_sent over a short span, against never_sent one by one.
  const uint64_t span_lo = probe(rng, model);
  const uint64_t span_hi = span_lo + std::min<uint64_t>(rng() % 8, UINT64_MAX - span_lo);
  bool any = false;
  for (uint64_t pn = span_lo; !any && pn <= span_hi; ++pn) any = model.never_sent(pn);
  if (sent.any_never_sent(span_lo, span_hi) != any) {
    return ::testing::AssertionFailure() << "any_never_sent(" << span_lo << ", " << span_hi << ")";
  }

  const uint64_t lo = probe(rng, model);
  const uint64_t hi = rng() % 4 == 0 ? UINT64_MAX : probe(rng, model);
  if (auto r = same_range(sent.range(lo, hi), model, lo, hi, "range"); !r) return r;
  const uint64_t after_lo = lo == UINT64_MAX ? UINT64_MAX : lo + 1;
  if (auto r = same_range(sent.range_after(lo, hi), model, after_lo, std::max(after_lo, hi),
                          "range_after");
      !r) {
    return r;
  }

  // live_bits at a random offset, against the model bit by bit.
  const uint64_t window = model.next() - model.window_begin();
  const uint64_t offset = rng() % (window + 70);
  uint64_t expected = 0;
  for (uint64_t i = 0; i < 64 && offset + i < window; ++i) {
    if (model.live().count(model.window_begin() + offset + i) != 0) expected |= uint64_t{1} << i;
  }
  if (sent.live_bits(offset) != expected) {
    return ::testing::AssertionFailure() << "live_bits(" << offset << ")";
  }
  return ::testing::AssertionSuccess();
}

SentPacket random_packet(std::mt19937_64& rng, uint64_t pn) {
  SentPacket packet;
  packet.time_sent = pn * 1000 + rng() % 1000;
  packet.frames = static_cast<uint32_t>(rng());
  packet.size = static_cast<uint16_t>(20 + rng() % 1481);
  packet.ack_eliciting = rng() % 8 != 0;
  packet.in_flight = packet.ack_eliciting || rng() % 2 == 0;
  return packet;
}

// The size of the next skip: mostly none, sometimes a few numbers, rarely a
// jump (which can exceed a small ring's bound).
uint64_t random_skip(std::mt19937_64& rng) {
  const uint64_t roll = rng() % 1000;
  if (roll < 880) return 0;
  if (roll < 980) return 1;
  if (roll < 997) return 2 + rng() % 6;
  return 50 + rng() % 400;
}

void run(uint64_t seed, size_t initial_slots, size_t max_slots) {
  std::mt19937_64 rng(seed);
  SentPacketPool pool(initial_slots, max_slots);
  SentPackets sent(pool);
  Model model(pool.max_slots_per_ring());
  size_t refused = 0, max_window = 0;
  for (int step = 0; step < kOperations; ++step) {
    // Phases: in-flight grows (little acknowledged), then drains.
    const bool growing = (step / 4000) % 2 == 0;
    std::ostringstream op;
    const uint64_t roll = rng() % 100;
    if (roll < (growing ? 55u : 25u)) {
      const uint64_t pn = model.next() + random_skip(rng);
      const SentPacket packet = random_packet(rng, pn);
      op << "insert " << pn;
      const bool expected = model.insert(pn, packet);
      refused += !expected;
      ASSERT_EQ(sent.insert(pn, packet), expected) << op.str() << " at step " << step;
      max_window = std::max<size_t>(max_window, sent.window_size());
      ASSERT_TRUE(compare(sent, model, rng)) << "after " << op.str() << " at step " << step;
      continue;
    }
    const uint64_t other = rng() % 100;
    if (other < 5) {
      // A number that does not grow the window: refused by both.
      const uint64_t pn = model.next() == 0 ? 0 : rng() % model.next();
      op << "stale insert " << pn;
      if (model.next() != 0) {
        ASSERT_FALSE(sent.insert(pn, random_packet(rng, pn))) << op.str();
      }
    } else if (other < 50 && !model.live().empty()) {
      // Acknowledge at the low end: the front, or one of the first few.
      auto it = model.live().begin();
      std::advance(it, std::min<size_t>(rng() % 4, model.live().size() - 1));
      const uint64_t pn = it->first;
      op << "remove low " << pn;
      const auto expected = model.remove(pn);
      const auto got = sent.remove(pn);
      ASSERT_TRUE(got.has_value()) << op.str();
      ASSERT_TRUE(same_packet(*got, *expected)) << op.str();
    } else if (other < 85 && !model.live().empty()) {
      // Out of order: any live packet.
      auto it = model.live().begin();
      std::advance(it, rng() % model.live().size());
      const uint64_t pn = it->first;
      op << "remove any " << pn;
      const auto expected = model.remove(pn);
      const auto got = sent.remove(pn);
      ASSERT_TRUE(got.has_value()) << op.str();
      ASSERT_TRUE(same_packet(*got, *expected)) << op.str();
    } else if (other == 99 && rng() % 50 == 0) {
      op << "clear";
      model.clear();
      sent.clear();
    } else {
      // Anything: usually absent or out of range.
      const uint64_t pn = probe(rng, model);
      op << "remove probe " << pn;
      const auto expected = model.remove(pn);
      const auto got = sent.remove(pn);
      ASSERT_EQ(got.has_value(), expected.has_value()) << op.str();
      if (got) {
        ASSERT_TRUE(same_packet(*got, *expected)) << op.str();
      }
    }
    max_window = std::max<size_t>(max_window, sent.window_size());
    ASSERT_TRUE(compare(sent, model, rng)) << "after " << op.str() << " at step " << step;
  }
  // The run exercised what it is for.
  EXPECT_GT(max_window, max_slots <= 256 ? 200u : 1000u);
  if (max_slots <= 256) {
    EXPECT_GT(refused, 0u);
  }
  EXPECT_LE(sent.capacity(), pool.max_slots_per_ring());
}

std::vector<uint64_t> seeds() {
  std::random_device device;
  const uint64_t fresh = (uint64_t{device()} << 32) | device();
  return {kFixedSeed, fresh};
}

TEST(SentPacketsPropertyTest, MatchesTheMapModel) {
  for (const uint64_t seed : seeds()) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " (fixed seed " << kFixedSeed << ")");
    run(seed, 64, 1 << 20);
    if (HasFatalFailure()) return;
  }
}

// A ring bounded at 256 slots: inserts past the bound are refused exactly as
// the model says, and the window still wraps and drains correctly.
TEST(SentPacketsPropertyTest, MatchesTheMapModelWithATightBound) {
  for (const uint64_t seed : seeds()) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " (fixed seed " << kFixedSeed << ")");
    run(seed, 64, 256);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace dpquic::recovery
