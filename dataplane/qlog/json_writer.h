#pragma once
// A minimal streaming JSON writer into a reused std::string: just what qlog
// records need (objects, arrays, unsigned integers, fixed-point
// milliseconds, escaped strings, hex byte strings). Commas are placed by the
// writer; nesting deeper than kMaxDepth is a caller bug (ignored safely).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dpquic::dataplane {

class JsonWriter {
 public:
  static constexpr size_t kMaxDepth = 16;

  explicit JsonWriter(std::string& out) : out_(out) {}

  // As a value: the top level or an array element.
  void begin_object();
  // As a member of the enclosing object.
  void begin_object(std::string_view key);
  void end_object();
  void begin_array();
  void begin_array(std::string_view key);
  void end_array();

  void member(std::string_view key, uint64_t value);
  void member(std::string_view key, std::string_view value);  // escaped
  void member_ms(std::string_view key, double milliseconds);  // 3 decimals
  void member_bool(std::string_view key, bool value);
  void member_hex(std::string_view key, std::span<const uint8_t> bytes);
  void element(uint64_t value);
  void element(std::string_view value);  // escaped

  // JSON string contents for arbitrary bytes: quotes, backslashes and
  // control characters escaped; bytes >= 0x80 as \u00XX (Latin-1), so the
  // output is always valid UTF-8 whatever a peer put in a reason phrase.
  static void append_escaped(std::string& out, std::string_view bytes);
  static void append_hex(std::string& out, std::span<const uint8_t> bytes);
  static void append_uint(std::string& out, uint64_t value);
  static void append_fixed3(std::string& out, double value);

 private:
  void separate();
  void open(char bracket);
  void write_key(std::string_view key);

  std::string& out_;
  std::array<bool, kMaxDepth> has_items_{};
  size_t depth_ = 0;
};

}  // namespace dpquic::dataplane
