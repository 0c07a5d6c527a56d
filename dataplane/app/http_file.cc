#include "dataplane/app/http_file.h"

#include <algorithm>
#include <limits>

namespace dpquic::dataplane {

namespace {

constexpr int64_t kSecondsPerDay = 86400;
constexpr int64_t kNanosecondsPerSecond = 1'000'000'000;
// 9999-12-31 23:59:59: the last second a four-digit year can show.
constexpr int64_t kLastFormattableSecond = 253402300799;

constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongDays = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                       "Thursday", "Friday", "Saturday"};

int64_t floor_div(int64_t value, int64_t divisor) {
  const int64_t quotient = value / divisor;
  return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil).
int64_t days_from_civil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = floor_div(year, 400);
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

struct CivilDate {
  int64_t year;
  int month;
  int day;
};

CivilDate civil_from_days(int64_t days) {
  days += 719468;
  const int64_t era = floor_div(days, 146097);
  const int64_t day_of_era = days - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t shifted_month = (5 * day_of_year + 2) / 153;
  const int day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  const int month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  return {year_of_era + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

bool is_leap(int64_t year) { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0); }

int days_in_month(int64_t year, int month) {
  static constexpr std::array<int, 12> kLengths = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kLengths[static_cast<size_t>(month - 1)];
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads fixed-format date pieces left to right; any mismatch sticks.
class DateReader {
 public:
  explicit DateReader(std::string_view text) : text_(text) {}

  bool literal(std::string_view expected) {
    if (text_.substr(position_, expected.size()) != expected) return ok_ = false;
    position_ += expected.size();
    return ok_;
  }
  int digits(size_t count) {
    int value = 0;
    for (size_t i = 0; i < count; ++i) {
      if (position_ >= text_.size() || !is_digit(text_[position_])) {
        ok_ = false;
        return 0;
      }
      value = value * 10 + (text_[position_++] - '0');
    }
    return value;
  }
  // One of `names`, returning its index.
  template <size_t N>
  int name(const std::array<std::string_view, N>& names) {
    for (size_t i = 0; i < N; ++i) {
      if (text_.substr(position_, names[i].size()) == names[i]) {
        position_ += names[i].size();
        return static_cast<int>(i);
      }
    }
    ok_ = false;
    return 0;
  }
  // hh:mm:ss as seconds of the day.
  int time_of_day() {
    const int hour = digits(2);
    literal(":");
    const int minute = digits(2);
    literal(":");
    const int second = digits(2);
    if (hour > 23 || minute > 59 || second > 60) ok_ = false;
    return hour * 3600 + minute * 60 + second;
  }
  bool finished() const { return ok_ && position_ == text_.size(); }

 private:
  std::string_view text_;
  size_t position_ = 0;
  bool ok_ = true;
};

std::optional<int64_t> to_unix(bool ok, int64_t year, int month, int day, int seconds) {
  if (!ok || day < 1 || day > days_in_month(year, month)) return std::nullopt;
  return days_from_civil(year, month, day) * kSecondsPerDay + seconds;
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<int64_t> parse_imf_fixdate(std::string_view text) {
  DateReader reader(text);
  reader.name(kDays);
  reader.literal(", ");
  const int day = reader.digits(2);
  reader.literal(" ");
  const int month = reader.name(kMonths) + 1;
  reader.literal(" ");
  const int year = reader.digits(4);
  reader.literal(" ");
  const int seconds = reader.time_of_day();
  reader.literal(" GMT");
  return to_unix(reader.finished(), year, month, day, seconds);
}

// "Sunday, 06-Nov-94 08:49:37 GMT"
std::optional<int64_t> parse_rfc850_date(std::string_view text, int64_t now_unix_seconds) {
  DateReader reader(text);
  reader.name(kLongDays);
  reader.literal(", ");
  const int day = reader.digits(2);
  reader.literal("-");
  const int month = reader.name(kMonths) + 1;
  reader.literal("-");
  const int two_digits = reader.digits(2);
  reader.literal(" ");
  const int seconds = reader.time_of_day();
  reader.literal(" GMT");
  if (!reader.finished()) return std::nullopt;
  // RFC 9110 §5.6.7: more than 50 years ahead means the century before.
  const int64_t now_year = civil_from_days(floor_div(now_unix_seconds, kSecondsPerDay)).year;
  int64_t year = now_year - now_year % 100 + two_digits;
  if (year > now_year + 50) year -= 100;
  return to_unix(true, year, month, day, seconds);
}

// "Sun Nov  6 08:49:37 1994"
std::optional<int64_t> parse_asctime_date(std::string_view text) {
  DateReader reader(text);
  reader.name(kDays);
  reader.literal(" ");
  const int month = reader.name(kMonths) + 1;
  reader.literal(" ");
  int day = 0;
  if (text.size() > 8 && text[8] == ' ') {
    reader.literal(" ");
    day = reader.digits(1);
  } else {
    day = reader.digits(2);
  }
  reader.literal(" ");
  const int seconds = reader.time_of_day();
  reader.literal(" ");
  const int year = reader.digits(4);
  return to_unix(reader.finished(), year, month, day, seconds);
}

// An entity tag at the front of `text` (`"..."` or `W/"..."`); on success
// `text` is advanced past it and the opaque tag (with its quotes) returned.
std::optional<std::string_view> take_entity_tag(std::string_view& text) {
  std::string_view rest = text;
  if (rest.substr(0, 2) == "W/") rest.remove_prefix(2);
  if (rest.empty() || rest.front() != '"') return std::nullopt;
  const size_t close = rest.find('"', 1);
  if (close == std::string_view::npos) return std::nullopt;
  for (size_t i = 1; i < close; ++i) {
    const auto c = static_cast<unsigned char>(rest[i]);
    if (c < 0x21 || c == 0x7f) return std::nullopt;  // etagc: visible characters and obs-text
  }
  const std::string_view opaque = rest.substr(0, close + 1);
  text = rest.substr(close + 1);
  return opaque;
}

// The opaque tag of a whole entity-tag value, if it is one.
std::optional<std::string_view> opaque_tag(std::string_view etag) {
  std::optional<std::string_view> opaque = take_entity_tag(etag);
  if (!opaque || !etag.empty()) return std::nullopt;
  return opaque;
}

}  // namespace

// --- Validators and dates -----------------------------------------------------------------------

EntityTag make_entity_tag(uint64_t size, int64_t mtime_ns) {
  EntityTag tag;
  tag.append("\"");
  tag.append_hex(static_cast<uint64_t>(mtime_ns));
  tag.append("-");
  tag.append_hex(size);
  tag.append("\"");
  return tag;
}

HttpDate format_http_date(int64_t unix_seconds) {
  unix_seconds = std::clamp<int64_t>(unix_seconds, 0, kLastFormattableSecond);
  const int64_t days = floor_div(unix_seconds, kSecondsPerDay);
  const int64_t of_day = unix_seconds - days * kSecondsPerDay;
  const CivilDate date = civil_from_days(days);
  const auto two = [](HttpDate& out, int64_t value) {
    if (value < 10) out.append("0");
    out.append_decimal(static_cast<uint64_t>(value));
  };
  HttpDate text;
  text.append(kDays[static_cast<size_t>((days + 4) % 7)]);  // 1970-01-01 was a Thursday
  text.append(", ");
  two(text, date.day);
  text.append(" ");
  text.append(kMonths[static_cast<size_t>(date.month - 1)]);
  text.append(" ");
  if (date.year < 1000) text.append(date.year < 10 ? "000" : date.year < 100 ? "00" : "0");
  text.append_decimal(static_cast<uint64_t>(date.year));
  text.append(" ");
  two(text, of_day / 3600);
  text.append(":");
  two(text, of_day / 60 % 60);
  text.append(":");
  two(text, of_day % 60);
  text.append(" GMT");
  return text;
}

std::optional<int64_t> parse_http_date(std::string_view text, int64_t now_unix_seconds) {
  text = trim(text);
  // The formats differ by what follows the day name: ", " + digits, ", "
  // in the long form, or a space.
  const size_t comma = text.find(',');
  if (comma == 3) return parse_imf_fixdate(text);
  if (comma != std::string_view::npos) return parse_rfc850_date(text, now_unix_seconds);
  return parse_asctime_date(text);
}

bool if_none_match_matches(std::string_view field, std::string_view etag) {
  field = trim(field);
  if (field == "*") return true;
  const std::optional<std::string_view> ours = opaque_tag(etag);
  if (!ours) return false;
  bool matched = false;
  size_t elements = 0;
  while (true) {
    // RFC 9110 §5.6.1: empty list elements (",,") are allowed and ignored.
    while (!field.empty() &&
           (field.front() == ',' || field.front() == ' ' || field.front() == '\t')) {
      field.remove_prefix(1);
    }
    if (field.empty()) break;
    const std::optional<std::string_view> tag = take_entity_tag(field);
    if (!tag) return false;
    ++elements;
    if (*tag == *ours) matched = true;
    field = trim(field);
    if (!field.empty() && field.front() != ',') return false;
  }
  return elements != 0 && matched;
}

// --- Request fields -----------------------------------------------------------------------------

void ConditionalFields::add(FileField field, std::string_view value, size_t max_length) {
  const auto index = static_cast<size_t>(field);
  std::string& stored = values_[index];
  const bool repeated = present_[index];
  present_[index] = true;
  if (repeated && field == FileField::kIfNoneMatch && !stored.empty() &&
      stored.size() + 2 + value.size() <= max_length) {
    stored.append(", ").append(value);
    return;
  }
  if (repeated || value.size() > max_length) {
    stored.clear();
    return;
  }
  stored.assign(value);
}

void ConditionalFields::clear() {
  for (std::string& value : values_) value.clear();
  present_.fill(false);
}

FileRequestFields ConditionalFields::view() const {
  const auto get = [this](FileField field) -> std::optional<std::string_view> {
    const auto index = static_cast<size_t>(field);
    if (!present_[index]) return std::nullopt;
    return std::string_view(values_[index]);
  };
  return {get(FileField::kIfNoneMatch), get(FileField::kIfModifiedSince), get(FileField::kRange),
          get(FileField::kIfRange)};
}

// --- The plan -----------------------------------------------------------------------------------

namespace {

enum class RangeVerdict : uint8_t { kIgnore, kSatisfiable, kUnsatisfiable };

struct RangeDecision {
  RangeVerdict verdict = RangeVerdict::kIgnore;
  uint64_t first = 0;
  uint64_t last = 0;
};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    return lower(x) == lower(y);
  });
}

// Decimal digits, saturating at UINT64_MAX (a larger position is still
// past any file's end). nullopt when empty or not all digits.
std::optional<uint64_t> parse_position(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : digits) {
    if (!is_digit(c)) return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    value = value > (kMax - digit) / 10 ? kMax : value * 10 + digit;
  }
  return value;
}

