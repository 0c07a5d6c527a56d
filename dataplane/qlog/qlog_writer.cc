#include "dataplane/qlog/qlog_writer.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "dataplane/qlog/qlog_frames.h"

namespace dpquic::dataplane {
namespace {

using conn::PacketDropReason;
using conn::TracedCloseTrigger;
using conn::TracedState;
using wire::PacketType;
using wire::TransportParameter;

constexpr double kNanosPerMilli = 1e6;

const char* packet_type_name(PacketType type) {
  switch (type) {
    case PacketType::kInitial: return "initial";
    case PacketType::kZeroRtt: return "0RTT";
    case PacketType::kHandshake: return "handshake";
    case PacketType::kRetry: return "retry";
    case PacketType::kVersionNegotiation: return "version_negotiation";
    case PacketType::kOneRtt: return "1RTT";
  }
  return "unknown";
}

const char* drop_trigger(PacketDropReason reason) {
  switch (reason) {
    case PacketDropReason::kHeaderParseError: return "header_parse_error";
    case PacketDropReason::kUnknownConnectionId: return "unknown_connection_id";
    case PacketDropReason::kUnexpectedPacket: return "unexpected_packet";
    case PacketDropReason::kUnexpectedVersion: return "unexpected_version";
    case PacketDropReason::kUnexpectedSourceCid: return "unexpected_source_connection_id";
    case PacketDropReason::kUnknownPath: return "unexpected_packet";
    case PacketDropReason::kKeyUnavailable: return "key_unavailable";
    case PacketDropReason::kDecryptionFailure: return "payload_decrypt_error";
    case PacketDropReason::kDuplicate: return "duplicate";
  }
  return "unexpected_packet";
}

const char* state_name(TracedState state) {
  switch (state) {
    case TracedState::kHandshakeComplete: return "handshake_complete";
    case TracedState::kHandshakeConfirmed: return "handshake_confirmed";
    case TracedState::kClosing: return "closing";
    case TracedState::kDraining: return "draining";
    case TracedState::kClosed: return "closed";
  }
  return "closed";
}

const char* close_trigger(const conn::TracedClose& close) {
  switch (close.trigger) {
    case TracedCloseTrigger::kLocalClose:
    case TracedCloseTrigger::kPeerClose:
      if (close.application) return "application";
      return close.error_code == 0 ? "clean" : "error";
    case TracedCloseTrigger::kTransportError: return "error";
    case TracedCloseTrigger::kIdleTimeout: return "idle_timeout";
    case TracedCloseTrigger::kHandshakeTimeout: return "handshake_timeout";
    case TracedCloseTrigger::kStatelessReset: return "stateless_reset";
    case TracedCloseTrigger::kVersionNegotiation: return "version_mismatch";
  }
  return "error";
}

// Dotted IPv4, or IPv6 as eight hexadecimal groups (uncompressed: valid, if
// long).
std::string ip_text(const conn::SocketAddress& address) {
  std::string text;
  if (address.family == conn::AddressFamily::kIpv6) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (size_t group = 0; group < 8; ++group) {
      if (group != 0) text.push_back(':');
      const unsigned value = (unsigned{address.ip[2 * group]} << 8) | address.ip[2 * group + 1];
      bool leading = true;
      for (int shift = 12; shift >= 0; shift -= 4) {
        const unsigned digit = (value >> shift) & 15;
        if (digit == 0 && leading && shift != 0) continue;
        leading = false;
        text.push_back(kHex[digit]);
      }
    }
    return text;
  }
  for (size_t i = 0; i < 4; ++i) {
    if (i != 0) text.push_back('.');
    JsonWriter::append_uint(text, address.ip[i]);
  }
  return text;
}

double clock_ms(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

}  // namespace

// --- QlogWriter ---------------------------------------------------------------------------

QlogWriter::QlogWriter(std::string dir, double epoch_unix_ms, QlogFactory* factory)
    : dir_(std::move(dir)), epoch_unix_ms_(epoch_unix_ms), factory_(factory) {
  record_.reserve(4096);
  staged_.reserve(4096);
}

QlogWriter::~QlogWriter() {
  if (file_ != nullptr) {
    const int result = std::fclose(file_);
    file_ = nullptr;
    if (result != 0) fail_once("close", errno);
  }
}

void QlogWriter::flush() {
  if (file_ != nullptr && std::fflush(file_) != 0) fail_once("write", errno);
}

void QlogWriter::fail_once(const char* what, int error) {
  if (failed_) return;
  failed_ = true;
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (factory_ != nullptr) {
    factory_->report_failure(path_, what, error);
  } else {
    std::fprintf(stderr, "qlog: cannot %s %s: %s\n", what, path_.c_str(), std::strerror(error));
  }
}

void QlogWriter::stop_over_budget() {
  over_budget_ = true;
  if (file_ != nullptr) {
    if (std::fclose(file_) != 0) fail_once("close", errno);
    file_ = nullptr;
    if (records_written_ == 0) ::unlink(path_.c_str());  // not even the header fitted
  }
  if (factory_ != nullptr) factory_->report_over_budget();
}

void QlogWriter::write_record() {
  record_.push_back('\n');
  if (factory_ != nullptr && !factory_->charge(record_.size())) {
    stop_over_budget();
    return;
  }
  if (std::fwrite(record_.data(), 1, record_.size(), file_) != record_.size()) {
    fail_once("write", errno);
    return;
  }
  ++records_written_;
}

bool QlogWriter::begin_event(Instant now, std::string_view name) {
  if (file_ == nullptr) return false;
  record_.clear();
  record_.push_back('\x1e');
  json_.begin_object();
  const double time =
      now >= start_time_ ? static_cast<double>(now - start_time_) / kNanosPerMilli : 0.0;
  json_.member_ms("time", time);
  json_.member("name", name);
  json_.begin_object("data");
  return true;
}

void QlogWriter::end_event() {
  json_.end_object();  // data
  json_.end_object();  // the event
  write_record();
}

void QlogWriter::write_packet_header(PacketType type, uint64_t packet_number) {
  json_.begin_object("header");
  json_.member("packet_type", packet_type_name(type));
  json_.member("packet_number", packet_number);
  json_.end_object();
}

bool QlogWriter::open_file(const conn::TracedStart& start) {
  if (factory_ != nullptr && factory_->budget_exhausted()) {
    stop_over_budget();  // no file at all: not even an empty one
    return false;
  }
  std::string stem = dir_;
  if (!stem.empty() && stem.back() != '/') stem.push_back('/');
  JsonWriter::append_hex(stem, start.original_dcid.span());
  stem += is_server_ ? "_server" : "_client";
  // Created exclusively: another connection with the same original DCID (a
  // client may choose any), in this run or an earlier one, keeps its file;
  // this one takes the next free _N suffix.
  for (uint32_t attempt = 1; attempt <= kMaxNameAttempts; ++attempt) {
    path_ = stem;
    if (attempt > 1) path_ += "_" + std::to_string(attempt);
    path_ += ".sqlog";
    file_ = std::fopen(path_.c_str(), "wx");
    if (file_ != nullptr) return true;
    if (errno != EEXIST) break;
  }
  fail_once("open", errno);
  return false;
}

void QlogWriter::on_connection_started(Instant now, const conn::TracedStart& start) {
  if (started_) return;
  started_ = true;
  start_time_ = now;
  is_server_ = start.role == wire::Role::kServer;
  if (!open_file(start)) return;
  buffer_ = std::make_unique<char[]>(kBufferSize);
  std::setvbuf(file_, buffer_.get(), _IOFBF, kBufferSize);
  write_header(start);

  if (!begin_event(now, "connectivity:connection_started")) return;
  const bool ipv6 = start.path.local.family == conn::AddressFamily::kIpv6;
  json_.member("ip_version", ipv6 ? "ipv6" : "ipv4");
  json_.member("src_ip", ip_text(start.path.local));
  json_.member("dst_ip", ip_text(start.path.remote));
  json_.member("protocol", "QUIC");
  json_.member("src_port", start.path.local.port);
  json_.member("dst_port", start.path.remote.port);
  json_.member_hex("src_cid", start.local_cid.span());
  json_.member_hex("dst_cid", start.peer_cid.span());
  end_event();

  if (!begin_event(now, "transport:version_information")) return;
  char version[9];
  std::snprintf(version, sizeof(version), "%08x", start.version);
  json_.member("chosen_version", version);
  end_event();
}

void QlogWriter::write_header(const conn::TracedStart& start) {
  record_.clear();
  record_.push_back('\x1e');
  std::string odcid;
  JsonWriter::append_hex(odcid, start.original_dcid.span());
  json_.begin_object();
  json_.member("qlog_version", "0.3");
  json_.member("qlog_format", "JSON-SEQ");
  json_.member("title", "dpquic qlog");
  json_.begin_object("trace");
  json_.member("title", odcid);
  json_.begin_object("vantage_point");
  json_.member("name", "dpquic");
  json_.member("type", is_server_ ? "server" : "client");
  json_.end_object();
  json_.begin_object("common_fields");
  json_.member("ODCID", odcid);
  json_.member("group_id", odcid);
  json_.begin_array("protocol_type");
  json_.element("QUIC");
  json_.end_array();
  json_.member("time_format", "relative");
  json_.member_ms("reference_time",
                  epoch_unix_ms_ + static_cast<double>(start_time_) / kNanosPerMilli);
  json_.end_object();
  json_.begin_object("configuration");
  json_.member_ms("time_offset", 0.0);
  json_.end_object();
  json_.end_object();  // trace
  json_.end_object();
  write_record();
}

void QlogWriter::on_parameters_set(Instant now, bool local,
                                   const wire::TransportParameters& params) {
  (local ? local_ack_delay_exponent_ : peer_ack_delay_exponent_) = params.ack_delay_exponent;
  if (!begin_event(now, "transport:parameters_set")) return;
  json_.member("owner", local ? "local" : "remote");
  const auto has = [&](TransportParameter p) { return params.has(p); };
  if (has(TransportParameter::kOriginalDestinationConnectionId)) {
    json_.member_hex("original_destination_connection_id",
                     params.original_destination_connection_id.span());
  }
  if (has(TransportParameter::kInitialSourceConnectionId)) {
    json_.member_hex("initial_source_connection_id", params.initial_source_connection_id.span());
  }
  if (has(TransportParameter::kRetrySourceConnectionId)) {
    json_.member_hex("retry_source_connection_id", params.retry_source_connection_id.span());
  }
  if (has(TransportParameter::kStatelessResetToken)) {
    json_.member_hex("stateless_reset_token", params.stateless_reset_token);
  }
  json_.member_bool("disable_active_migration", has(TransportParameter::kDisableActiveMigration));
  json_.member("max_idle_timeout", params.max_idle_timeout_ms);
  json_.member("max_udp_payload_size", params.max_udp_payload_size);
  json_.member("ack_delay_exponent", params.ack_delay_exponent);
  json_.member("max_ack_delay", params.max_ack_delay_ms);
  json_.member("active_connection_id_limit", params.active_connection_id_limit);
  json_.member("initial_max_data", params.initial_max_data);
  json_.member("initial_max_stream_data_bidi_local", params.initial_max_stream_data_bidi_local);
  json_.member("initial_max_stream_data_bidi_remote", params.initial_max_stream_data_bidi_remote);
  json_.member("initial_max_stream_data_uni", params.initial_max_stream_data_uni);
  json_.member("initial_max_streams_bidi", params.initial_max_streams_bidi);
  json_.member("initial_max_streams_uni", params.initial_max_streams_uni);
  if (has(TransportParameter::kMaxDatagramFrameSize)) {
    json_.member("max_datagram_frame_size", params.max_datagram_frame_size);
  }
  if (has(TransportParameter::kPreferredAddress)) {
    const wire::PreferredAddress& preferred = params.preferred_address;
    json_.begin_object("preferred_address");
    conn::SocketAddress v4 = conn::SocketAddress::ipv4(
        preferred.ipv4_address[0], preferred.ipv4_address[1], preferred.ipv4_address[2],
        preferred.ipv4_address[3], preferred.ipv4_port);
    json_.member("ip_v4", ip_text(v4));
    json_.member("port_v4", preferred.ipv4_port);
    json_.member("ip_v6", ip_text(conn::SocketAddress::ipv6(preferred.ipv6_address, 0)));
    json_.member("port_v6", preferred.ipv6_port);
    json_.member_hex("connection_id", preferred.connection_id.span());
    json_.member_hex("stateless_reset_token", preferred.stateless_reset_token);
    json_.end_object();
  }
  end_event();
}

void QlogWriter::on_packet_built(Instant, PacketType type, uint64_t packet_number,
                                 std::span<const uint8_t> frames) {
  if (file_ == nullptr) return;
  if (staged_head_ == staged_packets_.size()) {  // nothing pending: start over
    staged_packets_.clear();
    staged_head_ = 0;
    staged_.clear();
  }
  const size_t offset = staged_.size();
  JsonWriter staged(staged_);
  write_qlog_frames(staged, frames, local_ack_delay_exponent_);
  staged_packets_.push_back(StagedPacket{type, packet_number, offset, staged_.size() - offset});
}

void QlogWriter::on_packet_sent(Instant now, PacketType type, uint64_t packet_number,
                                size_t length) {
  // The packet's frames were staged when it was built; packets built but
  // never sent (a burst whose sealing failed) are skipped over.
  const StagedPacket* staged = nullptr;
  while (staged_head_ < staged_packets_.size()) {
    const StagedPacket& candidate = staged_packets_[staged_head_++];
    if (candidate.type == type && candidate.packet_number == packet_number) {
      staged = &candidate;
      break;
    }
  }
  if (!begin_event(now, "transport:packet_sent")) return;
  write_packet_header(type, packet_number);
  json_.begin_object("raw");
  json_.member("length", length);
  json_.end_object();
  if (staged != nullptr) {
    record_.push_back(',');
    record_.append(staged_, staged->offset, staged->length);
  }
  end_event();
}

void QlogWriter::on_packet_received(Instant now, PacketType type, uint64_t packet_number,
                                    size_t length, std::span<const uint8_t> frames) {
  if (!begin_event(now, "transport:packet_received")) return;
  write_packet_header(type, packet_number);
  json_.begin_object("raw");
  json_.member("length", length);
  json_.end_object();
  write_qlog_frames(json_, frames, peer_ack_delay_exponent_);
  end_event();
}

void QlogWriter::on_packet_lost(Instant now, PacketType type, uint64_t packet_number) {
  if (!begin_event(now, "recovery:packet_lost")) return;
  write_packet_header(type, packet_number);
  end_event();
}

void QlogWriter::on_packet_dropped(Instant now, bool type_known, PacketType type, size_t length,
                                   PacketDropReason reason) {
  if (!begin_event(now, "transport:packet_dropped")) return;
  if (type_known) {
    json_.begin_object("header");
    json_.member("packet_type", packet_type_name(type));
    json_.end_object();
  }
  json_.begin_object("raw");
  json_.member("length", length);
  json_.end_object();
  json_.member("trigger", drop_trigger(reason));
  if (reason == PacketDropReason::kUnknownPath) json_.member("details", "unknown peer address");
  end_event();
}

void QlogWriter::on_metrics_updated(Instant now, const conn::RecoveryMetrics& metrics) {
  if (file_ == nullptr) return;
  const conn::RecoveryMetrics* last = last_metrics_ ? &*last_metrics_ : nullptr;
  const bool rtt_known = metrics.latest_rtt != 0;  // no sample yet: nothing to show
  const auto changed = [&](auto field) {
    return last == nullptr || last->*field != metrics.*field;
  };
  using M = conn::RecoveryMetrics;
  const bool rtt_changed = rtt_known && (changed(&M::min_rtt) || changed(&M::smoothed_rtt) ||
                                         changed(&M::latest_rtt) || changed(&M::rtt_variance));
  const bool ssthresh_changed =
      metrics.slow_start_threshold != UINT64_MAX && changed(&M::slow_start_threshold);
  const bool model_changed =
      changed(&M::pacing_rate) || changed(&M::bandwidth_estimate) || changed(&M::model_min_rtt);
  if (!rtt_changed && !ssthresh_changed && !model_changed && !changed(&M::congestion_window) &&
      !changed(&M::bytes_in_flight)) {
    return;
  }
  if (!begin_event(now, "recovery:metrics_updated")) return;
  const auto ms = [](Duration d) { return static_cast<double>(d) / kNanosPerMilli; };
  if (rtt_known) {
    if (changed(&M::min_rtt)) json_.member_ms("min_rtt", ms(metrics.min_rtt));
    if (changed(&M::smoothed_rtt)) json_.member_ms("smoothed_rtt", ms(metrics.smoothed_rtt));
    if (changed(&M::latest_rtt)) json_.member_ms("latest_rtt", ms(metrics.latest_rtt));
    if (changed(&M::rtt_variance)) json_.member_ms("rtt_variance", ms(metrics.rtt_variance));
  }
  if (changed(&M::congestion_window)) json_.member("congestion_window", metrics.congestion_window);
  if (changed(&M::bytes_in_flight)) json_.member("bytes_in_flight", metrics.bytes_in_flight);
  if (ssthresh_changed) json_.member("ssthresh", metrics.slow_start_threshold);
  write_model(metrics, last);
  end_event();
  // RTT fields logged before a sample would be wrong later: remember them
  // only once known, so the first sample is logged in full.
  conn::RecoveryMetrics remembered = metrics;
  if (!rtt_known && last != nullptr) {
    remembered.min_rtt = last->min_rtt;
    remembered.smoothed_rtt = last->smoothed_rtt;
    remembered.latest_rtt = last->latest_rtt;
    remembered.rtt_variance = last->rtt_variance;
  }
  last_metrics_ = remembered;
}

// The congestion controller's own model, where it has one (BBR): qlog's
// pacing_rate, and the bandwidth estimate, in bits per second, and the
// model's min RTT.
void QlogWriter::write_model(const conn::RecoveryMetrics& metrics,
                             const conn::RecoveryMetrics* last) {
  using M = conn::RecoveryMetrics;
  const auto changed = [&](auto field) {
    return metrics.*field != 0 && (last == nullptr || last->*field != metrics.*field);
  };
  if (changed(&M::pacing_rate)) json_.member("pacing_rate", metrics.pacing_rate * 8);
  if (changed(&M::bandwidth_estimate)) {
    json_.member("bandwidth_estimate", metrics.bandwidth_estimate * 8);
  }
  if (changed(&M::model_min_rtt)) {
    json_.member_ms("model_min_rtt", static_cast<double>(metrics.model_min_rtt) / kNanosPerMilli);
  }
}

void QlogWriter::on_congestion_state_updated(Instant now, const char* old_state,
                                             const char* new_state) {
  if (file_ == nullptr) return;
  if (!begin_event(now, "recovery:congestion_state_updated")) return;
  if (*old_state != '\0') json_.member("old", old_state);
  json_.member("new", new_state);
  end_event();
}

void QlogWriter::on_key_updated(Instant now, uint64_t generation, bool local) {
  // A key update replaces both directions' 1-RTT secrets (RFC 9001 §6).
  for (const char* key_type : {"client_1rtt_secret", "server_1rtt_secret"}) {
    if (!begin_event(now, "security:key_updated")) return;
    json_.member("key_type", key_type);
    json_.member("generation", generation);
    json_.member("trigger", local ? "local_update" : "remote_update");
    end_event();
  }
}

void QlogWriter::on_state_changed(Instant now, TracedState state) {
  if (!begin_event(now, "connectivity:connection_state_updated")) return;
  if (last_state_) json_.member("old", state_name(*last_state_));
  json_.member("new", state_name(state));
  end_event();
  last_state_ = state;
}

void QlogWriter::on_connection_closed(Instant now, const conn::TracedClose& close) {
  if (!begin_event(now, "connectivity:connection_closed")) return;
  json_.member("owner", close.remote ? "remote" : "local");
  if (close.trigger != TracedCloseTrigger::kIdleTimeout &&
      close.trigger != TracedCloseTrigger::kHandshakeTimeout &&
      close.trigger != TracedCloseTrigger::kStatelessReset &&
      close.trigger != TracedCloseTrigger::kVersionNegotiation) {
    json_.member(close.application ? "application_code" : "connection_code", close.error_code);
  }
  if (!close.reason.empty()) json_.member("reason", close.reason);
  json_.member("trigger", close_trigger(close));
  end_event();
}

// --- QlogFactory --------------------------------------------------------------------------

QlogFactory::QlogFactory(std::string dir, std::optional<double> epoch_unix_ms)
    : dir_(std::move(dir)) {
  struct stat info {};
  if (dir_.empty() || ::stat(dir_.c_str(), &info) != 0) {
    const int error = dir_.empty() ? ENOENT : errno;
    throw std::runtime_error("qlog directory '" + dir_ + "': " + std::strerror(error));
  }
  if (!S_ISDIR(info.st_mode)) {
    throw std::runtime_error("qlog directory '" + dir_ + "' is not a directory");
  }
  if (::access(dir_.c_str(), W_OK | X_OK) != 0) {
    throw std::runtime_error("qlog directory '" + dir_ +
                             "' is not writable: " + std::strerror(errno));
  }
  epoch_unix_ms_ =
      epoch_unix_ms ? *epoch_unix_ms : clock_ms(CLOCK_REALTIME) - clock_ms(CLOCK_MONOTONIC);
}

QlogFactory::~QlogFactory() {
  for (QlogWriter* writer : live_) delete writer;
}

conn::ConnectionTracer* QlogFactory::create_tracer(wire::Role) {
  auto* writer = new QlogWriter(dir_, epoch_unix_ms_, this);
  std::lock_guard<std::mutex> lock(mutex_);
  live_.insert(writer);
  ++created_;
  return writer;
}

void QlogFactory::release_tracer(conn::ConnectionTracer* tracer) {
  auto* writer = static_cast<QlogWriter*>(tracer);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (live_.erase(writer) == 0) return;  // not one of ours
  }
  delete writer;  // flushes and closes: outside the lock (it may report)
}

void QlogFactory::flush_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (QlogWriter* writer : live_) writer->flush();
}

uint64_t QlogFactory::writers_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

size_t QlogFactory::live_writers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

uint64_t QlogFactory::failures() const { return failures_.load(); }

bool QlogFactory::charge(uint64_t bytes) {
  const uint64_t budget = budget_.load();
  uint64_t used = charged_.load();
  do {
    if (used >= budget || bytes > budget - used) return false;
  } while (!charged_.compare_exchange_weak(used, used + bytes));
  return true;
}

void QlogFactory::report_over_budget() {
  if (over_budget_.fetch_add(1) == 0) {
    std::fprintf(stderr,
                 "qlog: the budget of %llu bytes is used up: further qlog output is dropped "
                 "(--qlog-max-mb)\n",
                 static_cast<unsigned long long>(budget_.load()));
  }
}

void QlogFactory::report_failure(const std::string& path, const char* what, int error) {
  if (failures_.fetch_add(1) == 0) {
    std::fprintf(stderr, "qlog: cannot %s %s: %s (further qlog failures are only counted)\n", what,
                 path.c_str(), std::strerror(error));
  }
}

}  // namespace dpquic::dataplane
