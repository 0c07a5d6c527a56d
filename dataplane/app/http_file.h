#pragma once
// What an HTTP origin owes a client for a static file (RFC 9110), as pure
// functions of the file's size and modification time and the request's
// fields, with no I/O and no HTTP/3 library:
// - validators: a strong entity tag from size and mtime (nanoseconds), the
//   same on every host holding the same file (no inode in it); last-modified
//   as an IMF-fixdate (§8.8);
// - HTTP-dates: formatting IMF-fixdate, parsing the three formats a
//   recipient must accept (§5.6.7);
// - the response plan: if-none-match / if-modified-since (§13.1.2, §13.1.3,
//   evaluated in the order of §13.2.2) giving 304, and range / if-range
//   (§14.2, §13.1.5) giving 206 or 416 for one byte range. Several ranges, a
//   malformed range or an if-range that does not match give the whole file
//   (200), which §14.2 allows.
//
// Times are seconds (or nanoseconds where named) since the Unix epoch, UTC.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dpquic::dataplane {

// A short string held inline (no allocation): validators, dates, ranges.
template <size_t N>
class InlineText {
 public:
  std::string_view view() const { return {bytes_.data(), size_}; }
  bool empty() const { return size_ == 0; }
  // Appends what fits.
  void append(std::string_view text) {
    const size_t n = text.size() < N - size_ ? text.size() : N - size_;
    text.copy(bytes_.data() + size_, n);
    size_ += n;
  }
  void append_decimal(uint64_t value) { append_digits(value, 10); }
  void append_hex(uint64_t value) { append_digits(value, 16); }
  void clear() { size_ = 0; }

 private:
  void append_digits(uint64_t value, uint64_t base) {
    char digits[20];
    size_t count = 0;
    do {
      digits[count++] = "0123456789abcdef"[value % base];
      value /= base;
    } while (value != 0);
    while (count != 0 && size_ < N) bytes_[size_++] = digits[--count];
  }

  std::array<char, N> bytes_{};
  size_t size_ = 0;
};

// `"<mtime in ns, hex>-<size, hex>"` (35 characters at most).
using EntityTag = InlineText<40>;
// "Sun, 06 Nov 1994 08:49:37 GMT" (29 characters).
using HttpDate = InlineText<32>;
// "bytes <first>-<last>/<size>" or "bytes */<size>".
using ContentRange = InlineText<72>;

// The strong entity tag of a file: its mtime in nanoseconds and its size,
// in lowercase hex (nginx style, with the nanoseconds).
EntityTag make_entity_tag(uint64_t size, int64_t mtime_ns);

// An IMF-fixdate (RFC 9110 §5.6.7).
HttpDate format_http_date(int64_t unix_seconds);

// An HTTP-date in any of the three formats of RFC 9110 §5.6.7: IMF-fixdate
// ("Sun, 06 Nov 1994 08:49:37 GMT"), RFC 850 ("Sunday, 06-Nov-94 08:49:37
// GMT"; its two-digit year is the latest year with those digits not more
// than 50 years after `now_unix_seconds`) and asctime ("Sun Nov  6 08:49:37
// 1994"). Names are case-sensitive, as in the grammar; the day name is not
// checked against the date. nullopt when it is none of them.
std::optional<int64_t> parse_http_date(std::string_view text, int64_t now_unix_seconds);

// Whether an if-none-match value (`*` or a list of entity tags) matches
// `etag` by weak comparison (§13.1.2, §8.8.3.2). A malformed list matches
// nothing.
bool if_none_match_matches(std::string_view field, std::string_view etag);

// The request fields a file response depends on. Absent fields are nullopt;
// an empty value is malformed for each of them (see ConditionalFields).
struct FileRequestFields {
  std::optional<std::string_view> if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> range;
  std::optional<std::string_view> if_range;
};

enum class FileField : uint8_t { kIfNoneMatch, kIfModifiedSince, kRange, kIfRange };

// The owning form of FileRequestFields, filled as a request's fields
// arrive. A repeated if-none-match is joined to the first with ", " (it is
// a list); a repeated other field, or any field longer than the bound, is
// kept as present and empty: malformed, so its condition cannot succeed.
class ConditionalFields {
 public:
  void add(FileField field, std::string_view value, size_t max_length);
  void clear();
  FileRequestFields view() const;

 private:
  static constexpr size_t kFields = 4;
  std::array<std::string, kFields> values_;
  std::array<bool, kFields> present_{};
};

// A file as its validators see it.
struct FileVersion {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

// How to answer a GET or HEAD of a file.
struct FilePlan {
  int status = 200;            // 200, 206, 304 or 416
  uint64_t offset = 0;         // first byte of the file in the body
  uint64_t length = 0;         // content-length: body bytes (HEAD: that would be sent)
  bool send_length = true;     // false for 304 (no content-length at all)
  int64_t last_modified = 0;   // seconds, never after now (§8.8.2.1)
  EntityTag etag;              //
  ContentRange content_range;  // for 206 and 416, else empty
};

// The plan for a GET (`is_get`) or HEAD of `file` at `now_unix_seconds`.
// Range applies to GET only (§14.2).
FilePlan plan_file_response(const FileRequestFields& fields, bool is_get, const FileVersion& file,
                            int64_t now_unix_seconds);

}  // namespace dpquic::dataplane
