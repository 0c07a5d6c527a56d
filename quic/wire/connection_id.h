#pragma once
// A connection ID of 0..20 bytes (RFC 9000 §17.2), stored inline.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

namespace dpquic::wire {

inline constexpr size_t kMaxConnectionIdLength = 20;
// A v1 client's first Destination Connection ID (RFC 9000 §7.2).
inline constexpr size_t kMinInitialDestinationCidLength = 8;

class ConnectionId {
 public:
  constexpr ConnectionId() = default;
  // Bytes beyond kMaxConnectionIdLength are a caller bug; they are cut off so
  // the object can never overflow. Parsers check the length before this.
  explicit ConnectionId(std::span<const uint8_t> bytes)
      : length_(static_cast<uint8_t>(std::min(bytes.size(), kMaxConnectionIdLength))) {
    if (length_ != 0) std::memcpy(bytes_.data(), bytes.data(), length_);
  }

  size_t size() const { return length_; }
  bool empty() const { return length_ == 0; }
  const uint8_t* data() const { return bytes_.data(); }
  std::span<const uint8_t> span() const { return {bytes_.data(), length_}; }

  // Whether this is exactly `bytes`.
  bool matches(std::span<const uint8_t> bytes) const {
    // An empty span's data() may be null, which memcmp must not get.
    return bytes.size() == length_ &&
           (length_ == 0 || std::memcmp(bytes_.data(), bytes.data(), length_) == 0);
  }

  friend bool operator==(const ConnectionId& a, const ConnectionId& b) {
    return a.matches(b.span());
  }

 private:
  std::array<uint8_t, kMaxConnectionIdLength> bytes_{};
  uint8_t length_ = 0;
};

}  // namespace dpquic::wire
