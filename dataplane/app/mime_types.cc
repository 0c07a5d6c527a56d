#include "dataplane/app/mime_types.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace dpquic::dataplane {

namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Orders an extension against a stored (lowercase) one, ignoring the case of
// the first.
int compare_lowered(std::string_view extension, std::string_view stored) {
  const size_t common = std::min(extension.size(), stored.size());
  for (size_t i = 0; i < common; ++i) {
    // As unsigned bytes, the order std::string sorts by.
    const auto a = static_cast<unsigned char>(ascii_lower(extension[i]));
    const auto b = static_cast<unsigned char>(stored[i]);
    if (a != b) return a < b ? -1 : 1;
  }
  if (extension.size() == stored.size()) return 0;
  return extension.size() < stored.size() ? -1 : 1;
}

// The whitespace-separated words of one line, up to a '#'.
std::vector<std::string_view> words_of(std::string_view line) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const size_t begin = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > begin) words.push_back(line.substr(begin, i - begin));
  }
  return words;
}

}  // namespace

MimeTypes MimeTypes::load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  if (file) text << file.rdbuf();
  if (!file || file.bad()) {
    throw std::runtime_error(path + ": cannot read (install the Debian package media-types)");
  }
  MimeTypes types = parse(text.str());
  if (types.size() == 0) throw std::runtime_error(path + ": names no media type for any extension");
  return types;
}

MimeTypes MimeTypes::parse(std::string_view text) {
  MimeTypes types;
  // Every (extension, type) in file order; the last line naming an
  // extension wins.
  std::vector<Entry> all;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::vector<std::string_view> words = words_of(text.substr(begin, end - begin));
    begin = end + 1;
    if (words.size() < 2 || words[0].find('/') == std::string_view::npos) continue;
    const auto type = static_cast<uint32_t>(types.types_.size());
    types.types_.emplace_back(words[0]);
    for (size_t i = 1; i < words.size(); ++i) {
      Entry entry{std::string(words[i]), type};
      std::transform(entry.extension.begin(), entry.extension.end(), entry.extension.begin(),
                     ascii_lower);
      all.push_back(std::move(entry));
    }
  }
  // Stable: equal extensions stay in file order, and the last of each run
  // is kept.
  std::stable_sort(all.begin(), all.end(),
                   [](const Entry& a, const Entry& b) { return a.extension < b.extension; });
  for (size_t i = 0; i < all.size(); ++i) {
    if (i + 1 < all.size() && all[i + 1].extension == all[i].extension) continue;
    types.entries_.push_back(std::move(all[i]));
  }
  return types;
}

const std::string* MimeTypes::find(std::string_view extension) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), extension,
                             [](const Entry& entry, std::string_view key) {
                               return compare_lowered(key, entry.extension) > 0;
                             });
  if (it == entries_.end() || compare_lowered(extension, it->extension) != 0) return nullptr;
  return &types_[it->type];
}

std::string_view MimeTypes::for_extension(std::string_view extension) const {
  if (extension.empty()) return kDefaultType;
  const std::string* type = find(extension);
  return type != nullptr ? std::string_view(*type) : kDefaultType;
}

std::string_view MimeTypes::for_path(std::string_view path) const {
  const size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!name.empty() && name.front() == '.') name.remove_prefix(1);
  for (size_t dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    const std::string_view extension = name.substr(dot + 1);
    if (extension.empty()) continue;
    if (const std::string* type = find(extension)) return *type;
  }
  return kDefaultType;
}

}  // namespace dpquic::dataplane
