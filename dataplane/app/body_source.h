#pragma once
// Where response bodies come from, and how they are streamed without copies:
// - request paths: percent-decoding and the safety checks that keep a
//   request inside the document root (testable on their own);
// - DocumentRoot: opens regular files under a root, refusing anything that
//   resolves outside it (`..`, symlinks, races), with their size, mtime and
//   media type (dataplane/app/mime_types.h);
// - `/<N>` synthetic bodies (dataplane/app/synthetic_body.h);
// - BufferPool: fixed, writable buffers handed to the send path as chunks,
//   so file data is read straight into the memory QUIC sends from;
// - ResponseBody: produces a body's next chunks, synthetic (views of static
//   memory) or file (preadv of a byte range into pooled buffers), within a
//   per-body cap of buffers in flight, a cap for its group (the bodies of
//   one connection) and the read limit its caller gives (the peer's credit).
//
// Everything here belongs to one shard (no locking).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/app/mime_types.h"
#include "quic/transmit/chunk.h"

namespace dpquic::dataplane {

// --- Request paths ------------------------------------------------------------------------------

// The decoded path of a request target (":path"): the part before '?' or
// '#', percent-decoded once. nullopt for anything that must not reach the
// file system: not starting with '/', a malformed escape, a decoded NUL, or
// a "." / ".." segment (also when spelled with escapes such as %2e%2e or
// ..%2f). Empty segments ("//") are allowed and mean nothing.
std::optional<std::string> decode_request_path(std::string_view target);

// N for a decoded path "/<N>": decimal digits only (no sign, no spaces),
// N <= max. nullopt otherwise.
std::optional<uint64_t> parse_synthetic_length(std::string_view path, uint64_t max);

// --- Files --------------------------------------------------------------------------------------

// An owned file descriptor.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }

  void reset();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct OpenedFile {
  FileDescriptor fd;
  uint64_t size = 0;
  int64_t mtime_ns = 0;           // modification time, nanoseconds since the epoch
  std::string_view content_type;  // from the root's MimeTypes (which it outlives)
};

class DocumentRoot {
 public:
  // Throws std::runtime_error if `root` is not an accessible directory.
  // Files get their content type from `types` by the resolved name (null:
  // every file is MimeTypes::kDefaultType).
  explicit DocumentRoot(const std::string& root, std::shared_ptr<const MimeTypes> types = nullptr);

  // Why open() gave nothing: no such file to serve, or none could be opened
  // for want of descriptors or memory (a 503 rather than a 404: the file may
  // well be there).
  enum class Refusal : uint8_t { kNotFound, kOutOfResources };

  // Opens the regular file a decoded request path names, if it resolves
  // (symlinks followed) to a file inside the root. A directory maps to its
  // index.html. nullopt for everything else (missing, outside, not regular,
  // unreadable), with the reason in *refusal when given.
  std::optional<OpenedFile> open(std::string_view decoded_path, Refusal* refusal = nullptr) const;

  // The root, fully resolved (no symlinks, no trailing '/').
  const std::string& resolved() const { return root_; }

 private:
  // Whether `resolved` (absolute, symlink-free) is the root or inside it.
  bool contains(std::string_view resolved) const;
  std::optional<OpenedFile> open_resolved(const std::string& candidate, bool allow_directory,
                                          Refusal& refusal) const;

  std::string root_;
  std::shared_ptr<const MimeTypes> types_;
};

// --- Buffers ------------------------------------------------------------------------------------

// Counts buffers in flight (handed out and not yet released by the send
// path): one body's, and, through `group`, all of one connection's. Shared
// by its owner and its buffers, and freed by whichever lets go last, so a
// buffer released after its body (or connection) is gone is still
// accounted for.
struct BufferFlight {
  uint32_t in_flight = 0;
  // The owner's own, plus one per buffer in flight, plus one per member
  // flight naming this one as its group.
  uint32_t references = 1;
  // Called when a buffer comes back while the owner is alive (null after).
  void (*on_return)(void* context) = nullptr;
  void* context = nullptr;
  // A flight this one's buffers also count in (it holds a reference on it).
  BufferFlight* group = nullptr;
};

// Fixed-size writable buffers, each lent to the send path as one chunk
// (ChunkPool::adopt; slices share it) and returned once the last slice is
// released. Allocated at construction only.
class BufferPool {
 public:
  struct Lease {
    uint8_t* data = nullptr;
    size_t capacity = 0;
    transmit::Chunk chunk;  // views the whole buffer; slice() what was written
  };

