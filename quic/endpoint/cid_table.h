#pragma once
// The per-core connection ID table: Destination Connection ID -> connection
// handle, consulted for every received datagram.
//
// Open addressing with linear probing over a power-of-two slot array sized
// once at construction; nothing allocates afterwards. Inserts fail once the
// table holds 7/8 of its slots, so a probe always meets an empty slot.
// Deletion shifts later entries of the cluster back (no tombstones), so
// lookups never degrade with churn. Keys are compared in full.
//
// Hashing: a client picks its first Initial's DCID, so keys are attacker
// controlled. The hash is SipHash-1-3 (Aumasson and Bernstein) keyed with
// 128 bits derived from the table's random 64-bit seed; without the seed an
// attacker cannot aim many CIDs at one cluster.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quic/wire/connection_id.h"

namespace dpquic::endpoint {

// SipHash-c-d with key (k0, k1) over `data` (the paper's little-endian
// conventions). The table uses <1, 3>; <2, 4> is exposed for the reference
// test vectors.
template <int kCompressionRounds, int kFinalizationRounds>
uint64_t siphash(uint64_t k0, uint64_t k1, std::span<const uint8_t> data);

class ConnectionIdTable {
 public:
  // A replacement hash for tests that need forced collisions; never set in
  // production.
  using HashFunction = uint64_t (*)(uint64_t seed, std::span<const uint8_t> cid);

  // The slot count is `capacity` rounded up to a power of two, at least 8 and
  // at most 2^30; at most max_size() = 7/8 of it is used. Throws
  // std::invalid_argument for a larger capacity (configuration time only).
  ConnectionIdTable(size_t capacity, uint64_t seed);
  ConnectionIdTable(size_t capacity, uint64_t seed, HashFunction hash_for_testing);

  ConnectionIdTable(const ConnectionIdTable&) = delete;
  ConnectionIdTable& operator=(const ConnectionIdTable&) = delete;

  // False if `cid` is already present (its handle is left alone) or the
  // table holds max_size() entries.
  bool insert(const wire::ConnectionId& cid, uint32_t handle);
  // Empty if absent; also for spans longer than 20 bytes, which no stored ID is.
  std::optional<uint32_t> find(std::span<const uint8_t> cid) const;
  std::optional<uint32_t> find(const wire::ConnectionId& cid) const { return find(cid.span()); }
  // False if absent.
  bool erase(std::span<const uint8_t> cid);
  bool erase(const wire::ConnectionId& cid) { return erase(cid.span()); }
  // Removes every entry (keeps the slots).
  void clear();

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  size_t max_size() const { return max_size_; }
  bool empty() const { return size_ == 0; }

  // The number of slots a lookup of `cid` inspects (1 if it hits its home
  // slot): for tests and diagnostics.
  size_t probe_length(std::span<const uint8_t> cid) const;

 private:
  struct Slot {
    uint32_t hash = 0;  // low 32 bits of the key's hash: home slot and a cheap filter
    uint32_t handle = 0;
    wire::ConnectionId cid;
    bool used = false;
  };

  uint64_t hash(std::span<const uint8_t> cid) const;
  // Index of `cid`'s slot, or of the empty slot ending its probe sequence.
  size_t locate(std::span<const uint8_t> cid, uint32_t hash, size_t* probes) const;

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t max_size_ = 0;
  size_t size_ = 0;
  uint64_t k0_ = 0;
  uint64_t k1_ = 0;
  uint64_t seed_ = 0;
  HashFunction hash_for_testing_ = nullptr;
};

}  // namespace dpquic::endpoint
