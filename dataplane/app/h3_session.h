#pragma once
// The QUIC side of one nghttp3 connection, shared by H3Server and H3Client:
// our three unidirectional streams (control, QPACK encoder and decoder),
// feeding received stream data to nghttp3, and moving what nghttp3 writes
// into the endpoint's streams as chunks:
//   nghttp3_conn_writev_stream -> vecs -> chunks -> Endpoint::send.
// A vec inside a chunk the application lent nghttp3 (a body) goes out as a
// view of that chunk; anything else (frame headers, HEADERS, control and
// QPACK data) is copied into pooled buffers, several pieces per buffer.
// Bytes are acknowledged to nghttp3 as soon as the endpoint took them: the
// chunks keep them alive until QUIC is done with them.

#include <nghttp3/nghttp3.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "dataplane/app/body_source.h"
#include "quic/endpoint/endpoint.h"
#include "quic/time.h"
#include "quic/transmit/chunk.h"

namespace dpquic::dataplane {

// Copies bytes into pooled buffers, packing consecutive pieces into one
// buffer and handing out slices of it.
class ChunkStager {
 public:
  explicit ChunkStager(BufferPool& pool) : pool_(pool) {}
  // A chunk with a copy of the first n bytes (1 <= n <= bytes.size(); less
  // when the current buffer fills up); invalid when no buffer is free.
  transmit::Chunk stage(std::span<const uint8_t> bytes);
  // Lets the current buffer go (it returns once its slices are released).
  void reset();

 private:
  BufferPool& pool_;
  BufferPool::Lease current_;
  size_t used_ = 0;
};

// What the writer asks of the application owning the session.
class H3StreamOwner {
 public:
  virtual ~H3StreamOwner() = default;
  // A chunk holding exactly [data, data + length), if the application lent
  // those bytes to nghttp3 on `stream_id`; an invalid chunk otherwise.
  virtual transmit::Chunk find_lent(int64_t stream_id, const uint8_t* data, size_t length) = 0;
  // The endpoint took the stream's FIN: nghttp3 has nothing more for it.
  virtual void on_fin_sent(int64_t stream_id) = 0;
  // The endpoint refused the stream (reset or stopped): nghttp3 no longer
  // writes to it.
  virtual void on_send_refused(int64_t stream_id) = 0;
};

class H3ReadyList;

enum class H3WriteStatus : uint8_t {
  kIdle,       // nghttp3 has nothing unblocked to write
  kNoBuffers,  // stopped: no pooled buffer for a copy
  kClosing,    // the connection no longer takes data
  kFatal,      // nghttp3 failed: close the connection (error())
};

class H3Session {
 public:
  friend class H3ReadyList;
  H3Session(endpoint::Endpoint& endpoint, endpoint::ConnectionHandle handle)
      : endpoint_(endpoint), handle_(handle) {}
  ~H3Session() { destroy(); }
  H3Session(const H3Session&) = delete;
  H3Session& operator=(const H3Session&) = delete;

  // A new nghttp3 connection (the previous one, if any, is deleted).
  // Returns 0 or an nghttp3 error.
  int create(bool server, const nghttp3_callbacks& callbacks, const nghttp3_settings& settings,
             void* user_data);
  // Deletes the nghttp3 connection and forgets our unidirectional streams.
  void destroy();

  // Opens our unidirectional streams as far as the peer allows and binds
  // them once all three exist. 1: not all could be opened yet; 0: bound;
  // < 0: nghttp3 error.
  int open_local_streams();
  bool bound() const { return bound_; }
  // Whether `stream_id` is one of our control / QPACK streams.
  bool is_local_critical(uint64_t stream_id) const;

  // Feeds everything readable on the stream to nghttp3, in place (the
  // endpoint's peek and consume: no copy). `fin` says whether the stream's
  // end was delivered. Returns 0 or an nghttp3 error (fatal to the
  // connection).
  int read_stream(uint64_t stream_id, bool& fin);
  // Writes what nghttp3 has, see H3WriteStatus; error() after kFatal.
  H3WriteStatus write(ChunkStager& stager, H3StreamOwner& owner);
  int error() const { return error_; }

