// The pure HTTP file logic (RFC 9110): entity tags, the three HTTP-date
// formats, if-none-match lists, and the plan for conditional and range
// requests against a file, case by case with exact statuses and
// content-range values.

#include "dataplane/app/http_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace dpquic::dataplane {
namespace {

constexpr int64_t kRfcExample = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
constexpr int64_t kJune2025 = 1748736000;   // 2025-06-01 00:00:00

// --- Dates --------------------------------------------------------------------------------------

TEST(HttpDateTest, ParsesTheThreeFormatsOfRfc9110) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", kJune2025), kRfcExample);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", kJune2025), kRfcExample);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994", kJune2025), kRfcExample);
  EXPECT_EQ(parse_http_date("Thu Nov 16 08:49:37 1994", kJune2025), kRfcExample + 10 * 86400);
  EXPECT_EQ(parse_http_date(" Sun, 06 Nov 1994 08:49:37 GMT ", kJune2025), kRfcExample);
  EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT", kJune2025), 0);
  EXPECT_EQ(parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT", kJune2025), 951825600);
}

TEST(HttpDateTest, TwoDigitYearsAreNeverMoreThanFiftyYearsAhead) {
  // From mid-2025: 70 is 2070 (45 years ahead), 76 is 1976 (2076 would be 51).
  EXPECT_EQ(parse_http_date("Thursday, 01-Jan-70 00:00:00 GMT", kJune2025), 3155760000);
  EXPECT_EQ(parse_http_date("Thursday, 01-Jan-76 00:00:00 GMT", kJune2025), 189302400);
  EXPECT_EQ(parse_http_date("Sunday, 01-Jun-25 00:00:00 GMT", kJune2025), kJune2025);
}

TEST(HttpDateTest, RefusesWhatIsNotAnHttpDate) {
  for (const char* text : {
           "",
           "Sun, 06 Nov 1994 08:49:37 UTC",
           "Sun, 06 Nov 1994 08:49:37",
           "Sun, 06 Nov 1994 08:49:37 GMT trailing",
           "Sun, 6 Nov 1994 08:49:37 GMT",
           "sun, 06 Nov 1994 08:49:37 GMT",  // names are case-sensitive
           "Sun, 06 nov 1994 08:49:37 GMT",
           "Sun, 31 Nov 1994 08:49:37 GMT",  // November has 30 days
           "Mon, 29 Feb 1900 08:49:37 GMT",  // not a leap year
           "Sun, 06 Nov 1994 24:00:00 GMT",
           "Sun, 06 Nov 1994 08:60:00 GMT",
           "Sun, 00 Nov 1994 08:49:37 GMT",
           "Sun, 06 Nov 94 08:49:37 GMT",
           "Sun, 06-Nov-94 08:49:37 GMT",  // the short day name in the RFC 850 form
           "Sunday, 06-Nov-1994 08:49:37 GMT",
           "Sun Nov 6 08:49:37 1994",  // asctime pads the day with a space
           "Sun Nov 06 08:49:37 94",
           "1994-11-06T08:49:37Z",
           "784111777",
       }) {
    EXPECT_EQ(parse_http_date(text, kJune2025), std::nullopt) << text;
  }
}

