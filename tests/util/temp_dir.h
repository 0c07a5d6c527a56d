#pragma once
// A fresh directory under $TEST_TMPDIR (or /tmp), removed with everything in
// it when the object goes: for tests that serve or write files.

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "dpquic") {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string pattern =
        std::string(base != nullptr ? base : "/tmp") + "/" + std::string(prefix) + "XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The directory's own name (its last path component).
  std::string name() const { return path_.substr(path_.rfind('/') + 1); }
  // Creates or replaces the file `name` (relative to the directory).
  void write(const std::string& name, std::span<const uint8_t> bytes) const {
    std::ofstream(path_ + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  void write(const std::string& name, std::string_view text) const {
    write(name, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }

 private:
  std::string path_;
};

}  // namespace dpquic::testing
