#pragma once
// A small strict JSON parser for the qlog tests (RFC 8259): objects, arrays,
// strings with escapes, numbers, true/false/null. Enough to check that every
// qlog record is valid JSON and to read fields back. Test-only.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::dataplane::testing {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString (unescaped), and kNumber's literal
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  bool is_object() const { return kind == Kind::kObject; }
  bool has(const std::string& key) const { return members.count(key) != 0; }
  // The member, or a null value if absent (chains safely).
  const JsonValue& operator[](const std::string& key) const {
    static const JsonValue kNullValue;
    auto it = members.find(key);
    return it == members.end() ? kNullValue : it->second;
  }
  // An integer member exactly (doubles lose precision above 2^53).
  uint64_t as_uint() const { return std::strtoull(text.c_str(), nullptr, 10); }
};

// The value of the whole of `text` (surrounding whitespace allowed), or
// nullopt if it is not exactly one valid JSON text.
std::optional<JsonValue> parse_json(std::string_view text);

}  // namespace dpquic::dataplane::testing