// One range-spec (§14.1.1) against a file of `size` bytes.
RangeDecision decide_range_spec(std::string_view spec, uint64_t size) {
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return {};
  const std::optional<uint64_t> last = parse_position(spec.substr(dash + 1));
  if (dash == 0) {  // suffix-range: the last N bytes
    if (!last) return {};
    if (*last == 0 || size == 0) return {RangeVerdict::kUnsatisfiable};
    return {RangeVerdict::kSatisfiable, size - std::min(*last, size), size - 1};
  }
  const std::optional<uint64_t> first = parse_position(spec.substr(0, dash));
  if (!first) return {};
  if (dash + 1 < spec.size() && (!last || *last < *first)) return {};  // invalid: ignored
  if (*first >= size) return {RangeVerdict::kUnsatisfiable};
  return {RangeVerdict::kSatisfiable, *first, last ? std::min(*last, size - 1) : size - 1};
}

// A range field: one satisfiable or unsatisfiable byte range, or kIgnore
// for anything else (another unit, malformed, several ranges).
RangeDecision decide_range(std::string_view field, uint64_t size) {
  field = trim(field);
  const size_t equals = field.find('=');
  if (equals == std::string_view::npos || !equals_ignoring_case(field.substr(0, equals), "bytes")) {
    return {};
  }
  std::string_view set = field.substr(equals + 1);
  std::string_view only;
  size_t specs = 0;
  while (!set.empty()) {
    const size_t comma = set.find(',');
    const std::string_view element = trim(set.substr(0, comma));
    if (!element.empty()) {
      only = element;
      ++specs;
    }
    set = comma == std::string_view::npos ? std::string_view() : set.substr(comma + 1);
  }
  if (specs != 1) return {};
  return decide_range_spec(only, size);
}

