#include "quic/endpoint/cid_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

#include "quic/hot_path.h"

namespace dpquic::endpoint {
namespace {

constexpr size_t kMinSlots = 8;
constexpr size_t kMaxSlots = size_t{1} << 30;

struct SipState {
  uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }
};

uint64_t load_little_endian(const uint8_t* bytes, size_t length) {
  uint64_t value = 0;
  for (size_t i = 0; i < length; ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return value;
}

// SplitMix64's finalizer: spreads one 64-bit seed over the two SipHash keys.
uint64_t split_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

size_t slot_count_for(size_t capacity) {
  if (capacity > kMaxSlots) {
    throw std::invalid_argument("ConnectionIdTable: capacity above 2^30");
  }
  return std::bit_ceil(std::max(capacity, kMinSlots));
}

}  // namespace

template <int kCompressionRounds, int kFinalizationRounds>
DPQUIC_HOT uint64_t siphash(uint64_t k0, uint64_t k1, std::span<const uint8_t> data) {
  SipState s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
             k1 ^ 0x7465646279746573ull};
  const size_t whole = data.size() & ~size_t{7};
  for (size_t offset = 0; offset < whole; offset += 8) {
    const uint64_t m = load_little_endian(data.data() + offset, 8);
    s.v3 ^= m;
    for (int i = 0; i < kCompressionRounds; ++i) s.round();
    s.v0 ^= m;
  }
  const uint64_t last = (static_cast<uint64_t>(data.size()) << 56) |
                        load_little_endian(data.data() + whole, data.size() - whole);
  s.v3 ^= last;
  for (int i = 0; i < kCompressionRounds; ++i) s.round();
  s.v0 ^= last;
  s.v2 ^= 0xff;
  for (int i = 0; i < kFinalizationRounds; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

template uint64_t siphash<1, 3>(uint64_t, uint64_t, std::span<const uint8_t>);
template uint64_t siphash<2, 4>(uint64_t, uint64_t, std::span<const uint8_t>);

ConnectionIdTable::ConnectionIdTable(size_t capacity, uint64_t seed)
    : ConnectionIdTable(capacity, seed, nullptr) {}

ConnectionIdTable::ConnectionIdTable(size_t capacity, uint64_t seed, HashFunction hash_for_testing)
    : slots_(slot_count_for(capacity)),
      mask_(slots_.size() - 1),
      max_size_(slots_.size() - slots_.size() / 8),
      k0_(split_mix(seed)),
      k1_(split_mix(seed ^ 0x6a09e667f3bcc909ull)),
      seed_(seed),
      hash_for_testing_(hash_for_testing) {}

uint64_t ConnectionIdTable::hash(std::span<const uint8_t> cid) const {
  if (hash_for_testing_ != nullptr) [[unlikely]] {
    return hash_for_testing_(seed_, cid);
  }
  return siphash<1, 3>(k0_, k1_, cid);
}

DPQUIC_HOT size_t ConnectionIdTable::locate(std::span<const uint8_t> cid, uint32_t key_hash,
                                            size_t* probes) const {
  // Terminates: at most max_size() < capacity() slots are used.
  size_t index = key_hash & mask_;
  size_t count = 1;
  while (slots_[index].used) {
    const Slot& slot = slots_[index];
    if (slot.hash == key_hash && slot.cid.size() == cid.size() &&
        (cid.empty() || std::memcmp(slot.cid.data(), cid.data(), cid.size()) == 0)) {
      break;
    }
    index = (index + 1) & mask_;
    ++count;
  }
  if (probes != nullptr) *probes = count;
  return index;
}

bool ConnectionIdTable::insert(const wire::ConnectionId& cid, uint32_t handle) {
  const uint32_t key_hash = static_cast<uint32_t>(hash(cid.span()));
  const size_t index = locate(cid.span(), key_hash, nullptr);
  if (slots_[index].used || size_ >= max_size_) return false;
  Slot& slot = slots_[index];
  slot.hash = key_hash;
  slot.handle = handle;
  slot.cid = cid;
  slot.used = true;
  ++size_;
  return true;
}

std::optional<uint32_t> ConnectionIdTable::find(std::span<const uint8_t> cid) const {
  if (cid.size() > wire::kMaxConnectionIdLength) return std::nullopt;
  const Slot& slot = slots_[locate(cid, static_cast<uint32_t>(hash(cid)), nullptr)];
  if (!slot.used) return std::nullopt;
  return slot.handle;
}

size_t ConnectionIdTable::probe_length(std::span<const uint8_t> cid) const {
  size_t probes = 0;
  locate(cid, static_cast<uint32_t>(hash(cid)), &probes);
  return probes;
}

bool ConnectionIdTable::erase(std::span<const uint8_t> cid) {
  if (cid.size() > wire::kMaxConnectionIdLength) return false;
  size_t hole = locate(cid, static_cast<uint32_t>(hash(cid)), nullptr);
  if (!slots_[hole].used) return false;
  // Backward-shift deletion (Knuth's Algorithm R): walk the rest of the
  // cluster and move back every entry whose home slot does not lie
  // (cyclically) between the hole and its current slot, so every remaining
  // entry stays reachable from its home without tombstones.
  size_t index = hole;
  while (true) {
    index = (index + 1) & mask_;
    Slot& slot = slots_[index];
    if (!slot.used) break;
    const size_t home = slot.hash & mask_;
    const size_t distance_from_home = (index - home) & mask_;
    const size_t distance_from_hole = (index - hole) & mask_;
    if (distance_from_home >= distance_from_hole) {
      slots_[hole] = slot;
      hole = index;
    }
  }
  slots_[hole] = Slot{};
  --size_;
  return true;
}

void ConnectionIdTable::clear() {
  for (Slot& slot : slots_) slot = Slot{};
  size_ = 0;
}

}  // namespace dpquic::endpoint
