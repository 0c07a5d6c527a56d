// Connection set-up, the TLS handshake, transport parameters, the
// application API and events.

#include "quic/conn/connection.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "quic/conn/connection_stream.h"
#include "quic/recovery/congestion_factory.h"
#include "quic/wire/version.h"
#include "quic/wire/version_negotiation.h"

namespace dpquic::conn {

using crypto::EncryptionLevel;
using wire::PacketNumberSpace;
using wire::TransportErrorCode;

namespace {

recovery::AckTrackerConfig ack_config(PacketNumberSpace space, const TransportConfig& transport) {
  recovery::AckTrackerConfig config;
  config.space = space;
  config.max_ack_delay = transport.max_ack_delay_ms * kMillisecond;
  config.ack_delay_exponent = static_cast<uint8_t>(transport.ack_delay_exponent);
  return config;
}

constexpr size_t kInitialEventCapacity = 16;
constexpr size_t kMaxEncodedParameters = 1024;

}  // namespace

Connection::Connection(CoreContext& core, const ConnectionConfig& config, wire::Role role,
                       CidRegistry& registry)
    : core_(core),
      config_(config),
      role_(role),
      registry_(registry),
      keys_(*core.mb, role, wire::kVersion1),
      local_cids_(core.cid_generator, core.reset_tokens, registry),
      peer_cids_(config.transport.active_connection_id_limit),
      paths_(*core.random),
      cc_(recovery::make_congestion_controller(
          config.congestion_control, wire::kMinInitialDatagramSize, core.random->next_u64())),
      loss_(recovery::LossDetectionConfig{.is_server = role == wire::Role::kServer},
            *core.sent_packet_pool, *core.ack_buffer, *cc_),
      spaces_{Space(ack_config(PacketNumberSpace::kInitial, config.transport)),
              Space(ack_config(PacketNumberSpace::kHandshake, config.transport)),
              Space(ack_config(PacketNumberSpace::kApplication, config.transport))},
      pending_(*core.pending_packets),
      receive_window_(config.transport.initial_max_data, config.transport.max_connection_window),
      stream_limits_(role, config.transport.initial_max_streams_bidi,
                     config.transport.initial_max_streams_uni) {
  for (Space& s : spaces_) s.crypto_receive = std::make_unique<ReceiveBuffer>(*core.blocks);
  events_.reset(kInitialEventCapacity);
  datagrams_in_.reset(config.transport.max_datagram_frame_size != 0
                          ? std::max<size_t>(config.datagram_receive_queue, 1)
                          : 0);
  datagrams_out_.reset(config.transport.max_datagram_frame_size != 0 ? 16 : 0);
}

Connection::~Connection() { local_cids_.unregister_all(); }

void Connection::init_common(Instant now, const PathAddresses& path) {
  now_ = now;
  stats_.started_at = now;
  active_path_ = paths_.add_initial(path, role_ == wire::Role::kClient);
  path_mtu_.reset(
      std::max<size_t>(config_.base_datagram_size, wire::kMinInitialDatagramSize),
      path.remote.family == AddressFamily::kIpv6 ? PathMtu::kIpv6Overhead : PathMtu::kIpv4Overhead);
  paths_.path(active_path_).has_peer_cid = true;  // sequence 0, from the handshake
  paths_.path(active_path_).peer_cid_sequence = 0;
  idle_timeout_ = config_.transport.max_idle_timeout_ms * kMillisecond;
  handshake_ = std::make_unique<HandshakeState>();
  handshake_->deadline = now + config_.handshake_timeout;
  reset_idle_timer(now);
}

bool Connection::start_client(Instant now, const PathAddresses& path, std::string_view server_name,
                              uint32_t version) {
  init_common(now, path);
  version_ = original_version_ = version;
  server_name_ = std::string(server_name);

  std::array<uint8_t, 16> random_cid;
  core_.random->fill(random_cid);
  original_dcid_ = handshake_->initial_dcid = wire::ConnectionId(random_cid);
  wire::ConnectionId scid;
  if (core_.cid_generator != nullptr) {
    scid = core_.cid_generator->generate();
  } else {
    core_.random->fill(random_cid);
    scid = wire::ConnectionId(random_cid);
  }
  local_cids_.set_initial(scid);
  handshake_->local_initial_cid = scid;
  peer_cids_.set_initial(original_dcid_);
  if (tracer_) {
    tracer_->on_connection_started(
        now, TracedStart{wire::Role::kClient, version, path, original_dcid_, scid, original_dcid_});
  }
  keys_.set_version(version);
  if (!keys_.install_initial_keys(original_dcid_.span())) {
    finish(CloseReason::kTransportError);
    return false;
  }
  if (core_.client_tokens != nullptr) {
    handshake_->initial_token = core_.client_tokens->take(server_name_);
  }

  tls_ = crypto::TlsSession::create_client(*core_.tls, keys_, server_name);
  local_params_ = make_local_transport_parameters(config_.transport, role_, scid, nullptr, nullptr,
                                                  nullptr, nullptr);
  if (!set_local_parameters(local_params_)) {
    finish(CloseReason::kTransportError);
    return false;
  }
  if (tracer_) tracer_->on_parameters_set(now, true, local_params_);
  // 0-RTT is bounded by the limits the server gave in the connection that
  // minted the ticket (RFC 9000 §7.4.1).
  const auto remembered = tls_->remembered_transport_parameters();
  if (!remembered.empty()) {
    wire::TransportParameters params;
    if (wire::decode_transport_parameters(remembered, wire::Role::kServer, params) ==
        wire::WireError::kOk) {
      send_credit_.on_max_data(params.initial_max_data);
      stream_limits_.set_peer_limits(params.initial_max_streams_bidi,
                                     params.initial_max_streams_uni);
      peer_params_ = params;
    }
  }
  advance_tls(now);
  return state_ != ConnectionState::kClosed;
}

bool Connection::start_server(Instant now, const PathAddresses& path, const ServerStart& start) {
  init_common(now, path);
  version_ = original_version_ = start.version;
  original_dcid_ = start.original_dcid;
  handshake_->initial_dcid = start.client_dcid;
  handshake_->peer_initial_scid = start.client_scid;
  handshake_->retry_scid = start.retry_scid;
  peer_address_validated_ = start.address_validated;
  if (start.address_validated) paths_.path(active_path_).validated = true;
  local_cids_.set_initial(start.local_cid);
  handshake_->local_initial_cid = start.local_cid;
  peer_cids_.set_initial(start.client_scid);
  if (tracer_) {
    tracer_->on_connection_started(
        now, TracedStart{wire::Role::kServer, start.version, path, original_dcid_, start.local_cid,
                         start.client_scid});
  }
  keys_.set_version(start.version);
  const bool installed = start.initial_keys != nullptr
                             ? keys_.install_initial_keys(*start.initial_keys)
                             : keys_.install_initial_keys(start.client_dcid.span());
  if (!installed) {
    finish(CloseReason::kTransportError);
    return false;
  }
  tls_ = crypto::TlsSession::create_server(*core_.tls, keys_);
  tls_->set_client_hello_hook(this);

  wire::StatelessResetToken reset_token{};
  const wire::StatelessResetToken* token_ptr = nullptr;
  if (core_.reset_tokens != nullptr) {
    reset_token = core_.reset_tokens->token_for(start.local_cid);
    token_ptr = &reset_token;
  }
  std::optional<wire::PreferredAddress> preferred;
  if (config_.preferred_address_v4.valid() || config_.preferred_address_v6.valid()) {
    if (auto issued = local_cids_.issue_for_preferred_address()) {
      wire::PreferredAddress address;
      if (config_.preferred_address_v4.valid()) {
        std::memcpy(address.ipv4_address.data(), config_.preferred_address_v4.ip.data(), 4);
        address.ipv4_port = config_.preferred_address_v4.port;
      }
      if (config_.preferred_address_v6.valid()) {
        address.ipv6_address = config_.preferred_address_v6.ip;
        address.ipv6_port = config_.preferred_address_v6.port;
      }
      address.connection_id = issued->first;
      address.stateless_reset_token = issued->second;
      preferred = address;
    }
  }
  local_params_ =
      make_local_transport_parameters(config_.transport, role_, start.local_cid, &original_dcid_,
                                      handshake_->retry_scid ? &*handshake_->retry_scid : nullptr,
                                      token_ptr, preferred ? &*preferred : nullptr);
  if (!set_local_parameters(local_params_)) {
    finish(CloseReason::kTransportError);
    return false;
  }
  if (tracer_) tracer_->on_parameters_set(now, true, local_params_);
  return true;
}

bool Connection::set_local_parameters(const wire::TransportParameters& params) {
  wire::TransportParameters with_versions = params;
  with_versions.version_information.chosen_version = version_;
  with_versions.version_information.available_version_count = 0;
  for (uint32_t v : config_.versions) {
    if (with_versions.version_information.available_version_count >=
        with_versions.version_information.available_versions.size()) {
      break;
    }
    with_versions.version_information
        .available_versions[with_versions.version_information.available_version_count++] = v;
  }
  with_versions.mark_present(wire::TransportParameter::kVersionInformation);
  local_params_ = with_versions;

  std::array<uint8_t, kMaxEncodedParameters> encoded;
  wire::ByteWriter writer(encoded);
  if (!wire::encode_transport_parameters(with_versions, role_, writer)) return false;
  if (!tls_->set_local_transport_parameters({encoded.data(), writer.position()})) return false;
  if (role_ == wire::Role::kServer) {
    // What a client remembers for 0-RTT (RFC 9000 §7.4.1): the limits, not
    // the connection IDs or tokens, which change per connection.
    std::array<uint64_t, 8> context = {params.initial_max_data,
                                       params.initial_max_stream_data_bidi_local,
                                       params.initial_max_stream_data_bidi_remote,
                                       params.initial_max_stream_data_uni,
                                       params.initial_max_streams_bidi,
                                       params.initial_max_streams_uni,
                                       params.active_connection_id_limit,
                                       params.max_datagram_frame_size};
    if (!tls_->set_early_data_context(
            {reinterpret_cast<const uint8_t*>(context.data()), sizeof(context)})) {
      return false;
    }
  }
  return true;
}

void Connection::advance_tls(Instant now) {
  if (tls_ == nullptr || state_ == ConnectionState::kClosed ||
      state_ == ConnectionState::kDraining) {
    return;
  }
  const bool ok = tls_->advance();
  if (!ok || tls_->failed()) {
    enter_closing(now,
                  transport_error(static_cast<TransportErrorCode>(tls_->error_code()),
                                  "TLS handshake failed", static_cast<uint64_t>(0x06)),
                  false, 0);
    return;
  }
  if (role_ == wire::Role::kClient &&
      keys_.has_keys(EncryptionLevel::kHandshake, crypto::Direction::kWrite)) {
    loss_.on_handshake_keys_available(now);
  }
  if (role_ == wire::Role::kClient && tls_->early_data_rejected() && !zero_rtt_rejected_) {
    on_zero_rtt_rejected(now);
  }
  if (!peer_params_applied_ && !tls_->peer_transport_parameters().empty()) {
    if (!apply_peer_parameters(now)) return;
  }
  if (tls_->handshake_complete() && !handshake_complete_) on_handshake_complete(now);
}

void Connection::on_zero_rtt_rejected(Instant now) {
  // RFC 9001 §4.6.2: every assumption 0-RTT was built on may be wrong, so
  // the state of all streams is reset; the application learns it from the
  // event and sends again. The 0-RTT packets are abandoned (their frames
  // name streams that no longer exist) without a congestion signal.
  zero_rtt_rejected_ = true;
  keys_.discard(EncryptionLevel::kEarlyData);
  abandoning_packets_ = true;
  loss_.on_zero_rtt_rejected(now, *this);
  abandoning_packets_ = false;
  for (auto& slot : stream_slots_) {
    if (!slot) continue;
    const auto live = stream_index_.find(slot->id);
    if (!live || *live != slot->slot) continue;  // a free slot
    stream_index_.erase(slot->id);
    slot->send.reset();
    slot->receive.reset();
    slot->in_control_queue = false;
    free_stream_slots_.push_back(slot->slot);
  }
  send_queue_.clear();
  control_queue_.clear();
  stream_count_ = 0;
  stream_limits_ = StreamLimits(role_, config_.transport.initial_max_streams_bidi,
                                config_.transport.initial_max_streams_uni);
  send_credit_ = SendCredit();
  datagrams_out_.clear();
  ConnectionEvent event;
  event.type = ConnectionEventType::kZeroRttRejected;
  push_event(event);
}

bool Connection::apply_peer_parameters(Instant now) {
  peer_params_applied_ = true;
  const wire::Role peer_role =
      role_ == wire::Role::kServer ? wire::Role::kClient : wire::Role::kServer;
  wire::TransportParameters params;
  if (wire::decode_transport_parameters(tls_->peer_transport_parameters(), peer_role, params) !=
      wire::WireError::kOk) {
    enter_closing(now,
                  transport_error(TransportErrorCode::kTransportParameterError,
                                  "malformed transport parameters"),
                  false, 0);
    return false;
  }
  if (TransportError error = validate_peer_parameters(params)) {
    enter_closing(now, error, false, 0);
    return false;
  }
  peer_params_ = params;
  zero_rtt_accepted_ = tls_->early_data_accepted();
  if (tracer_) tracer_->on_parameters_set(now, false, params);
  adopt_peer_parameters(now, params);
  return true;
}

TransportError Connection::validate_peer_parameters(const wire::TransportParameters& params) {
  if (!handshake_) {
    return transport_error(TransportErrorCode::kProtocolViolation,
                           "transport parameters after the handshake");
  }
  HandshakeCids cids{handshake_->peer_initial_scid, original_dcid_, handshake_->retry_scid};
  if (TransportError error = check_peer_transport_parameters(params, role_, cids)) return error;
  // RFC 9368 §4: the version information must confirm the version in use:
  // a client's the version of its first Initial (before any compatible
  // negotiation), a server's the negotiated one.
  const uint32_t expected_version = role_ == wire::Role::kServer ? original_version_ : version_;
  if (params.has(wire::TransportParameter::kVersionInformation) &&
      params.version_information.chosen_version != expected_version) {
    return transport_error(TransportErrorCode::kVersionNegotiationError,
                           "chosen version does not match");
  }
  // RFC 9368 §4: after acting on a Version Negotiation packet, the server's
  // Available Versions must lead us to the version in use, as if the server
  // had listed them in that packet; without them the downgrade cannot be
  // ruled out.
  if (role_ == wire::Role::kClient && version_negotiated_from_ != 0 &&
      !confirms_negotiated_version(params)) {
    return transport_error(TransportErrorCode::kVersionNegotiationError,
                           "version negotiation not confirmed by the server");
  }
  // 0-RTT was sent under the remembered parameters (RFC 9000 §7.4.1).
  if (role_ == wire::Role::kClient && tls_->early_data_accepted()) {
    return check_zero_rtt_parameters(peer_params_, params);
  }
  return {};
}

void Connection::adopt_peer_parameters(Instant now, const wire::TransportParameters& params) {
  // Idle timeout: the minimum of both, where 0 means none (RFC 9000 §10.1).
  const Duration peer_idle = params.max_idle_timeout_ms * kMillisecond;
  if (peer_idle != 0 && (idle_timeout_ == 0 || peer_idle < idle_timeout_)) {
    idle_timeout_ = peer_idle;
  }
  reset_idle_timer(now);
  loss_.set_peer_ack_params(params.max_ack_delay_ms * kMillisecond, params.ack_delay_exponent);
  send_credit_.on_max_data(params.initial_max_data);
  stream_limits_.set_peer_limits(params.initial_max_streams_bidi, params.initial_max_streams_uni);
  for (auto& slot : stream_slots_) {
    if (!slot || !slot->send) continue;
    const uint64_t id = slot->id;
    const uint64_t limit = is_unidirectional(id) ? params.initial_max_stream_data_uni
                           : is_local(id, role_) ? params.initial_max_stream_data_bidi_remote
                                                 : params.initial_max_stream_data_bidi_local;
    slot->send->on_max_stream_data(limit);
  }
  local_cids_.on_peer_limit(params.active_connection_id_limit);
  if (role_ != wire::Role::kClient) return;
  if (params.has(wire::TransportParameter::kStatelessResetToken)) {
    peer_cids_.set_initial_reset_token(params.stateless_reset_token);
  }
  if (params.has(wire::TransportParameter::kPreferredAddress)) {
    peer_cids_.add_preferred_address_cid(params.preferred_address.connection_id,
                                         params.preferred_address.stateless_reset_token);
  }
}

void Connection::on_handshake_complete(Instant now) {
  handshake_complete_ = true;
  stats_.handshake_completed_at = now;
  if (handshake_) handshake_->deadline = kNever;
  if (state_ == ConnectionState::kHandshake) state_ = ConnectionState::kEstablished;
  if (tracer_) tracer_->on_state_changed(now, TracedState::kHandshakeComplete);
  push_event({ConnectionEventType::kEstablished});
  if (role_ == wire::Role::kServer) {
    // RFC 9001 §4.1.2: the server's handshake is confirmed at completion.
    handshake_done_pending_ = true;
    new_token_pending_ = config_.issue_new_tokens && core_.address_tokens != nullptr;
    on_handshake_confirmed(now);
  }
}

void Connection::on_handshake_confirmed(Instant now) {
  if (handshake_confirmed_) return;
  handshake_confirmed_ = true;
  if (config_.keep_alive_interval != 0) keep_alive_deadline_ = now + config_.keep_alive_interval;
  if (tracer_) tracer_->on_state_changed(now, TracedState::kHandshakeConfirmed);
  loss_.on_handshake_confirmed(now);
  discard_space(now, PacketNumberSpace::kInitial);
  discard_space(now, PacketNumberSpace::kHandshake);
  // 0-RTT keys go too: a server keeps them a little for reordered packets in
  // theory (RFC 9001 §4.9.3); we drop them at confirmation.
  keys_.discard(EncryptionLevel::kEarlyData);
  // No long-header packet is built or read from here on.
  handshake_.reset();
  // Client: move to the server's preferred address once confirmed
  // (RFC 9000 §9.6).
  if (role_ == wire::Role::kClient &&
      peer_params_.has(wire::TransportParameter::kPreferredAddress)) {
    const wire::PreferredAddress& preferred = peer_params_.preferred_address;
    SocketAddress target;
    const SocketAddress& current = paths_.path(active_path_).addresses.remote;
    if (current.family == AddressFamily::kIpv6 && preferred.ipv6_port != 0) {
      target = SocketAddress::ipv6(preferred.ipv6_address, preferred.ipv6_port);
    } else if (preferred.ipv4_port != 0) {
      target = SocketAddress::ipv4(preferred.ipv4_address[0], preferred.ipv4_address[1],
                                   preferred.ipv4_address[2], preferred.ipv4_address[3],
                                   preferred.ipv4_port);
    }
    PathAddresses next = paths_.path(active_path_).addresses;
    next.remote = target;
    // A CID of its own for the new path (§9.5); the old path keeps its CID
    // until the new one is validated.
    if (target.valid() && target != current && move_to_own_path(now, next)) {
      cc_->reset_for_new_path(now);
    }
  }
}

void Connection::discard_space(Instant now, PacketNumberSpace s) {
  Space& sp = space(s);
  if (sp.discarded) return;
  sp.discarded = true;
  const EncryptionLevel level = level_of_space(s);
  keys_.discard(level);
  // The space's packets will never be acknowledged or declared lost: release
  // their frame records, or the record ring could never advance past them
  // and would grow for the rest of the connection.
  for (const auto entry : loss_.sent(s).all()) {
    sent_frames_.consume(entry.packet.frames, [](const SentFrame&) {});
  }
  loss_.discard_space(now, s);
  if (tls_) tls_->discard(level);
  sp.crypto_receive->clear();
  sp.crypto_lost.clear();
  if (s == PacketNumberSpace::kInitial) initial_discarded_ = true;
}

bool Connection::address_validated() const {
  return role_ == wire::Role::kClient || paths_.path(active_path_).validated;
}

// --- Compatible version negotiation (RFC 9368, RFC 9369) ------------------------------------

bool Connection::on_client_transport_parameters(std::span<const uint8_t> encoded) {
  wire::TransportParameters params;
  // Malformed or missing parameters are reported once the handshake reads
  // them (apply_peer_parameters); here they only mean "no negotiation".
  if (encoded.empty() ||
      wire::decode_transport_parameters(encoded, wire::Role::kClient, params) !=
          wire::WireError::kOk ||
      !params.has(wire::TransportParameter::kVersionInformation)) {
    return true;
  }
  const wire::VersionInformation& info = params.version_information;
  if (info.chosen_version != original_version_) return true;  // closed later
  // Our most preferred version that the client offers. Versions 1 and 2 are
  // compatible with each other (RFC 9369 §4), the only ones we speak.
  for (const uint32_t candidate : config_.versions) {
    if (candidate == version_) return true;  // the current one is preferred
    if (!wire::is_supported_version(candidate)) continue;
    bool offered = false;
    for (size_t i = 0; i < info.available_version_count; ++i) {
      if (info.available_versions[i] == candidate) offered = true;
    }
    if (!offered) continue;
    // From our first flight on, Initial packets are in the new version; the
    // client's Initials in the old one are still read until it follows.
    if (!handshake_ || !keys_.switch_initial_version(candidate, handshake_->initial_dcid.span())) {
      return false;
    }
    version_ = candidate;
    return set_local_parameters(local_params_);
  }
  return true;
}

bool Connection::follow_server_version(const wire::ParsedHeader& header) {
  // A Retry does not end negotiation: it is sent in the original version,
  // and the server may pick a compatible version once it parses the client's
  // Initial that carries the token (RFC 9368 §6). Nor does an Initial the
  // server sent before it had the whole ClientHello (an ACK, in the original
  // version): the version is settled by the packet carrying the ServerHello,
  // so the client follows until it has Handshake keys.
  if (role_ != wire::Role::kClient || header.type != wire::PacketType::kInitial ||
      keys_.has_keys(crypto::EncryptionLevel::kHandshake, crypto::Direction::kRead) ||
      version_ != original_version_ || !wire::is_supported_version(header.version) ||
      std::find(config_.versions.begin(), config_.versions.end(), header.version) ==
          config_.versions.end()) {
    return false;
  }
  if (!handshake_ ||
      !keys_.switch_initial_version(header.version, handshake_->initial_dcid.span())) {
    return false;
  }
  version_ = header.version;
  return true;
}

// --- Migration and key update -------------------------------------------------------------------

bool Connection::migrate(Instant now, const SocketAddress& new_local) {
  if (role_ != wire::Role::kClient || !handshake_confirmed_ ||
      peer_params_.has(wire::TransportParameter::kDisableActiveMigration)) {
    return false;
  }
  PathAddresses next = paths_.path(active_path_).addresses;
  next.local = new_local;
  // The new path sends with a CID of its own (§9.5); the old path keeps
  // its CID until the new one is validated (then it is retired), so a
  // failed validation can fall back to it.
  if (!move_to_own_path(now, next)) return false;
  cc_->reset_for_new_path(now);
  return true;
}

bool Connection::initiate_key_update() {
  if (!handshake_confirmed_ || keys_.key_phase().update_pending() || !current_phase_acked_) {
    return false;
  }
  if (!keys_.initiate_key_update()) return false;
  packets_under_key_ = 0;
  first_packet_in_phase_.reset();
  current_phase_acked_ = false;
  ++stats_.key_updates;
  ++stats_.key_updates_initiated;
  if (tracer_) tracer_->on_key_updated(now_, keys_.key_phase().write_generation(), true);
  return true;
}

void Connection::trace_metrics(Instant now) {
  const recovery::RttEstimator& rtt = loss_.rtt();
  RecoveryMetrics metrics;
  metrics.congestion_window = cc_->congestion_window();
  metrics.bytes_in_flight = loss_.bytes_in_flight();
  metrics.slow_start_threshold = cc_->slow_start_threshold();
  metrics.smoothed_rtt = rtt.smoothed_rtt();
  metrics.latest_rtt = rtt.latest_rtt();
  metrics.min_rtt = rtt.min_rtt();
  metrics.rtt_variance = rtt.rttvar();
  metrics.pacing_rate = cc_->pacing_rate();
  metrics.bandwidth_estimate = cc_->bandwidth_estimate();
  metrics.model_min_rtt = cc_->model_min_rtt();
  metrics.congestion_state = cc_->state_name();
  if (std::string_view(traced_congestion_state_) != metrics.congestion_state) {
    tracer_->on_congestion_state_updated(now, traced_congestion_state_, metrics.congestion_state);
    traced_congestion_state_ = metrics.congestion_state;
  }
  tracer_->on_metrics_updated(now, metrics);
}

// --- Retry and Version Negotiation (client) -------------------------------------------------

void Connection::handle_retry(Instant now, const wire::ParsedHeader& header,
                              std::span<const uint8_t> packet) {
  now_ = now;
  // RFC 9000 §17.2.5.2: one Retry at most, and none once a server packet was
  // processed; the integrity tag must verify against our first DCID.
  if (role_ != wire::Role::kClient || !handshake_ || handshake_->retry_received ||
      !handshake_->peer_initial_scid.empty() || state_ != ConnectionState::kHandshake ||
      header.version != version_ || core_.retry_integrity == nullptr ||
      !core_.retry_integrity->verify(version_, original_dcid_, packet)) {
    ++stats_.packets_dropped;
    if (tracer_) {
      tracer_->on_packet_dropped(now, true, wire::PacketType::kRetry, packet.size(),
                                 PacketDropReason::kUnexpectedPacket);
    }
    return;
  }
  const wire::ConnectionId retry_scid = header.source_connection_id();
  if (retry_scid == original_dcid_) {
    ++stats_.packets_dropped;
    if (tracer_) {
      tracer_->on_packet_dropped(now, true, wire::PacketType::kRetry, packet.size(),
                                 PacketDropReason::kUnexpectedPacket);
    }
    return;
  }
  handshake_->retry_received = true;
  handshake_->retry_scid = retry_scid;
  handshake_->initial_token.assign(header.token.begin(), header.token.end());
  handshake_->initial_dcid = retry_scid;
  peer_cids_.set_initial(retry_scid);
  if (!keys_.install_initial_keys(retry_scid.span())) {
    finish(CloseReason::kTransportError);
    return;
  }
  // Everything sent before goes again, the Initial data under the new keys;
  // the packet numbers continue (RFC 9000 §17.2.5.3). Loss recovery and
  // congestion control start over (RFC 9002 §6.3).
  loss_.on_retry(now, *this);
  cc_->reset();
  Space& initial = space(PacketNumberSpace::kInitial);
  if (tls_ != nullptr) {
    const uint64_t end = tls_->pending_offset(EncryptionLevel::kInitial);
    if (end != 0) initial.crypto_lost.insert(0, end);
  }
  initial.crypto_in_flight.clear();
}

bool Connection::confirms_negotiated_version(const wire::TransportParameters& params) const {
  if (!params.has(wire::TransportParameter::kVersionInformation)) return false;
  const wire::VersionInformation& info = params.version_information;
  for (const uint32_t candidate : config_.versions) {
    if (!wire::is_supported_version(candidate)) continue;
    for (size_t i = 0; i < info.available_version_count; ++i) {
      if (info.available_versions[i] == candidate) return candidate == version_;
    }
  }
  return false;
}

void Connection::handle_version_negotiation(Instant now, std::span<const uint8_t> packet) {
  now_ = now;
  // RFC 9000 §6.2: ignored once anything else came from the server, or if it
  // lists the version we use.
  // RFC 9368 §4: ignored when this attempt already reacts to one.
  if (role_ != wire::Role::kClient || !handshake_ || !handshake_->peer_initial_scid.empty() ||
      handshake_->retry_received || version_negotiated_from_ != 0) {
    return;
  }
  wire::VersionNegotiationPacket parsed;
  if (wire::parse_version_negotiation(packet, parsed) != wire::WireError::kOk) return;
  if (parsed.versions.contains(version_)) return;
  // Our most preferred version the server listed, for a new attempt (RFC
  // 9368 §2.1); none: the attempt is abandoned (RFC 9000 §6.2).
  for (const uint32_t candidate : config_.versions) {
    if (wire::is_supported_version(candidate) && parsed.versions.contains(candidate)) {
      version_after_negotiation_ = candidate;
      break;
    }
  }
  close_reason_ = CloseReason::kVersionNegotiation;
  finish(CloseReason::kVersionNegotiation);
}

}  // namespace dpquic::conn