// §13.1.5: a strong entity tag equal to ours, or a date equal to our
// last-modified when that is a strong validator (its second is over).
bool if_range_holds(std::string_view field, std::string_view etag, int64_t last_modified,
                    int64_t now_unix_seconds) {
  field = trim(field);
  if (field.substr(0, 3).find('"') != std::string_view::npos) return field == etag;
  const std::optional<int64_t> date = parse_http_date(field, now_unix_seconds);
  return date && *date == last_modified && last_modified < now_unix_seconds;
}

// §13.2.2 steps 3 and 4, for GET and HEAD: whether the answer is 304.
bool not_modified(const FileRequestFields& fields, std::string_view etag, int64_t last_modified,
                  int64_t now_unix_seconds) {
  if (fields.if_none_match) return if_none_match_matches(*fields.if_none_match, etag);
  if (!fields.if_modified_since) return false;
  const std::optional<int64_t> since = parse_http_date(*fields.if_modified_since, now_unix_seconds);
  return since && last_modified <= *since;
}

}  // namespace

FilePlan plan_file_response(const FileRequestFields& fields, bool is_get, const FileVersion& file,
                            int64_t now_unix_seconds) {
  FilePlan plan;
  plan.etag = make_entity_tag(file.size, file.mtime_ns);
  plan.last_modified = std::min(floor_div(file.mtime_ns, kNanosecondsPerSecond), now_unix_seconds);
  plan.length = file.size;
  if (not_modified(fields, plan.etag.view(), plan.last_modified, now_unix_seconds)) {
    plan.status = 304;
    plan.length = 0;
    plan.send_length = false;
    return plan;
  }
  if (!is_get || !fields.range) return plan;
  if (fields.if_range &&
      !if_range_holds(*fields.if_range, plan.etag.view(), plan.last_modified, now_unix_seconds)) {
    return plan;
  }
  const RangeDecision range = decide_range(*fields.range, file.size);
  if (range.verdict == RangeVerdict::kIgnore) return plan;
  plan.content_range.append("bytes ");
  if (range.verdict == RangeVerdict::kUnsatisfiable) {
    plan.status = 416;
    plan.length = 0;
    plan.content_range.append("*");
  } else {
    plan.status = 206;
    plan.offset = range.first;
    plan.length = range.last - range.first + 1;
    plan.content_range.append_decimal(range.first);
    plan.content_range.append("-");
    plan.content_range.append_decimal(range.last);
  }
  plan.content_range.append("/");
  plan.content_range.append_decimal(file.size);
  return plan;
}

}  // namespace dpquic::dataplane
