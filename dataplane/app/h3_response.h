#pragma once
// What the HTTP/3 server answers, apart from moving the bytes: the request
// fields it keeps from a header section (H3RequestHead), the response's
// header section for nghttp3 (H3ResponseHeaders), and the decision itself
// (H3Responder): 405 for methods other than GET and HEAD (425 Too Early,
// RFC 8470, when such a request came on a stream opened in 0-RTT), 414,
// 404, 503
// when no descriptor is left; files under the document root with
// content-type, etag, last-modified and accept-ranges, answering
// conditional and range requests with 304, 206 and 416
// (dataplane/app/http_file.h); `/<N>` synthetic bodies.

#include <nghttp3/nghttp3.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dataplane/app/body_source.h"
#include "dataplane/app/http_file.h"
#include "dataplane/app/mime_types.h"
#include "quic/transmit/chunk.h"

namespace dpquic::dataplane {

struct H3RequestLimits {
  size_t max_path_length = 4096;               // longer: 414
  size_t max_conditional_field_length = 1024;  // longer: the field is malformed
};

// The fields of a request's header section the server answers from.
struct H3RequestHead {
  std::string method;
  std::string path;
  bool path_too_long = false;
  // The request's stream was opened in 0-RTT: it may be a replay, which
  // each host's replay filter catches only for tickets it saw itself
  // (docs/fleet.md), so methods that are not safe get 425.
  bool early_data = false;
  ConditionalFields conditions;

  void clear();
  // One field, by its nghttp3 token; fields without a use here are ignored.
  void add(int32_t token, std::string_view value, const H3RequestLimits& limits);
};

// A response's header section for nghttp3_conn_submit_response: the fields
// and the text of the values made here, held inline (no allocation). The
// fields point into the object: it is neither copied nor moved.
class H3ResponseHeaders {
 public:
  static constexpr size_t kMaxFields = 16;
  static constexpr size_t kTextBytes = 256;

  H3ResponseHeaders() = default;
  H3ResponseHeaders(const H3ResponseHeaders&) = delete;
  H3ResponseHeaders& operator=(const H3ResponseHeaders&) = delete;

  // Starts the section: :status and server.
  void start(int status);
  // A field viewing `value`, which must outlive the submission (literals,
  // the MIME map). False when the section is full.
  bool add(std::string_view name, std::string_view value);
  // A field with a copy of `value`.
  bool add_copy(std::string_view name, std::string_view value);
  bool add_decimal(std::string_view name, uint64_t value);

  int status() const { return status_; }
  const nghttp3_nv* data() const { return fields_.data(); }
  size_t size() const { return count_; }

 private:
  std::array<nghttp3_nv, kMaxFields> fields_{};
  size_t count_ = 0;
  std::array<char, kTextBytes> text_{};
  size_t used_ = 0;
  int status_ = 0;
};

struct H3Response {
  H3ResponseHeaders headers;
  ResponseBody body;  // when with_body
  bool with_body = false;
  // No response: it would hold a file open and none may be (ask again once
  // one may).
  bool waits_for_file = false;
};

struct H3ResponderConfig {
  std::string root;                             // empty: synthetic bodies only
  std::shared_ptr<const MimeTypes> mime_types;  // required with a root
  uint64_t max_synthetic_bytes = 1ull << 40;    // the largest `/<N>`
  uint32_t max_buffers_per_response = 64;       // for file bodies
};

class H3Responder {
 public:
  // Throws std::runtime_error for a root that is not an accessible
  // directory, or a root without a MIME map. `synthetic_block` is a chunk of
  // synthetic_block() (BufferPool::adopt_static).
  H3Responder(const H3ResponderConfig& config, transmit::Chunk synthetic_block);

  // The response to `head` at `now_unix_seconds` (wall clock: dates and
  // validators). A file body reports returned buffers to on_return(context).
  // Without `file_slot`, a response that would keep its file open (a body
  // from it) is not made: response.waits_for_file instead. Bodiless answers
  // from a file (HEAD, 304, 416) close it at once and need no slot.
  void respond(const H3RequestHead& head, int64_t now_unix_seconds, bool file_slot,
               H3Response& response, void (*on_return)(void*), void* context) const;

 private:
  void respond_with_file(OpenedFile file, const H3RequestHead& head, bool is_get,
                         int64_t now_unix_seconds, bool file_slot, H3Response& response,
                         void (*on_return)(void*), void* context) const;

  std::optional<DocumentRoot> root_;
  transmit::Chunk synthetic_;
  uint64_t max_synthetic_bytes_;
  uint32_t max_buffers_per_response_;
};

}  // namespace dpquic::dataplane
