#include "dataplane/app/h3_response.h"

#include <stdexcept>
#include <utility>

#include "dataplane/app/h3_session.h"

namespace dpquic::dataplane {

// --- Requests -----------------------------------------------------------------------------------

void H3RequestHead::clear() {
  method.clear();
  path.clear();
  path_too_long = false;
  early_data = false;
  conditions.clear();
}

void H3RequestHead::add(int32_t token, std::string_view value, const H3RequestLimits& limits) {
  const size_t bound = limits.max_conditional_field_length;
  switch (token) {
    case NGHTTP3_QPACK_TOKEN__METHOD: method.assign(value.substr(0, 32)); break;
    case NGHTTP3_QPACK_TOKEN__PATH:
      if (value.size() > limits.max_path_length) {
        path_too_long = true;
      } else {
        path.assign(value);
      }
      break;
    case NGHTTP3_QPACK_TOKEN_IF_NONE_MATCH:
      conditions.add(FileField::kIfNoneMatch, value, bound);
      break;
    case NGHTTP3_QPACK_TOKEN_IF_MODIFIED_SINCE:
      conditions.add(FileField::kIfModifiedSince, value, bound);
      break;
    case NGHTTP3_QPACK_TOKEN_RANGE: conditions.add(FileField::kRange, value, bound); break;
    case NGHTTP3_QPACK_TOKEN_IF_RANGE: conditions.add(FileField::kIfRange, value, bound); break;
    default: break;
  }
}

// --- Response header sections ------------------------------------------------------------------

void H3ResponseHeaders::start(int status) {
  count_ = 0;
  used_ = 0;
  status_ = status;
  add_decimal(":status", static_cast<uint64_t>(status));
  add("server", "dpquic");
}

bool H3ResponseHeaders::add(std::string_view name, std::string_view value) {
  if (count_ == kMaxFields) return false;
  fields_[count_++] = make_nv(name, value);
  return true;
}

bool H3ResponseHeaders::add_copy(std::string_view name, std::string_view value) {
  if (value.size() > kTextBytes - used_) return false;
  char* copy = text_.data() + used_;
  value.copy(copy, value.size());
  if (!add(name, std::string_view(copy, value.size()))) return false;
  used_ += value.size();
  return true;
}

bool H3ResponseHeaders::add_decimal(std::string_view name, uint64_t value) {
  InlineText<24> text;
  text.append_decimal(value);
  return add_copy(name, text.view());
}

// --- Responses ----------------------------------------------------------------------------------

namespace {

// A response without a body.
void bodiless(H3ResponseHeaders& headers, int status) {
  headers.start(status);
  headers.add_decimal("content-length", 0);
}

}  // namespace

H3Responder::H3Responder(const H3ResponderConfig& config, transmit::Chunk synthetic_block)
    : synthetic_(std::move(synthetic_block)),
      max_synthetic_bytes_(config.max_synthetic_bytes),
      max_buffers_per_response_(config.max_buffers_per_response) {
  if (config.root.empty()) return;
  if (!config.mime_types) {
    throw std::runtime_error("h3: a document root needs a MIME map (H3ServerConfig::mime_types)");
  }
  root_.emplace(config.root, config.mime_types);
}

void H3Responder::respond(const H3RequestHead& head, int64_t now_unix_seconds, bool file_slot,
                          H3Response& response, void (*on_return)(void*), void* context) const {
  H3ResponseHeaders& headers = response.headers;
  const bool is_get = head.method == "GET";
  if (!is_get && head.method != "HEAD") {
    // RFC 8470 §5.2: 425 asks the client to retry after the handshake.
    if (head.early_data) return bodiless(headers, 425);
    bodiless(headers, 405);
    headers.add("allow", "GET, HEAD");
    return;
  }
  if (head.path_too_long) return bodiless(headers, 414);
  const std::optional<std::string> path = decode_request_path(head.path);
  if (!path) return bodiless(headers, 404);
  if (root_) {
    DocumentRoot::Refusal refusal = DocumentRoot::Refusal::kNotFound;
    if (std::optional<OpenedFile> file = root_->open(*path, &refusal)) {
      return respond_with_file(std::move(*file), head, is_get, now_unix_seconds, file_slot,
                               response, on_return, context);
    }
    if (refusal == DocumentRoot::Refusal::kOutOfResources) return bodiless(headers, 503);
  }
  if (std::optional<uint64_t> length = parse_synthetic_length(*path, max_synthetic_bytes_)) {
    headers.start(200);
    headers.add("content-type", MimeTypes::kDefaultType);
    headers.add_decimal("content-length", *length);
    if (is_get && *length != 0) {
      response.body = ResponseBody::synthetic(*length, synthetic_);
      response.with_body = true;
    }
    return;
  }
  bodiless(headers, 404);
}

void H3Responder::respond_with_file(OpenedFile file, const H3RequestHead& head, bool is_get,
                                    int64_t now_unix_seconds, bool file_slot, H3Response& response,
                                    void (*on_return)(void*), void* context) const {
  const FilePlan plan = plan_file_response(head.conditions.view(), is_get,
                                           FileVersion{file.size, file.mtime_ns}, now_unix_seconds);
  const bool with_body = is_get && (plan.status == 200 || plan.status == 206) && plan.length != 0;
  if (with_body && !file_slot) {
    response.waits_for_file = true;
    return;
  }
  H3ResponseHeaders& headers = response.headers;
  headers.start(plan.status);
  // 304 repeats the validators only (RFC 9110 §15.4.5); 416 has no content.
  if (plan.status == 200 || plan.status == 206) headers.add("content-type", file.content_type);
  if (plan.send_length) headers.add_decimal("content-length", plan.length);
  headers.add_copy("etag", plan.etag.view());
  headers.add_copy("last-modified", format_http_date(plan.last_modified).view());
  if (plan.status != 304) headers.add("accept-ranges", "bytes");
  if (!plan.content_range.empty()) headers.add_copy("content-range", plan.content_range.view());
  if (with_body) {
    response.body = ResponseBody::file(std::move(file), plan.offset, plan.length,
                                       max_buffers_per_response_, on_return, context);
    response.with_body = true;
  }
}

}  // namespace dpquic::dataplane
