// MimeTypes: the mime.types format (comments, blank lines, types without
// extensions, tabs, the last line naming an extension winning), lookups in
// any case and by file name, and the real /etc/mime.types.

#include "dataplane/app/mime_types.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/util/temp_dir.h"

namespace dpquic::dataplane {
namespace {

constexpr std::string_view kSample =
    "# A comment line\n"
    "\n"
    "   \n"
    "application/x-no-extensions\n"
    "text/html\t\t\t\thtml htm\n"
    "image/PNG  PNG\n"
    "application/gzip gz # a trailing comment: ignored\n"
    "application/x-font-pcf pcf pcf.Z\n"
    "text/x-first   dup\n"
    "text/x-last\tdup\r\n"
    "not-a-type ext\n"
    "#text/x-commented commented\n"
    "video/mp4 mp4";  // no final newline

TEST(MimeTypesTest, ParsesTheFormat) {
  const MimeTypes types = MimeTypes::parse(kSample);
  EXPECT_EQ(types.for_extension("html"), "text/html");
  EXPECT_EQ(types.for_extension("htm"), "text/html");
  EXPECT_EQ(types.for_extension("png"), "image/PNG");  // the type keeps its case
  EXPECT_EQ(types.for_extension("gz"), "application/gzip");
  EXPECT_EQ(types.for_extension("a"), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_extension("ignored"), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_extension("dup"), "text/x-last");
  EXPECT_EQ(types.for_extension("ext"), MimeTypes::kDefaultType);  // "not-a-type" has no '/'
  EXPECT_EQ(types.for_extension("commented"), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_extension("mp4"), "video/mp4");
  EXPECT_EQ(types.for_extension(""), MimeTypes::kDefaultType);
  // html htm png gz pcf pcf.z dup mp4
  EXPECT_EQ(types.size(), 8u);
}

TEST(MimeTypesTest, LooksUpInAnyCase) {
  const MimeTypes types = MimeTypes::parse(kSample);
  EXPECT_EQ(types.for_extension("HTML"), "text/html");
  EXPECT_EQ(types.for_extension("HtM"), "text/html");
  EXPECT_EQ(types.for_extension("png"), "image/PNG");
  EXPECT_EQ(types.for_extension("Png"), "image/PNG");
  EXPECT_EQ(types.for_extension("PCF.z"), "application/x-font-pcf");
}

TEST(MimeTypesTest, TypesFilesByTheirName) {
  const MimeTypes types = MimeTypes::parse(kSample);
  EXPECT_EQ(types.for_path("/index.html"), "text/html");
  EXPECT_EQ(types.for_path("/A.HTM"), "text/html");
  EXPECT_EQ(types.for_path("page.html"), "text/html");
  EXPECT_EQ(types.for_path("/my.page.html"), "text/html");
  EXPECT_EQ(types.for_path("/archive.tar.gz"), "application/gzip");
  EXPECT_EQ(types.for_path("/font.pcf.Z"), "application/x-font-pcf");
  EXPECT_EQ(types.for_path("/dir.html/file"), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_path("/noext"), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_path("/trailing."), MimeTypes::kDefaultType);
  EXPECT_EQ(types.for_path("/.htm"), MimeTypes::kDefaultType);  // a hidden file, no extension
  EXPECT_EQ(types.for_path("/.hidden.htm"), "text/html");
  EXPECT_EQ(types.for_path(""), MimeTypes::kDefaultType);
}

// The last type /etc/mime.types gives `extension`, read here independently
// of MimeTypes.
std::string system_type_of(const std::string& extension) {
  std::ifstream file("/etc/mime.types");
  std::string line, found;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string type, word;
    words >> type;
    while (words >> word) {
      if (word == extension) found = type;
    }
  }
  return found;
}

TEST(MimeTypesTest, LoadsTheSystemMap) {
  const MimeTypes types = MimeTypes::load();
  EXPECT_GT(types.size(), 1000u);
  EXPECT_EQ(types.for_path("/index.html"), "text/html");
  EXPECT_EQ(types.for_path("/style.css"), "text/css");
  const std::string js = system_type_of("js");
  ASSERT_FALSE(js.empty());
  EXPECT_EQ(types.for_path("/app.js"), js);
  EXPECT_EQ(types.for_path("/movie.mp4"), "video/mp4");
  EXPECT_EQ(types.for_path("/MOVIE.MP4"), "video/mp4");
  EXPECT_EQ(types.for_path("/file.dpquic-unknown"), "application/octet-stream");
  EXPECT_EQ(types.for_path("/README"), "application/octet-stream");
}

TEST(MimeTypesTest, AnUnreadableFileIsOneLineError) {
  try {
    (void)MimeTypes::load("/nonexistent/dpquic/mime.types");
    FAIL() << "no exception";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message,
              "/nonexistent/dpquic/mime.types: cannot read (install the Debian package "
              "media-types)");
  }
  ::dpquic::testing::TempDir dir;
  dir.write("empty.types", "# nothing\n");
  EXPECT_THROW((void)MimeTypes::load(dir.path() + "/empty.types"), std::runtime_error);
}

}  // namespace
}  // namespace dpquic::dataplane
