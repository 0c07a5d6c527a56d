// Reassembly cost per STREAM frame (ReceiveBuffer::insert, and reading what
// became contiguous), a peer's worst patterns against the in-order one, each
// pair measured in the same benchmark so their ratio is taken side by side.
// The peer first opens G - 1 gaps (8-byte ranges 16 bytes apart), then sends
// rounds of four frames that keep the gap count there:
// - BM_FrontAttackAgainstInOrder: one frame splits the front hole (reaching
//   G gaps), two fill it from the prefix, one adds a range at the back. With
//   a sorted array of ranges, three of the four shift every range.
//   (tests/quic/conn:reassembly_cost_test counts the moves of this pattern.)
// - BM_MiddleAttackAgainstInOrder: the same split and fills on the hole
//   G / 2 ranges ahead of the prefix (the next one each round), so every
//   lookup searches the tree; the prefix does not move.
// - BM_RandomAttackAgainstInOrder: one-byte frames, each growing a random
//   range down by a byte: a search from the root per frame, each on a
//   different path through the tree.
// In order: 8-byte frames at the contiguous end. Both read once per four
// frames. Counters: attack_cycles_per_frame, in_order_cycles_per_frame
// (rdtsc around batches of 256 frames) and ratio.
// `bazel run -c opt //tools/bench:reassembly_bench`.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <x86intrin.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quic/conn/block_pool.h"
#include "quic/conn/receive_buffer.h"

namespace {

using dpquic::conn::BlockPool;
using dpquic::conn::ReceiveBuffer;
using dpquic::conn::ReceiveResult;

constexpr uint64_t kLimit = uint64_t{1} << 60;
constexpr uint64_t kSpacing = 16;
constexpr size_t kRoundsPerBatch = 64;  // 256 frames

void pin_to_current_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sched_getcpu(), &set);
  sched_setaffinity(0, sizeof(set), &set);
}

class Receiver {
 public:
  explicit Receiver(size_t max_gaps) : pool_(4096, 64, 1024), buffer_(pool_, max_gaps) {}

  bool send(uint64_t offset, size_t length) {
    return buffer_.insert(offset, std::span<const uint8_t>(bytes_.data(), length), kLimit) ==
           ReceiveResult::kOk;
  }
  void read() {
    while (buffer_.read(out_) > 0) {
    }
  }
  ReceiveBuffer& buffer() { return buffer_; }

 private:
  BlockPool pool_;
  ReceiveBuffer buffer_;
  std::array<uint8_t, kSpacing> bytes_{};
  std::array<uint8_t, 256> out_{};
};

class FrontAttack {
 public:
  explicit FrontAttack(size_t gaps) : receiver_(gaps) {
    for (size_t i = 0; i + 1 < gaps; ++i) add_at_back();
  }
  // Four frames; false if one was refused.
  bool round() {
    const uint64_t c = receiver_.buffer().contiguous_end();
    const bool ok = receiver_.send(c + 2, 2) && receiver_.send(c, 2) && receiver_.send(c + 4, 4) &&
                    add_at_back();
    receiver_.read();
    return ok;
  }
  size_t gaps() { return receiver_.buffer().gap_count(); }

 private:
  bool add_at_back() {
    back_ += kSpacing;
    return receiver_.send(back_ - kSpacing / 2, kSpacing / 2);
  }

  Receiver receiver_;
  uint64_t back_ = 0;
};

class MiddleAttack {
 public:
  explicit MiddleAttack(size_t gaps) : receiver_(gaps), middle_(kSpacing * (gaps / 2)) {
    for (size_t i = 0; i + 1 < gaps; ++i) add_at_back();
  }
  // Four frames on the hole [middle, middle + 8); false if one was refused.
  bool round() {
    const bool ok = receiver_.send(middle_ + 2, 2) && receiver_.send(middle_, 2) &&
                    receiver_.send(middle_ + 4, 4) && add_at_back();
    middle_ += kSpacing;
    return ok;
  }
  size_t gaps() { return receiver_.buffer().gap_count(); }
  // Nothing is read, so held bytes grow by 32 a round: start over before
  // the pool (4 MiB) runs out.
  bool worn_out() const { return back_ > 2 * 1024 * 1024; }