  BufferPool(size_t buffer_size, size_t buffer_count);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, counted in `flight` and its group (if any) until it
  // comes back. False when none is free.
  bool acquire(Lease& lease, BufferFlight* flight = nullptr);
  // Drops the owner's reference to a flight (the owner is going away).
  static void release_flight(BufferFlight* flight);

  // A chunk of static memory (never released), e.g. the synthetic block.
  transmit::Chunk adopt_static(std::span<const uint8_t> bytes);

  size_t buffer_size() const { return buffer_size_; }
  size_t buffer_count() const { return buffer_count_; }
  size_t free_buffers() const { return free_.size(); }

 private:
  static void on_release(void* context, const uint8_t* data, size_t length);

  size_t buffer_size_;
  size_t buffer_count_;
  // Default-initialised: pages are touched (and count in RSS) only once a
  // buffer is first used, not for the whole pool at start.
  std::unique_ptr<uint8_t[]> storage_;
  std::vector<uint32_t> free_;
  std::vector<BufferFlight*> flights_;  // per buffer, while lent
  transmit::ChunkPool chunks_;          // adopt records only
};

// --- Response bodies ----------------------------------------------------------------------------

enum class BodyFill : uint8_t {
  kOk,           // chunks produced (the last one ends the body if remaining() == 0)
  kEnd,          // nothing left
  kNoBuffers,    // the pool is (nearly) empty: retry once buffers come back
  kCapped,       // this body has max_in_flight buffers out: retry on a return
  kGroupCapped,  // its group has its maximum out: retry when one of the group's returns
  kIoError,      // the file failed or shrank: the response cannot complete
};

class ResponseBody {
 public:
  ResponseBody() = default;
  // `length` bytes of the synthetic pattern, as views of `synthetic_block`
  // (a chunk of synthetic_block(), see BufferPool::adopt_static).
  static ResponseBody synthetic(uint64_t length, const transmit::Chunk& synthetic_block);
  // `length` bytes of the file from `offset` (clamped to the file's size),
  // read on demand into pool buffers, at most `max_in_flight` of them out
  // at once; `on_return(context)` is called when one comes back while the
  // body lives.
  static ResponseBody file(OpenedFile file, uint64_t offset, uint64_t length,
                           uint32_t max_in_flight, void (*on_return)(void*), void* context);
  // Counts this file body's buffers in `group` too (e.g. its connection's),
  // and reads nothing while the group has group_max_in_flight out. Before
  // the first fill(); no effect on a synthetic body.
  void join_group(BufferFlight* group, uint32_t group_max_in_flight);
  ResponseBody(ResponseBody&& other) noexcept;
  ResponseBody& operator=(ResponseBody&& other) noexcept;
  ResponseBody(const ResponseBody&) = delete;
  ResponseBody& operator=(const ResponseBody&) = delete;
  ~ResponseBody();

  // Up to out.size() next chunks. File bodies leave `reserve` buffers of the
  // pool to others (headers and frames must still be sendable), and read
  // whole buffers only until `max_bytes` (non-zero) are read: the last one
  // may pass it.
  BodyFill fill(BufferPool& pool, size_t reserve, std::span<transmit::Chunk> out, size_t& count,
                uint64_t max_bytes = UINT64_MAX);

  uint64_t length() const { return length_; }
  uint64_t remaining() const { return length_ - offset_; }
  bool is_file() const { return file_.valid(); }
  uint32_t in_flight() const { return flight_ != nullptr ? flight_->in_flight : 0; }

 private:
  void release();

  uint64_t length_ = 0;
  uint64_t offset_ = 0;      // bytes of the body produced
  uint64_t file_start_ = 0;  // where the body starts in the file
  transmit::Chunk synthetic_;
  FileDescriptor file_;
  BufferFlight* flight_ = nullptr;
  uint32_t max_in_flight_ = 0;
  uint32_t group_max_in_flight_ = 0;
};

}  // namespace dpquic::dataplane
