// QUIC variable-length integers (RFC 9000 §16) and the bounds-checked byte
// reader and writer every wire codec is built on.
//
// Failure is a value: every read or write that does not fit returns false and
// consumes or writes nothing, so a caller can never read past the end.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace dpquic::wire {

// Largest value a varint can carry: 2^62 - 1.
inline constexpr uint64_t kVarintMax = (uint64_t{1} << 62) - 1;

// Bytes needed to encode `value` minimally: 1, 2, 4 or 8; 0 if value > kVarintMax.
constexpr size_t varint_length(uint64_t value) {
  if (value < (uint64_t{1} << 6)) return 1;
  if (value < (uint64_t{1} << 14)) return 2;
  if (value < (uint64_t{1} << 30)) return 4;
  if (value <= kVarintMax) return 8;
  return 0;
}

// Length announced by a varint's first byte (its two high bits): 1, 2, 4 or 8.
constexpr size_t varint_length_from_first_byte(uint8_t first) { return size_t{1} << (first >> 6); }

namespace detail {

// std::byteswap is C++23; these compile to one instruction each.
inline uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }

inline uint64_t load_big_endian(const uint8_t* in, size_t length) {
  switch (length) {
    case 1: return in[0];
    case 2: {
      uint16_t raw;
      std::memcpy(&raw, in, 2);
      return bswap(raw);
    }
    case 4: {
      uint32_t raw;
      std::memcpy(&raw, in, 4);
      return bswap(raw);
    }
    case 8: {
      uint64_t raw;
      std::memcpy(&raw, in, 8);
      return bswap(raw);
    }
    default: {
      uint64_t value = 0;
      for (size_t i = 0; i < length; ++i) value = (value << 8) | in[i];
      return value;
    }
  }
}

inline void store_big_endian(uint8_t* out, uint64_t value, size_t length) {
  for (size_t i = length; i > 0; --i) {
    out[i - 1] = static_cast<uint8_t>(value);
    value >>= 8;
  }
}

}  // namespace detail

// Encodes `value` in exactly `length` bytes (1, 2, 4 or 8), e.g. for a length
// field reserved before its payload is known. Returns false if `length` is not
// one of those, is too small for the value, or does not fit in `out`.
inline bool varint_encode_fixed(std::span<uint8_t> out, uint64_t value, size_t length) {
  if (length != 1 && length != 2 && length != 4 && length != 8) return false;
  const size_t minimal = varint_length(value);
  if (minimal == 0 || minimal > length || out.size() < length) return false;
  detail::store_big_endian(out.data(), value, length);
  // The two high bits of the first byte carry log2(length).
  out[0] |= static_cast<uint8_t>(std::countr_zero(length) << 6);
  return true;
}

// Encodes `value` minimally at the front of `out`. Returns the bytes written,
// or 0 if the value is above kVarintMax or `out` is too short.
inline size_t varint_encode(std::span<uint8_t> out, uint64_t value) {
  const size_t length = varint_length(value);
  if (length == 0 || !varint_encode_fixed(out, value, length)) return 0;
  return length;
}

// Decodes a varint from the front of `in`. Returns the bytes consumed, or 0 if
// `in` is shorter than the length the first byte announces. Non-minimal
// encodings are valid (RFC 9000 §16) and decode to their value.
inline size_t varint_decode(std::span<const uint8_t> in, uint64_t& value) {
  if (in.empty()) return 0;
  const size_t length = varint_length_from_first_byte(in[0]);
  if (in.size() < length) return 0;
  // Clear the two length bits, which are the top bits of the loaded value.
  value = detail::load_big_endian(in.data(), length) & (~uint64_t{0} >> (66 - 8 * length));
  return length;
}

