#pragma once
// Checking response bodies as they stream in, without storing them, against
// a file mapped read-only (--verify=FILE), shared by every thread. (The
// synthetic bodies of dpquic's server are checked with
// dataplane::matches_synthetic.)

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace dpquic::tools {

// A file mapped read-only for the life of the object.
class MappedFile {
 public:
  // Throws std::runtime_error naming the file when it cannot be read.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }
  // Whether `bytes` equal the file's bytes at [offset, offset + size)
  // (false when that runs past the end of the file).
  bool matches(uint64_t offset, std::span<const uint8_t> bytes) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace dpquic::tools
