#include "tools/quicload/body_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dpquic::tools {

MappedFile::MappedFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw std::runtime_error(path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ != 0) {
    void* map = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int saved = errno;
      close(fd);
      throw std::runtime_error(path + ": mmap: " + std::strerror(saved));
    }
    data_ = static_cast<const uint8_t*>(map);
    mapped_ = true;
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (mapped_) munmap(const_cast<uint8_t*>(data_), size_);
}

bool MappedFile::matches(uint64_t offset, std::span<const uint8_t> bytes) const {
  if (offset > size_ || bytes.size() > size_ - offset) return false;
  return bytes.empty() || std::memcmp(data_ + offset, bytes.data(), bytes.size()) == 0;
}

}  // namespace dpquic::tools
