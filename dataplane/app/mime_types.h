#pragma once
// The system's map from file extensions to media types: /etc/mime.types
// (Debian package media-types). Each line is `type ext1 ext2 ...`; `#`
// starts a comment; blank lines and lines naming no extension are skipped.
// Extensions are matched without regard to case; when several lines name
// the same extension, the last one wins (as Apache's mod_mime, Python's
// mimetypes and Go's mime read the file).
//
// Loaded once at start-up; read-only afterwards, so one instance can be
// shared as const by every shard's thread. Lookups never allocate.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::dataplane {

class MimeTypes {
 public:
  static constexpr std::string_view kSystemFile = "/etc/mime.types";
  static constexpr std::string_view kDefaultType = "application/octet-stream";

  // Reads and parses `path`. Throws std::runtime_error with one line when
  // it cannot be read or names no type at all.
  static MimeTypes load(const std::string& path = std::string(kSystemFile));
  // Parses mime.types text.
  static MimeTypes parse(std::string_view text);

  // The type of an extension (without the dot, any case); kDefaultType when
  // unknown.
  std::string_view for_extension(std::string_view extension) const;
  // The type of a file by its name (the last segment of `path`): the longest
  // dotted suffix the map knows ("x.pcf.Z" before "Z"), a leading dot
  // not counting (".profile" has no extension); kDefaultType otherwise.
  std::string_view for_path(std::string_view path) const;

  // Extensions known.
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string extension;  // lowercase
    uint32_t type;          // index into types_
  };
  // Null when unknown.
  const std::string* find(std::string_view extension) const;

  std::vector<std::string> types_;
  std::vector<Entry> entries_;  // sorted by extension, unique
};

}  // namespace dpquic::dataplane