// Sequential, bounds-checked reader over borrowed bytes. Reads are big-endian.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t position() const { return position_; }
  size_t remaining() const { return bytes_.size() - position_; }
  bool empty() const { return position_ == bytes_.size(); }
  // The unread tail, as a view.
  std::span<const uint8_t> rest() const { return bytes_.subspan(position_); }
  // Everything the reader was given, read or not.
  std::span<const uint8_t> all() const { return bytes_; }

  [[nodiscard]] bool read_u8(uint8_t& out) {
    if (empty()) return false;
    out = bytes_[position_++];
    return true;
  }
  [[nodiscard]] bool read_u16(uint16_t& out) { return read_sized(out); }
  [[nodiscard]] bool read_u32(uint32_t& out) { return read_sized(out); }
  [[nodiscard]] bool read_u64(uint64_t& out) { return read_uint(8, out); }
  // Big-endian unsigned integer of 1 to 8 bytes.
  [[nodiscard]] bool read_uint(size_t length, uint64_t& out) {
    if (length == 0 || length > 8 || remaining() < length) return false;
    out = detail::load_big_endian(bytes_.data() + position_, length);
    position_ += length;
    return true;
  }
  [[nodiscard]] bool read_varint(uint64_t& out) {
    const size_t consumed = varint_decode(rest(), out);
    position_ += consumed;
    return consumed != 0;
  }
  // A view of the next `length` bytes; nothing is copied.
  [[nodiscard]] bool read_bytes(size_t length, std::span<const uint8_t>& out) {
    if (remaining() < length) return false;
    out = bytes_.subspan(position_, length);
    position_ += length;
    return true;
  }
  [[nodiscard]] bool skip(size_t length) {
    if (remaining() < length) return false;
    position_ += length;
    return true;
  }

 private:
  template <typename T>
  bool read_sized(T& out) {
    uint64_t value;
    if (!read_uint(sizeof(T), value)) return false;
    out = static_cast<T>(value);
    return true;
  }

  std::span<const uint8_t> bytes_;
  size_t position_ = 0;
};

// Sequential, bounds-checked writer into a caller-lent buffer.
class ByteWriter {
 public:
  explicit ByteWriter(std::span<uint8_t> buffer) : buffer_(buffer) {}

  size_t position() const { return position_; }
  size_t remaining() const { return buffer_.size() - position_; }
  size_t capacity() const { return buffer_.size(); }
  std::span<uint8_t> written() const { return buffer_.first(position_); }
  // The unwritten tail, for writers that fill bytes in place (e.g. a cipher).
  std::span<uint8_t> tail() const { return buffer_.subspan(position_); }

  // Low `length` bytes (1 to 8) of `value`, big-endian. Higher bits are dropped,
  // which is what packet-number truncation wants.
  [[nodiscard]] bool write_uint(uint64_t value, size_t length) {
    if (length == 0 || length > 8 || remaining() < length) return false;
    detail::store_big_endian(buffer_.data() + position_, value, length);
    position_ += length;
    return true;
  }
  [[nodiscard]] bool write_u8(uint8_t value) {
    if (remaining() < 1) return false;
    buffer_[position_++] = value;
    return true;
  }
  [[nodiscard]] bool write_u16(uint16_t value) { return write_uint(value, 2); }
  [[nodiscard]] bool write_u32(uint32_t value) { return write_uint(value, 4); }
  [[nodiscard]] bool write_u64(uint64_t value) { return write_uint(value, 8); }
  [[nodiscard]] bool write_varint(uint64_t value) {
    const size_t length = varint_encode(tail(), value);
    position_ += length;
    return length != 0;
  }
  [[nodiscard]] bool write_varint_fixed(uint64_t value, size_t length) {
    if (!varint_encode_fixed(tail(), value, length)) return false;
    position_ += length;
    return true;
  }
  [[nodiscard]] bool write_bytes(std::span<const uint8_t> bytes) {
    if (remaining() < bytes.size()) return false;
    if (!bytes.empty()) std::memcpy(buffer_.data() + position_, bytes.data(), bytes.size());
    position_ += bytes.size();
    return true;
  }
  // `length` copies of `value` (padding).
  [[nodiscard]] bool fill(uint8_t value, size_t length) {
    if (remaining() < length) return false;
    std::memset(buffer_.data() + position_, value, length);
    position_ += length;
    return true;
  }
  // Marks `length` bytes as written after the caller filled tail() itself.
  [[nodiscard]] bool advance(size_t length) {
    if (remaining() < length) return false;
    position_ += length;
    return true;
  }

 private:
  std::span<uint8_t> buffer_;
  size_t position_ = 0;
};

}  // namespace dpquic::wire