 private:
  bool add_at_back() {
    back_ += kSpacing;
    return receiver_.send(back_ - kSpacing / 2, kSpacing / 2);
  }

  Receiver receiver_;
  uint64_t middle_;
  uint64_t back_ = 0;
};

class RandomAttack {
 public:
  explicit RandomAttack(size_t gaps) : receiver_(gaps), grown_(gaps - 1, 0) {
    for (size_t i = 0; i + 1 < gaps; ++i) receiver_.send(kSpacing * i + kSpacing / 2, kSpacing / 2);
  }
  // Four frames, each growing a random range down by one byte (at most 7
  // times, so its hole stays open); false if one was refused.
  bool round() {
    bool ok = true;
    for (int f = 0; f < 4; ++f) {
      size_t i = pick();
      while (grown_[i] == 7) i = pick();
      ++grown_[i];
      ok = receiver_.send(kSpacing * i + kSpacing / 2 - grown_[i], 1) && ok;
    }
    frames_ += 4;
    return ok;
  }
  size_t gaps() { return receiver_.buffer().gap_count(); }
  // Start over once half the holes' bytes are used, before picking slows.
  bool worn_out() const { return frames_ * 2 > grown_.size() * 7; }

 private:
  size_t pick() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<size_t>(state_ % grown_.size());
  }

  Receiver receiver_;
  std::vector<uint8_t> grown_;
  uint64_t state_ = 0x9e3779b97f4a7c15;
  size_t frames_ = 0;
};

class InOrder {
 public:
  InOrder() : receiver_(1024) {}
  bool round() {
    bool ok = true;
    for (int i = 0; i < 4; ++i, next_ += 8) ok = receiver_.send(next_, 8) && ok;
    receiver_.read();
    return ok;
  }

 private:
  Receiver receiver_;
  uint64_t next_ = 0;
};

template <typename Pattern>
bool timed_batch(Pattern& pattern, uint64_t& cycles) {
  bool ok = true;
  const uint64_t start = __rdtsc();
  for (size_t r = 0; r < kRoundsPerBatch; ++r) ok = pattern.round() && ok;
  cycles += __rdtsc() - start;
  return ok;
}

template <typename Attack>
void run_against_in_order(benchmark::State& state) {
  pin_to_current_core();
  const size_t gaps = static_cast<size_t>(state.range(0));
  auto attack = std::make_unique<Attack>(gaps);
  InOrder in_order;
  uint64_t attack_cycles = 0, in_order_cycles = 0, frames = 0;
  for (auto _ : state) {
    if (!timed_batch(*attack, attack_cycles) || !timed_batch(in_order, in_order_cycles) ||
        attack->gaps() != gaps - 1) {
      state.SkipWithError("a frame was refused");
      return;
    }
    frames += 4 * kRoundsPerBatch;
    if constexpr (requires { attack->worn_out(); }) {
      if (attack->worn_out()) attack = std::make_unique<Attack>(gaps);  // not timed
    }
  }
  const double attack_per_frame = static_cast<double>(attack_cycles) / static_cast<double>(frames);
  const double in_order_per_frame =
      static_cast<double>(in_order_cycles) / static_cast<double>(frames);
  state.counters["attack_cycles_per_frame"] = attack_per_frame;
  state.counters["in_order_cycles_per_frame"] = in_order_per_frame;
  state.counters["ratio"] = attack_per_frame / in_order_per_frame;
}

void BM_FrontAttackAgainstInOrder(benchmark::State& state) {
  run_against_in_order<FrontAttack>(state);
}
BENCHMARK(BM_FrontAttackAgainstInOrder)->Arg(64)->Arg(1024)->Arg(4096);

void BM_MiddleAttackAgainstInOrder(benchmark::State& state) {
  run_against_in_order<MiddleAttack>(state);
}
BENCHMARK(BM_MiddleAttackAgainstInOrder)->Arg(64)->Arg(1024)->Arg(4096);

void BM_RandomAttackAgainstInOrder(benchmark::State& state) {
  run_against_in_order<RandomAttack>(state);
}
BENCHMARK(BM_RandomAttackAgainstInOrder)->Arg(64)->Arg(1024)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
