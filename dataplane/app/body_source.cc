#include "dataplane/app/body_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "dataplane/app/synthetic_body.h"

namespace dpquic::dataplane {

// --- Request paths ------------------------------------------------------------------------------

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> decode_request_path(std::string_view target) {
  const size_t end = target.find_first_of("?#");
  if (end != std::string_view::npos) target = target.substr(0, end);
  if (target.empty() || target.front() != '/') return std::nullopt;

  std::string decoded;
  decoded.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    char c = target[i];
    if (c == '%') {
      if (i + 2 >= target.size()) return std::nullopt;
      const int high = hex_value(target[i + 1]);
      const int low = hex_value(target[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      c = static_cast<char>(high * 16 + low);
      i += 2;
    }
    if (c == '\0') return std::nullopt;
    decoded.push_back(c);
  }

  // Segments are checked after decoding, so "%2e%2e" and "..%2f" are caught
  // like "..".
  size_t begin = 1;
  while (begin <= decoded.size()) {
    size_t slash = decoded.find('/', begin);
    if (slash == std::string::npos) slash = decoded.size();
    const std::string_view segment(decoded.data() + begin, slash - begin);
    if (segment == "." || segment == "..") return std::nullopt;
    begin = slash + 1;
  }
  return decoded;
}

std::optional<uint64_t> parse_synthetic_length(std::string_view path, uint64_t max) {
  if (path.size() < 2 || path.front() != '/') return std::nullopt;
  const std::string_view digits = path.substr(1);
  if (digits.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (value > max) return std::nullopt;
  return value;
}

// --- Files --------------------------------------------------------------------------------------

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void FileDescriptor::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

std::optional<std::string> real_path(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string result(resolved);
  std::free(resolved);
  return result;
}

// Errors that say nothing about the file, only that the process could not
// open one just now.
bool out_of_resources(int error) { return error == EMFILE || error == ENFILE || error == ENOMEM; }

}  // namespace

DocumentRoot::DocumentRoot(const std::string& root, std::shared_ptr<const MimeTypes> types)
    : types_(std::move(types)) {
  std::optional<std::string> resolved = real_path(root);
  struct stat info {};
  if (!resolved || ::stat(resolved->c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw std::runtime_error("document root '" + root + "' is not an accessible directory");
  }
  root_ = std::move(*resolved);
}

bool DocumentRoot::contains(std::string_view resolved) const {
  if (root_ == "/") return !resolved.empty() && resolved.front() == '/';
  if (resolved.size() < root_.size() || resolved.substr(0, root_.size()) != root_) return false;
  return resolved.size() == root_.size() || resolved[root_.size()] == '/';
}

std::optional<OpenedFile> DocumentRoot::open(std::string_view decoded_path,
                                             Refusal* refusal) const {
  Refusal why = Refusal::kNotFound;
  std::optional<OpenedFile> file;
  if (!decoded_path.empty() && decoded_path.front() == '/') {
    std::string candidate = root_ == "/" ? std::string() : root_;
    candidate.append(decoded_path);
    file = open_resolved(candidate, true, why);
  }
  if (refusal != nullptr) *refusal = why;
  return file;
}

std::optional<OpenedFile> DocumentRoot::open_resolved(const std::string& candidate,
                                                      bool allow_directory,
                                                      Refusal& refusal) const {
  // realpath() follows every symlink; the result must still be inside.
  const std::optional<std::string> resolved = real_path(candidate);
  if (!resolved) {
    if (out_of_resources(errno)) refusal = Refusal::kOutOfResources;
    return std::nullopt;
  }
  if (!contains(*resolved)) return std::nullopt;
  // O_NOFOLLOW: the last component must not have become a symlink since;
  // O_NONBLOCK: a FIFO must not block the shard (it is refused below).
  FileDescriptor fd(::open(resolved->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (out_of_resources(errno)) refusal = Refusal::kOutOfResources;
    return std::nullopt;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return std::nullopt;
  if (S_ISDIR(info.st_mode)) {
    if (!allow_directory) return std::nullopt;
    return open_resolved(*resolved + "/index.html", false, refusal);
  }
  if (!S_ISREG(info.st_mode)) return std::nullopt;
  // What was opened, whatever happened to the directories in between
  // (a swapped parent directory): the kernel's name for the descriptor.
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd.get());
  char opened[PATH_MAX];
  const ssize_t length = ::readlink(link, opened, sizeof(opened) - 1);
  if (length > 0 && !contains(std::string_view(opened, static_cast<size_t>(length)))) {
    return std::nullopt;
  }
  OpenedFile file;
  file.fd = std::move(fd);
  file.size = static_cast<uint64_t>(info.st_size);
  file.mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  file.content_type = types_ ? types_->for_path(*resolved) : MimeTypes::kDefaultType;
  return file;
}

// --- Buffers ------------------------------------------------------------------------------------

namespace {

void release_nothing(void*, const uint8_t*, size_t) {}

}  // namespace

BufferPool::BufferPool(size_t buffer_size, size_t buffer_count)
    : buffer_size_(buffer_size),
      buffer_count_(buffer_count),
      storage_(new uint8_t[buffer_size * buffer_count]),
      flights_(buffer_count, nullptr),
      chunks_(buffer_size, 0, buffer_count + 16) {
  if (buffer_size == 0 || buffer_count == 0 || buffer_count > UINT32_MAX) {
    throw std::runtime_error("buffer pool needs a non-zero buffer size and count");
  }
  free_.reserve(buffer_count);
  for (size_t i = buffer_count; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
}

BufferPool::~BufferPool() = default;

bool BufferPool::acquire(Lease& lease, BufferFlight* flight) {
  if (free_.empty()) return false;
  const uint32_t index = free_.back();
  uint8_t* data = storage_.get() + static_cast<size_t>(index) * buffer_size_;
  transmit::Chunk chunk = chunks_.adopt(data, buffer_size_, &BufferPool::on_release, this);
  if (!chunk.valid()) return false;
  free_.pop_back();
  flights_[index] = flight;
  if (flight != nullptr) {
    ++flight->in_flight;
    ++flight->references;
    // The group lives while this flight does (it holds a reference).
    if (flight->group != nullptr) ++flight->group->in_flight;
  }
  lease.data = data;
  lease.capacity = buffer_size_;
  lease.chunk = std::move(chunk);
  return true;
}

void BufferPool::release_flight(BufferFlight* flight) {
  if (flight == nullptr || --flight->references != 0) return;
  BufferFlight* group = flight->group;
  delete flight;
  release_flight(group);
}

transmit::Chunk BufferPool::adopt_static(std::span<const uint8_t> bytes) {
  return chunks_.adopt(bytes.data(), bytes.size(), release_nothing, nullptr);
}

void BufferPool::on_release(void* context, const uint8_t* data, size_t) {
  auto* pool = static_cast<BufferPool*>(context);
  const auto index =
      static_cast<uint32_t>(static_cast<size_t>(data - pool->storage_.get()) / pool->buffer_size_);
  BufferFlight* flight = pool->flights_[index];
  pool->flights_[index] = nullptr;
  pool->free_.push_back(index);
  if (flight != nullptr) {
    --flight->in_flight;
    if (BufferFlight* group = flight->group) {
      --group->in_flight;
      if (group->on_return != nullptr) group->on_return(group->context);
    }
    if (flight->on_return != nullptr) flight->on_return(flight->context);
    release_flight(flight);
  }
}

// --- Response bodies ----------------------------------------------------------------------------

ResponseBody ResponseBody::synthetic(uint64_t length, const transmit::Chunk& synthetic_block) {
  ResponseBody body;
  body.length_ = length;
  body.synthetic_ = synthetic_block;
  return body;
}

ResponseBody ResponseBody::file(OpenedFile file, uint64_t offset, uint64_t length,
                                uint32_t max_in_flight, void (*on_return)(void*), void* context) {
  ResponseBody body;
  body.file_start_ = std::min(offset, file.size);
  body.length_ = std::min(length, file.size - body.file_start_);
  body.file_ = std::move(file.fd);
  body.max_in_flight_ = std::max<uint32_t>(1, max_in_flight);
  body.flight_ = new BufferFlight;
  body.flight_->on_return = on_return;
  body.flight_->context = context;
  return body;
}

void ResponseBody::join_group(BufferFlight* group, uint32_t group_max_in_flight) {
  if (flight_ == nullptr || flight_->group != nullptr || group == nullptr) return;
  flight_->group = group;
  ++group->references;
  group_max_in_flight_ = std::max<uint32_t>(1, group_max_in_flight);
}

ResponseBody::ResponseBody(ResponseBody&& other) noexcept
    : length_(other.length_),
      offset_(other.offset_),
      file_start_(other.file_start_),
      synthetic_(std::move(other.synthetic_)),
      file_(std::move(other.file_)),
      flight_(other.flight_),
      max_in_flight_(other.max_in_flight_),
      group_max_in_flight_(other.group_max_in_flight_) {
  other.flight_ = nullptr;
  other.length_ = other.offset_ = 0;
}

ResponseBody& ResponseBody::operator=(ResponseBody&& other) noexcept {
  if (this != &other) {
    release();
    length_ = other.length_;
    offset_ = other.offset_;
    file_start_ = other.file_start_;
    synthetic_ = std::move(other.synthetic_);
    file_ = std::move(other.file_);
    flight_ = other.flight_;
    max_in_flight_ = other.max_in_flight_;
    group_max_in_flight_ = other.group_max_in_flight_;
    other.flight_ = nullptr;
    other.length_ = other.offset_ = 0;
  }
  return *this;
}

ResponseBody::~ResponseBody() { release(); }

void ResponseBody::release() {
  if (flight_ != nullptr) {
    flight_->on_return = nullptr;
    flight_->context = nullptr;
    BufferPool::release_flight(flight_);
    flight_ = nullptr;
  }
  file_.reset();
  synthetic_.reset();
}

BodyFill ResponseBody::fill(BufferPool& pool, size_t reserve, std::span<transmit::Chunk> out,
                            size_t& count, uint64_t max_bytes) {
  count = 0;
  if (offset_ >= length_) return BodyFill::kEnd;
  if (!file_.valid()) {
    // Views of the static block: any offset, up to a block minus a period.
    constexpr uint64_t kMaxView = kSyntheticBlockSize - kSyntheticPeriod;
    while (count < out.size() && offset_ < length_) {
      const uint64_t n = std::min(length_ - offset_, kMaxView);
      out[count++] = synthetic_.slice(offset_ % kSyntheticPeriod, n);
      offset_ += n;
    }
    return BodyFill::kOk;
  }

  constexpr size_t kMaxReads = 8;
  const size_t buffer_size = pool.buffer_size();
  if (flight_->in_flight >= max_in_flight_) return BodyFill::kCapped;
  const BufferFlight* group = flight_->group;
  if (group != nullptr && group->in_flight >= group_max_in_flight_) return BodyFill::kGroupCapped;
  const uint64_t needed = (length_ - offset_ + buffer_size - 1) / buffer_size;
  const uint64_t allowed = max_bytes / buffer_size + (max_bytes % buffer_size != 0 ? 1 : 0);
  size_t want = std::min<uint64_t>({out.size(), kMaxReads, needed, allowed,
                                    static_cast<uint64_t>(max_in_flight_ - flight_->in_flight)});
  if (group != nullptr) want = std::min<size_t>(want, group_max_in_flight_ - group->in_flight);
  const size_t available = pool.free_buffers() > reserve ? pool.free_buffers() - reserve : 0;
  want = std::min(want, available);
  if (want == 0) return BodyFill::kNoBuffers;

  std::array<BufferPool::Lease, kMaxReads> leases;
  std::array<iovec, kMaxReads> vectors{};
  uint64_t asked = 0;
  size_t taken = 0;
  for (; taken < want; ++taken) {
    if (!pool.acquire(leases[taken], flight_)) break;
    const uint64_t n = std::min<uint64_t>(buffer_size, length_ - offset_ - asked);
    vectors[taken].iov_base = leases[taken].data;
    vectors[taken].iov_len = n;
    asked += n;
  }
  if (taken == 0) return BodyFill::kNoBuffers;

  ssize_t read;
  do {
    read = ::preadv(file_.get(), vectors.data(), static_cast<int>(taken),
                    static_cast<off_t>(file_start_ + offset_));
  } while (read < 0 && errno == EINTR);
  // A file that shrank under us cannot honour the content-length sent.
  if (read <= 0) return BodyFill::kIoError;

  uint64_t left = static_cast<uint64_t>(read);
  for (size_t i = 0; i < taken && left != 0; ++i) {
    const uint64_t n = std::min<uint64_t>(left, vectors[i].iov_len);
    out[count++] = leases[i].chunk.slice(0, n);
    left -= n;
  }
  offset_ += static_cast<uint64_t>(read);
  return BodyFill::kOk;
}

}  // namespace dpquic::dataplane
