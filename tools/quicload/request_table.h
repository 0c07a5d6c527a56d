#pragma once
// In-flight requests of one worker, found by the id their client gave them:
// a fixed pool of records and an open-addressing index (linear probing,
// backward-shift deletion), both sized once for the most requests that can
// be in flight. Nothing is allocated per request.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "quic/time.h"

namespace dpquic::tools {

struct RequestRecord {
  uint64_t id = 0;          // the client's request id; 0: free
  uint32_t slot = 0;        // connection slot
  uint32_t generation = 0;  // the slot's connection when the request was issued
  uint32_t target = 0;      // index into the URLs
  Instant issued = 0;
  uint64_t received = 0;  // body bytes so far
  uint64_t expected = 0;  // body size, when has_expected
  bool has_expected = false;
  bool content_ok = true;
  int status = 0;
};

class RequestTable {
 public:
  // Room for `capacity` requests at once.
  explicit RequestTable(size_t capacity);

  // A free record for `id` (not 0, not in the table), or null when full.
  RequestRecord* insert(uint64_t id);
  RequestRecord* find(uint64_t id);
  // Frees the record of `id` (no-op if absent).
  void erase(uint64_t id);

  size_t size() const { return size_; }
  size_t capacity() const { return records_.size(); }
  // Every record in use (order unspecified), for abandoning them all.
  template <typename F>
  void for_each(F&& f) {
    for (RequestRecord& record : records_) {
      if (record.id != 0) f(record);
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  size_t home(uint64_t id) const;

  std::vector<RequestRecord> records_;
  std::vector<uint32_t> free_;     // indices of free records
  std::vector<uint32_t> buckets_;  // record index or kEmpty; a power of two >= 2 x capacity
  size_t size_ = 0;
};

}  // namespace dpquic::tools
