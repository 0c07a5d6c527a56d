#include "tests/dataplane/qlog/json_value.h"

#include <cstdlib>

namespace dpquic::dataplane::testing {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  bool parse_document(JsonValue& out) {
    skip_space();
    if (!parse_value(out, 0)) return false;
    skip_space();
    return position_ == text_.size();
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool at_end() const { return position_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[position_]; }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++position_;
    }
  }
  bool literal(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }

  bool parse_value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return false;
    switch (peek()) {
      case '{': return parse_object(out, depth);
      case '[': return parse_array(out, depth);
      case '"': out.kind = JsonValue::Kind::kString; return parse_string(out.text);
      case 't':
        out.kind = JsonValue::Kind::kBool;
        out.boolean = true;
        return literal("true");
      case 'f':
        out.kind = JsonValue::Kind::kBool;
        out.boolean = false;
        return literal("false");
      case 'n': out.kind = JsonValue::Kind::kNull; return literal("null");
      default: return parse_number(out);
    }
  }

  bool parse_object(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kObject;
    ++position_;  // {
    skip_space();
    if (peek() == '}') {
      ++position_;
      return true;
    }
    for (;;) {
      skip_space();
      std::string key;
      if (peek() != '"' || !parse_string(key)) return false;
      if (out.members.count(key) != 0) return false;  // duplicate keys: reject in tests
      skip_space();
      if (peek() != ':') return false;
      ++position_;
      skip_space();
      if (!parse_value(out.members[key], depth + 1)) return false;
      skip_space();
      if (peek() == ',') {
        ++position_;
        continue;
      }
      if (peek() == '}') {
        ++position_;
        return true;
      }
      return false;
    }
  }

  bool parse_array(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kArray;
    ++position_;  // [
    skip_space();
    if (peek() == ']') {
      ++position_;
      return true;
    }
    for (;;) {
      skip_space();
      out.items.emplace_back();
      if (!parse_value(out.items.back(), depth + 1)) return false;
      skip_space();
      if (peek() == ',') {
        ++position_;
        continue;
      }
      if (peek() == ']') {
        ++position_;
        return true;
      }
      return false;
    }
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xe0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    }
  }

  bool parse_string(std::string& out) {
    ++position_;  // "
    while (!at_end()) {
      const char c = text_[position_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;   // raw control character
      if (static_cast<unsigned char>(c) >= 0x80) return false;  // writer emits ASCII only
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) return false;
      const char e = text_[position_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (position_ + 4 > text_.size()) return false;
          uint32_t code = 0;
          for (int i = 0; i < 4; ++i) {
            const int digit = hex_digit(text_[position_++]);
            if (digit < 0) return false;
            code = code << 4 | static_cast<uint32_t>(digit);
          }
          if (code >= 0xd800 && code <= 0xdfff) return false;  // no surrogates here
          append_utf8(out, code);
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  bool parse_number(JsonValue& out) {
    const size_t start = position_;
    if (peek() == '-') ++position_;
    if (peek() == '0') {
      ++position_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++position_;
    } else {
      return false;
    }
    if (peek() == '.') {
      ++position_;
      if (!(peek() >= '0' && peek() <= '9')) return false;
      while (peek() >= '0' && peek() <= '9') ++position_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++position_;
      if (peek() == '+' || peek() == '-') ++position_;
      if (!(peek() >= '0' && peek() <= '9')) return false;
      while (peek() >= '0' && peek() <= '9') ++position_;
    }
    out.kind = JsonValue::Kind::kNumber;
    out.text = std::string(text_.substr(start, position_ - start));
    out.number = std::strtod(out.text.c_str(), nullptr);
    return true;
  }

  std::string_view text_;
  size_t position_ = 0;
};

}  // namespace

std::optional<JsonValue> parse_json(std::string_view text) {
  JsonValue value;
  Parser parser(text);
  if (!parser.parse_document(value)) return std::nullopt;
  return value;
}

}  // namespace dpquic::dataplane::testing
