#include "dataplane/qlog/json_writer.h"

#include <charconv>

namespace dpquic::dataplane {

void JsonWriter::separate() {
  if (depth_ == 0) return;
  bool& has_items = has_items_[depth_ - 1];
  if (has_items) out_.push_back(',');
  has_items = true;
}

void JsonWriter::open(char bracket) {
  out_.push_back(bracket);
  if (depth_ < kMaxDepth) has_items_[depth_] = false;
  ++depth_;
}

void JsonWriter::write_key(std::string_view key) {
  separate();
  out_.push_back('"');
  append_escaped(out_, key);
  out_ += "\":";
}

void JsonWriter::begin_object() {
  separate();
  open('{');
}

void JsonWriter::begin_object(std::string_view key) {
  write_key(key);
  open('{');
}

void JsonWriter::end_object() {
  out_.push_back('}');
  if (depth_ != 0) --depth_;
}

void JsonWriter::begin_array() {
  separate();
  open('[');
}

void JsonWriter::begin_array(std::string_view key) {
  write_key(key);
  open('[');
}

void JsonWriter::end_array() {
  out_.push_back(']');
  if (depth_ != 0) --depth_;
}

void JsonWriter::member(std::string_view key, uint64_t value) {
  write_key(key);
  append_uint(out_, value);
}

void JsonWriter::member(std::string_view key, std::string_view value) {
  write_key(key);
  out_.push_back('"');
  append_escaped(out_, value);
  out_.push_back('"');
}

void JsonWriter::member_ms(std::string_view key, double milliseconds) {
  write_key(key);
  append_fixed3(out_, milliseconds);
}

void JsonWriter::member_bool(std::string_view key, bool value) {
  write_key(key);
  out_ += value ? "true" : "false";
}

void JsonWriter::member_hex(std::string_view key, std::span<const uint8_t> bytes) {
  write_key(key);
  out_.push_back('"');
  append_hex(out_, bytes);
  out_.push_back('"');
}

void JsonWriter::element(uint64_t value) {
  separate();
  append_uint(out_, value);
}

void JsonWriter::element(std::string_view value) {
  separate();
  out_.push_back('"');
  append_escaped(out_, value);
  out_.push_back('"');
}

void JsonWriter::append_escaped(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += "\\u00";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    } else {
      out.push_back(c);
    }
  }
}

void JsonWriter::append_hex(std::string& out, std::span<const uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const uint8_t byte : bytes) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
}

void JsonWriter::append_uint(std::string& out, uint64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void JsonWriter::append_fixed3(std::string& out, double value) {
  // JSON has no NaN or infinity; times and RTTs are never negative.
  if (!(value >= 0) || value > 1e15) value = 0;
  char buffer[48];
  const auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed, 3);
  out.append(buffer, result.ptr);
}

}  // namespace dpquic::dataplane