  // Closes the QUIC connection for an nghttp3 error (the HTTP/3 application
  // code nghttp3 infers), or with an explicit code. Idempotent.
  void fail(Instant now, int liberr);
  void fail_with_code(Instant now, uint64_t code, const char* reason);
  bool failed() const { return failed_; }

  // RESET_STREAM and STOP_SENDING on the QUIC connection.
  void reset_stream(uint64_t stream_id, uint64_t code);
  void stop_sending(uint64_t stream_id, uint64_t code);

  // Streams whose requests are settled outside nghttp3's callbacks (the
  // application's reap), each queued once: `queued` is the request's flag,
  // which the application clears when it takes the stream back.
  void queue_reap(int64_t stream_id, bool& queued);
  // The next stream to settle; false when none is queued.
  bool next_reap(int64_t& stream_id);
  void clear_reaps() { reap_list_.clear(); }

  nghttp3_conn* conn() const { return conn_; }
  endpoint::ConnectionHandle handle() const { return handle_; }
  endpoint::Endpoint& endpoint() { return endpoint_; }

 private:
  enum class Outcome : uint8_t { kAll, kBlocked, kRefused, kNoBuffers, kClosing };
  struct StreamWrite {
    size_t accepted = 0;  // bytes the endpoint took
    bool fin_sent = false;
    Outcome outcome = Outcome::kAll;
  };
  // Hands what nghttp3 wrote for one stream to the endpoint: lent chunks as
  // they are, the rest staged into pooled buffers; stops at the first
  // refusal.
  StreamWrite send_vecs(int64_t stream_id, std::span<const nghttp3_vec> vecs, bool fin,
                        ChunkStager& stager, H3StreamOwner& owner);

  endpoint::Endpoint& endpoint_;
  endpoint::ConnectionHandle handle_;
  nghttp3_conn* conn_ = nullptr;
  std::optional<uint64_t> control_, encoder_, decoder_;
  std::vector<int64_t> reap_list_;
  // While nghttp3 reads a stream's bytes in place, STOP_SENDING on that
  // stream (which frees them) waits until nghttp3 returns.
  std::optional<uint64_t> reading_;
  std::optional<uint64_t> deferred_stop_;
  bool ready_ = false;  // on the application's H3ReadyList
  bool bound_ = false;
  bool failed_ = false;
  int error_ = 0;
};

// The connections of an application with writing to do, each listed once.
// A connection marked while a batch runs waits for the next batch.
class H3ReadyList {
 public:
  void mark(H3Session& session) {
    if (session.ready_) return;
    session.ready_ = true;
    handles_.push_back(session.handle());
  }
  bool empty() const { return handles_.empty(); }
  // For each connection listed now: find(handle) gives the application's
  // connection (null once gone), whose session is unmarked before
  // drive(connection).
  template <typename Find, typename Drive>
  void run_batch(Find&& find, Drive&& drive) {
    const size_t count = handles_.size();
    for (size_t i = 0; i < count; ++i) {
      auto* connection = find(handles_[i]);
      if (connection == nullptr) continue;
      connection->session.ready_ = false;
      drive(*connection);
    }
    handles_.erase(handles_.begin(), handles_.begin() + static_cast<std::ptrdiff_t>(count));
  }

 private:
  std::vector<endpoint::ConnectionHandle> handles_;
};

// A decimal number in a header value (content-length, :status); nullopt if
// anything else is in it.
std::optional<uint64_t> parse_decimal(std::span<const uint8_t> value);

// A header field for nghttp3, viewing `name` and `value` (which must outlive
// the submit call).
nghttp3_nv make_nv(std::string_view name, std::string_view value);

// Bytes read from a QUIC stream per call before handing them to nghttp3.
inline constexpr size_t kH3ReadScratchBytes = 64 * 1024;

}  // namespace dpquic::dataplane