TEST(HttpDateTest, FormatsImfFixdate) {
  EXPECT_EQ(format_http_date(kRfcExample).view(), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(format_http_date(0).view(), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(format_http_date(1600000000).view(), "Sun, 13 Sep 2020 12:26:40 GMT");
  EXPECT_EQ(format_http_date(951825600).view(), "Tue, 29 Feb 2000 12:00:00 GMT");
  EXPECT_EQ(format_http_date(253402300799).view(), "Fri, 31 Dec 9999 23:59:59 GMT");
  // Outside four-digit years: clamped.
  EXPECT_EQ(format_http_date(-1).view(), "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(HttpDateTest, FormattedDatesParseBack) {
  for (int64_t t = 0; t < 253402300799; t += 86400 * 37 + 3671) {
    const HttpDate text = format_http_date(t);
    ASSERT_EQ(parse_http_date(text.view(), kJune2025), t) << text.view();
  }
}

// --- Entity tags --------------------------------------------------------------------------------

std::string expected_tag(uint64_t size, int64_t mtime_ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "\"%llx-%llx\"", static_cast<unsigned long long>(mtime_ns),
                static_cast<unsigned long long>(size));
  return text;
}

TEST(EntityTagTest, IsMtimeNanosecondsAndSizeInHex) {
  EXPECT_EQ(make_entity_tag(1000, 784111777123456789).view(),
            expected_tag(1000, 784111777123456789));
  EXPECT_EQ(make_entity_tag(0, 0).view(), "\"0-0\"");
  EXPECT_EQ(make_entity_tag(0x1f4, 0x10).view(), "\"10-1f4\"");
  EXPECT_EQ(make_entity_tag(UINT64_MAX, INT64_MAX).view(), "\"7fffffffffffffff-ffffffffffffffff\"");
}

TEST(EntityTagTest, SameFileSameTagAnyChangeAnotherTag) {
  // Only size and mtime go in: two hosts with the same file agree.
  EXPECT_EQ(make_entity_tag(1000, 784111777123456789).view(),
            make_entity_tag(1000, 784111777123456789).view());
  EXPECT_NE(make_entity_tag(1000, 784111777123456789).view(),
            make_entity_tag(1000, 784111777123456790).view());  // one nanosecond later
  EXPECT_NE(make_entity_tag(1000, 784111777123456789).view(),
            make_entity_tag(1001, 784111777123456789).view());
}

TEST(IfNoneMatchTest, WeakComparisonOverAList) {
  const std::string tag = "\"abc-10\"";
  EXPECT_TRUE(if_none_match_matches("\"abc-10\"", tag));
  EXPECT_TRUE(if_none_match_matches("W/\"abc-10\"", tag));
  EXPECT_TRUE(if_none_match_matches("\"x\", \"abc-10\"", tag));
  EXPECT_TRUE(if_none_match_matches("\"x\",W/\"abc-10\" ,", tag));
  EXPECT_TRUE(if_none_match_matches(" , \"abc-10\"", tag));
  EXPECT_TRUE(if_none_match_matches("*", tag));
  EXPECT_TRUE(if_none_match_matches(" * ", tag));
  EXPECT_TRUE(if_none_match_matches("\"a,b\", \"abc-10\"", tag));  // a comma inside a tag
  EXPECT_FALSE(if_none_match_matches("\"abc-1\"", tag));
  EXPECT_FALSE(if_none_match_matches("\"x\", \"y\"", tag));
  EXPECT_FALSE(if_none_match_matches("abc-10", tag));        // not quoted
  EXPECT_FALSE(if_none_match_matches("w/\"abc-10\"", tag));  // W/ is case-sensitive
  EXPECT_FALSE(if_none_match_matches("\"abc-10", tag));
  EXPECT_FALSE(if_none_match_matches("\"abc-10\" junk", tag));
  EXPECT_FALSE(if_none_match_matches("\"a b\"", "\"a b\""));  // space is not an etagc
  EXPECT_FALSE(if_none_match_matches("", tag));
  EXPECT_FALSE(if_none_match_matches(",", tag));
}

// --- Request fields -----------------------------------------------------------------------------

TEST(ConditionalFieldsTest, JoinsIfNoneMatchAndSpoilsOtherRepeats) {
  ConditionalFields fields;
  EXPECT_FALSE(fields.view().if_none_match);
  fields.add(FileField::kIfNoneMatch, "\"a\"", 100);
  fields.add(FileField::kIfNoneMatch, "\"b\"", 100);
  fields.add(FileField::kRange, "bytes=0-1", 100);
  fields.add(FileField::kRange, "bytes=2-3", 100);
  fields.add(FileField::kIfRange, std::string(101, 'x'), 100);
  const FileRequestFields view = fields.view();
  EXPECT_EQ(view.if_none_match, "\"a\", \"b\"");
  EXPECT_EQ(view.range, "");  // present, malformed
  EXPECT_EQ(view.if_range, "");
  EXPECT_FALSE(view.if_modified_since);
  fields.clear();
  EXPECT_FALSE(fields.view().if_none_match);
  EXPECT_FALSE(fields.view().range);
}

// --- Plans --------------------------------------------------------------------------------------

constexpr int64_t kMtimeNs = kRfcExample * 1'000'000'000 + 123456789;
constexpr int64_t kNow = kRfcExample + 3600;
const FileVersion kFile{1000, kMtimeNs};

struct Case {
  const char* name;
  FileRequestFields fields;
  bool is_get;
  int status;
  uint64_t offset;
  uint64_t length;
  const char* content_range;
};

std::string tag() { return expected_tag(1000, kMtimeNs); }

void check(const Case& c, const FileVersion& file = kFile, int64_t now = kNow) {
  const FilePlan plan = plan_file_response(c.fields, c.is_get, file, now);
  EXPECT_EQ(plan.status, c.status) << c.name;
  EXPECT_EQ(plan.offset, c.offset) << c.name;
  EXPECT_EQ(plan.length, c.length) << c.name;
  EXPECT_EQ(plan.content_range.view(), c.content_range) << c.name;
  EXPECT_EQ(plan.send_length, c.status != 304) << c.name;
  EXPECT_EQ(plan.etag.view(), expected_tag(file.size, file.mtime_ns)) << c.name;
}

TEST(FilePlanTest, ValidatorsOfAPlainRequest) {
  const FilePlan plan = plan_file_response({}, true, kFile, kNow);
  EXPECT_EQ(plan.status, 200);
  EXPECT_EQ(plan.length, 1000u);
  EXPECT_TRUE(plan.send_length);
  EXPECT_EQ(plan.etag.view(), tag());
  EXPECT_EQ(plan.last_modified, kRfcExample);
  EXPECT_TRUE(plan.content_range.empty());
  // A modification time ahead of the clock is reported as now (§8.8.2.1).
  const FilePlan future =
      plan_file_response({}, true, FileVersion{10, (kNow + 100) * 1'000'000'000}, kNow);
  EXPECT_EQ(future.last_modified, kNow);
}

TEST(FilePlanTest, ConditionalRequests) {
  const std::string t = tag();
  const std::string weak = "W/" + t;
  const std::string listed = "\"old\", " + t;
  const std::string other = "\"old\"";
  const std::string lm = "Sun, 06 Nov 1994 08:49:37 GMT";
  const std::string later = "Sun, 06 Nov 1994 08:49:38 GMT";
  const std::string earlier = "Sun, 06 Nov 1994 08:49:36 GMT";
  const std::vector<Case> cases = {
      {"none", {}, true, 200, 0, 1000, ""},
      {"inm tag", {t}, true, 304, 0, 0, ""},
      {"inm tag, HEAD", {t}, false, 304, 0, 0, ""},
      {"inm weak", {weak}, true, 304, 0, 0, ""},
      {"inm list", {listed}, true, 304, 0, 0, ""},
      {"inm star", {"*"}, true, 304, 0, 0, ""},
      {"inm other", {other}, true, 200, 0, 1000, ""},
      {"inm malformed", {"abc"}, true, 200, 0, 1000, ""},
      {"inm spoilt (empty)", {""}, true, 200, 0, 1000, ""},
      {"ims equal", {std::nullopt, lm}, true, 304, 0, 0, ""},
      {"ims equal, HEAD", {std::nullopt, lm}, false, 304, 0, 0, ""},
      {"ims later", {std::nullopt, later}, true, 304, 0, 0, ""},
      {"ims earlier", {std::nullopt, earlier}, true, 200, 0, 1000, ""},
      {"ims rfc850", {std::nullopt, "Sunday, 06-Nov-94 08:49:37 GMT"}, true, 304, 0, 0, ""},
      {"ims asctime", {std::nullopt, "Sun Nov  6 08:49:37 1994"}, true, 304, 0, 0, ""},
      {"ims invalid", {std::nullopt, "yesterday"}, true, 200, 0, 1000, ""},
      // If-None-Match present: If-Modified-Since is not looked at.
      {"inm other, ims later", {other, later}, true, 200, 0, 1000, ""},
      {"inm tag, ims earlier", {t, earlier}, true, 304, 0, 0, ""},
      // 304 comes before any range.
      {"inm tag with range", {t, std::nullopt, "bytes=0-9"}, true, 304, 0, 0, ""},
  };
  for (const Case& c : cases) check(c);
}

TEST(FilePlanTest, SingleRanges) {
  const std::vector<Case> cases = {
      {"first 100",
       {std::nullopt, std::nullopt, "bytes=0-99"},
       true,
       206,
       0,
       100,
       "bytes 0-99/1000"},
      {"middle",
       {std::nullopt, std::nullopt, "bytes=100-199"},
       true,
       206,
       100,
       100,
       "bytes 100-199/1000"},
      {"one byte",
       {std::nullopt, std::nullopt, "bytes=999-999"},
       true,
       206,
       999,
       1,
       "bytes 999-999/1000"},
      {"open end",
       {std::nullopt, std::nullopt, "bytes=500-"},
       true,
       206,
       500,
       500,
       "bytes 500-999/1000"},
      {"last past the end",
       {std::nullopt, std::nullopt, "bytes=990-5000"},
       true,
       206,
       990,
       10,
       "bytes 990-999/1000"},
      {"huge last",
       {std::nullopt, std::nullopt, "bytes=0-99999999999999999999999"},
       true,
       206,
       0,
       1000,
       "bytes 0-999/1000"},
      {"suffix",
       {std::nullopt, std::nullopt, "bytes=-100"},
       true,
       206,
       900,
       100,
       "bytes 900-999/1000"},
      {"suffix longer than the file",
       {std::nullopt, std::nullopt, "bytes=-5000"},
       true,
       206,
       0,
       1000,
       "bytes 0-999/1000"},
      {"unit in any case",
       {std::nullopt, std::nullopt, "Bytes=0-0"},
       true,
       206,
       0,
       1,
       "bytes 0-0/1000"},
      {"list with empty elements",
       {std::nullopt, std::nullopt, "bytes=, 5-9 ,"},
       true,
       206,
       5,
       5,
       "bytes 5-9/1000"},
      {"first at the end",
       {std::nullopt, std::nullopt, "bytes=1000-"},
       true,
       416,
       0,
       0,
       "bytes */1000"},
      {"beyond the end",
       {std::nullopt, std::nullopt, "bytes=1000-2000"},
       true,
       416,
       0,
       0,
       "bytes */1000"},
      {"huge first",
       {std::nullopt, std::nullopt, "bytes=99999999999999999999999-"},
       true,
       416,
       0,
       0,
       "bytes */1000"},
      {"empty suffix", {std::nullopt, std::nullopt, "bytes=-0"}, true, 416, 0, 0, "bytes */1000"},
      // Served whole (200): several ranges, malformed, another unit, HEAD.
      {"two ranges", {std::nullopt, std::nullopt, "bytes=0-99,200-299"}, true, 200, 0, 1000, ""},
      {"last before first", {std::nullopt, std::nullopt, "bytes=100-50"}, true, 200, 0, 1000, ""},
      {"no dash", {std::nullopt, std::nullopt, "bytes=100"}, true, 200, 0, 1000, ""},
      {"letters", {std::nullopt, std::nullopt, "bytes=a-b"}, true, 200, 0, 1000, ""},
      {"signs", {std::nullopt, std::nullopt, "bytes=+1-2"}, true, 200, 0, 1000, ""},
      {"inner spaces", {std::nullopt, std::nullopt, "bytes=1 - 2"}, true, 200, 0, 1000, ""},
      {"no set", {std::nullopt, std::nullopt, "bytes="}, true, 200, 0, 1000, ""},
      {"bare dash", {std::nullopt, std::nullopt, "bytes=-"}, true, 200, 0, 1000, ""},
      {"other unit", {std::nullopt, std::nullopt, "items=0-5"}, true, 200, 0, 1000, ""},
      {"no equals", {std::nullopt, std::nullopt, "bytes 0-5"}, true, 200, 0, 1000, ""},
      {"spoilt (empty)", {std::nullopt, std::nullopt, ""}, true, 200, 0, 1000, ""},
      {"HEAD", {std::nullopt, std::nullopt, "bytes=0-99"}, false, 200, 0, 1000, ""},
  };
  for (const Case& c : cases) check(c);
}

TEST(FilePlanTest, IfRange) {
  const std::string t = tag();
  const std::string weak = "W/" + t;
  const std::string lm = "Sun, 06 Nov 1994 08:49:37 GMT";
  const std::optional<std::string_view> range = "bytes=10-19";
  const std::vector<Case> cases = {
      {"etag matches",
       {std::nullopt, std::nullopt, range, t},
       true,
       206,
       10,
       10,
       "bytes 10-19/1000"},
      {"date matches",
       {std::nullopt, std::nullopt, range, lm},
       true,
       206,
       10,
       10,
       "bytes 10-19/1000"},
      {"other etag", {std::nullopt, std::nullopt, range, "\"old\""}, true, 200, 0, 1000, ""},
      {"weak etag never matches",
       {std::nullopt, std::nullopt, range, weak},
       true,
       200,
       0,
       1000,
       ""},
      {"other date",
       {std::nullopt, std::nullopt, range, "Sun, 06 Nov 1994 08:49:38 GMT"},
       true,
       200,
       0,
       1000,
       ""},
      {"garbage", {std::nullopt, std::nullopt, range, "whenever"}, true, 200, 0, 1000, ""},
      {"without range: no effect",
       {std::nullopt, std::nullopt, std::nullopt, "\"old\""},
       true,
       200,
       0,
       1000,
       ""},
      {"unsatisfiable but not matching",
       {std::nullopt, std::nullopt, "bytes=5000-", "\"old\""},
       true,
       200,
       0,
       1000,
       ""},
  };
  for (const Case& c : cases) check(c);
  // A date within the current second is not a strong validator (§8.8.2.2).
  check({"date of this second", {std::nullopt, std::nullopt, range, lm}, true, 200, 0, 1000, ""},
        kFile, kRfcExample);
}

TEST(FilePlanTest, EmptyFile) {
  const FileVersion empty{0, kMtimeNs};
  check({"plain", {}, true, 200, 0, 0, ""}, empty);
  check({"from 0", {std::nullopt, std::nullopt, "bytes=0-"}, true, 416, 0, 0, "bytes */0"}, empty);
  check({"suffix", {std::nullopt, std::nullopt, "bytes=-5"}, true, 416, 0, 0, "bytes */0"}, empty);
}

}  // namespace
}  // namespace dpquic::dataplane
