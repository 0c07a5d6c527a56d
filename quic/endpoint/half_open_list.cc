#include "quic/endpoint/half_open_list.h"

#include <algorithm>
#include <array>
#include <bit>

namespace dpquic::endpoint {

HalfOpenList::HalfOpenList(size_t max_connections, uint64_t seed)
    : entries_(max_connections),
      // At most one prefix per listed connection: at most half the slots used.
      prefix_counts_(std::bit_ceil(std::max<size_t>(16, max_connections * 2)), seed) {}

wire::ConnectionId HalfOpenList::prefix_of(const conn::SocketAddress& address) {
  std::array<uint8_t, 9> key{};
  key[0] = static_cast<uint8_t>(address.family);
  const size_t length = address.family == conn::AddressFamily::kIpv6 ? 8 : 4;
  std::copy_n(address.ip.begin(), length, key.begin() + 1);
  return wire::ConnectionId(std::span<const uint8_t>(key.data(), 1 + length));
}

size_t HalfOpenList::count_for(const conn::SocketAddress& address) const {
  return prefix_counts_.find(prefix_of(address)).value_or(0);
}

void HalfOpenList::set_count(const wire::ConnectionId& prefix, size_t count) {
  prefix_counts_.erase(prefix);
  if (count != 0) (void)prefix_counts_.insert(prefix, static_cast<uint32_t>(count));
}

void HalfOpenList::add(uint32_t handle, Instant started, const conn::SocketAddress& remote) {
  Entry& entry = entries_[handle];
  if (entry.listed) return;
  entry.listed = true;
  entry.started = started;
  entry.prefix = prefix_of(remote);
  entry.previous = tail_;
  entry.next = kNone;
  if (tail_ != kNone) {
    entries_[tail_].next = handle;
  } else {
    head_ = handle;
  }
  tail_ = handle;
  ++size_;
  set_count(entry.prefix, prefix_counts_.find(entry.prefix).value_or(0) + 1);
}

void HalfOpenList::remove(uint32_t handle) {
  if (!contains(handle)) return;
  Entry& entry = entries_[handle];
  entry.listed = false;
  if (entry.previous != kNone) {
    entries_[entry.previous].next = entry.next;
  } else {
    head_ = entry.next;
  }
  if (entry.next != kNone) {
    entries_[entry.next].previous = entry.previous;
  } else {
    tail_ = entry.previous;
  }
  entry.previous = entry.next = kNone;
  --size_;
  const size_t count = prefix_counts_.find(entry.prefix).value_or(1);
  set_count(entry.prefix, count - 1);
}

std::optional<uint32_t> HalfOpenList::oldest() const {
  if (head_ == kNone) return std::nullopt;
  return head_;
}

}  // namespace dpquic::endpoint
