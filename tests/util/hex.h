#pragma once
// Hex strings for test vectors, as printed in the RFCs: whitespace is
// ignored, and anything else that is not a hex digit aborts the test binary,
// so a typo in a vector can never pass silently.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::testing {

inline std::vector<uint8_t> from_hex(std::string_view text) {
  std::vector<uint8_t> out;
  int high = -1;
  for (const char c : text) {
    int nibble;
    if (c >= '0' && c <= '9') {
      nibble = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      nibble = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      nibble = c - 'A' + 10;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      continue;
    } else {
      std::fprintf(stderr, "from_hex: not a hex digit: '%c'\n", c);
      std::abort();
    }
    if (high < 0) {
      high = nibble;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | nibble));
      high = -1;
    }
  }
  if (high >= 0) {
    std::fprintf(stderr, "from_hex: odd number of digits in \"%.*s\"\n",
                 static_cast<int>(text.size()), text.data());
    std::abort();
  }
  return out;
}

inline std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

}  // namespace dpquic::testing
