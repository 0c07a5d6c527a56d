// Endpoint: connection pool, demultiplexing, timers, transmit and event
// queues. The stateless replies live in endpoint_stateless.cc.

#include "quic/endpoint/endpoint.h"

#include <algorithm>
#include <stdexcept>

#include "quic/endpoint/endpoint_slot.h"
#include "quic/endpoint/stateless_packets.h"
#include "quic/hot_path.h"
#include "quic/wire/header.h"

namespace dpquic::endpoint {

using conn::Connection;

namespace {

std::vector<uint8_t> key_or_random(const std::vector<uint8_t>& configured, size_t length,
                                   conn::RandomSource& random) {
  if (!configured.empty()) return configured;
  std::vector<uint8_t> key(length);
  random.fill(key);
  return key;
}

constexpr size_t kStatelessReplySlots = 64;
// Each connection may register its CID limit plus the client's DCIDs.
constexpr size_t kCidsPerConnection = 12;

}  // namespace

Endpoint::Endpoint(const EndpointConfig& config, const crypto::MbManager& mb,
                   crypto::TlsContext& tls)
    : config_(config),
      mb_(mb),
      blocks_(4096, config.receive_blocks_initial, config.receive_blocks_max),
      cid_generator_(config.cid_layout, config.core_id, random_),
      reset_tokens_(key_or_random(config.stateless_reset_key, 32, random_)),
      address_tokens_(mb, key_or_random(config.address_token_key, 16, random_),
                      config.previous_address_token_keys),
      retry_integrity_(mb),
      sealer_(mb),
      cid_table_(std::bit_ceil(
                     std::max<size_t>(64, config.max_connections * kCidsPerConnection * 8 / 7 + 1)),
                 random_.next_u64()),
      address_table_(std::bit_ceil(std::max<size_t>(64, config.max_connections * 2)),
                     random_.next_u64()),
      retry_policy_(config.retry, config.max_connections),
      stateless_limiter_(config.stateless_replies_per_second,
                         std::max<uint64_t>(1, config.stateless_replies_per_second / 4)),
      unvalidated_(config.role == wire::Role::kServer ? config.max_connections : 0,
                   random_.next_u64()) {
  if (config.max_connections == 0) throw std::invalid_argument("max_connections must be > 0");
  if (config.role == wire::Role::kServer && tls.role() != wire::Role::kServer) {
    throw std::invalid_argument("a server endpoint needs a server TLS context");
  }
  core_.mb = &mb_;
  core_.sent_packet_pool = &sent_packet_pool_;
  core_.ack_buffer = &ack_buffer_;
  core_.receive_burst = &receive_burst_;
  core_.blocks = &blocks_;
  core_.tls = &tls;
  core_.random = &random_;
  core_.cid_generator = &cid_generator_;
  core_.reset_tokens = &reset_tokens_;
  core_.address_tokens = &address_tokens_;
  core_.token_clock_offset = config.token_clock_offset;
  core_.retry_integrity = &retry_integrity_;
  core_.client_tokens = &client_tokens_;
  core_.pending_packets = &pending_packets_;
  builder_ = std::make_unique<transmit::BurstBuilder>(sealer_);

  // Slots are created when first taken (then kept for reuse), so memory
  // follows the connections that were live at once, not the maximum.
  slots_.resize(config.max_connections);
  free_slots_.reserve(config.max_connections);
  for (size_t i = config.max_connections; i-- > 0;) {
    free_slots_.push_back(static_cast<ConnectionHandle>(i));
  }
  transmit_queue_.reset(config.max_connections);
  event_queue_.reset(config.max_connections);
  timers_.reserve(config.max_connections);
  due_timers_.resize(config.max_connections);  // a heap entry per connection at most
  evicted_closes_.reserve(config.max_connections);
  replies_.reset(kStatelessReplySlots);
  initial_scratch_.resize(65536);  // any UDP datagram
}

bool Endpoint::replace_keys(std::span<const uint8_t> stateless_reset_key,
                            std::span<const uint8_t> address_token_key,
                            std::span<const std::vector<uint8_t>> previous_address_token_keys) {
  // Checked before anything changes: rekey() only fails for these sizes or
  // when BoringSSL cannot allocate.
  if (stateless_reset_key.size() < 32 || stateless_reset_key.size() > 64) return false;
  return address_tokens_.rekey(address_token_key, previous_address_token_keys) &&
         reset_tokens_.rekey(stateless_reset_key);
}

Endpoint::~Endpoint() {
  // Tracers are released after their connections, which still report
  // until destroyed; nothing else needs the slots in order.
  for (auto& slot : slots_) {
    if (slot && slot->connection) destroy_connection(*slot);
  }
}

// --- Input -----------------------------------------------------------------------------------

DPQUIC_HOT void Endpoint::handle_datagram(Instant now, const conn::PathAddresses& path,
                                          transmit::EcnCodepoint ecn, std::span<uint8_t> bytes) {
  ++stats_.datagrams_received;
  wire::ParsedHeader header;
  if (wire::parse_packet_header(bytes, cid_generator_.cid_length(), header) !=
      wire::WireError::kOk) {
    ++stats_.datagrams_dropped;
    return;
  }
  if (header.long_header && !header.known_version) {
    if (config_.role == wire::Role::kServer &&
        should_send_version_negotiation(header, bytes.size())) {
      (void)send_version_negotiation(now, path, header);
    } else {
      ++stats_.datagrams_dropped;
    }
    return;
  }
  const auto owner = cid_table_.find(header.dcid);
  if (owner) {
    Slot& slot = *slots_[*owner];
    if (!slot.connection) {
      ++stats_.datagrams_dropped;
      return;
    }
    if (header.type == wire::PacketType::kRetry) {
      slot.connection->handle_retry(now, header, bytes.first(header.packet_size));
    } else if (header.type == wire::PacketType::kVersionNegotiation) {
      slot.connection->handle_version_negotiation(now, bytes);
    } else {
      slot.connection->handle_datagram(now, path, ecn, bytes);
    }
    after_call(*owner);
    return;
  }
  if (config_.role == wire::Role::kServer && header.type == wire::PacketType::kInitial) {
    accept_initial(now, path, ecn, bytes, header);
    return;
  }
  if (!header.long_header) {
    if (detect_stateless_reset(now, path, bytes)) return;
    // A CID naming another core belongs to a live connection there (a packet
    // steered wrongly): a reset from here, with the shared key, would kill it.
    const auto owner_core = conn::CidGenerator::core_of(header.dcid, config_.cid_layout);
    if (owner_core && *owner_core != config_.core_id) {
      ++stats_.datagrams_dropped;
      return;
    }
    reply_stateless_reset(now, path, bytes, header.dcid);
    return;
  }
  ++stats_.datagrams_dropped;
}

DPQUIC_HOT void Endpoint::handle_datagrams(Instant now,
                                           std::span<const conn::InboundDatagram> datagrams) {
  size_t next = 0;
  while (next < datagrams.size()) {
    const conn::InboundDatagram& first = datagrams[next];
    const auto owner = short_header_owner(first.bytes);
    if (!owner) {
      handle_datagram(now, first.path, first.ecn, first.bytes);
      ++next;
      continue;
    }
    const size_t length = run_length(datagrams, next);
    stats_.datagrams_received += length;
    slots_[*owner]->connection->handle_datagrams(now, datagrams.subspan(next, length));
    after_call(*owner);
    next += length;
  }
}

namespace {

// The DCID of a datagram parse_packet_header would take as a short header
// (the fixed bit set, room for our CID); nullopt for any other datagram.
std::optional<std::span<const uint8_t>> short_header_dcid(std::span<const uint8_t> bytes,
                                                          size_t cid_length) {
  if (bytes.size() < 1 + cid_length || (bytes[0] & 0xc0) != 0x40) return std::nullopt;
  return bytes.subspan(1, cid_length);
}

}  // namespace

std::optional<ConnectionHandle> Endpoint::short_header_owner(std::span<const uint8_t> bytes) const {
  const auto dcid = short_header_dcid(bytes, cid_generator_.cid_length());
  if (!dcid) return std::nullopt;
  const auto owner = cid_table_.find(*dcid);
  if (!owner || !slots_[*owner]->connection) return std::nullopt;
  return owner;
}

size_t Endpoint::run_length(std::span<const conn::InboundDatagram> datagrams, size_t first) const {
  const size_t cid_length = cid_generator_.cid_length();
  const std::span<const uint8_t> dcid = *short_header_dcid(datagrams[first].bytes, cid_length);
  size_t end = first + 1;
  while (end < datagrams.size()) {
    const auto next = short_header_dcid(datagrams[end].bytes, cid_length);
    if (!next || !std::equal(dcid.begin(), dcid.end(), next->begin())) break;
    ++end;
  }
  return end - first;
}

void Endpoint::handle_timeout(Instant now) {
  // The due connections are taken off the heap first, then handled: each at
  // most once per call. A connection still due afterwards (an ACK that only
  // its next transmit clears) goes back on the heap at the top, and popping
  // while re-pushing would handle that one connection over and over, as many
  // times as there were timers.
  size_t due = 0;
  while (!timers_.empty() && timers_.front().deadline <= now) {
    const ConnectionHandle handle = timers_.front().handle;
    push_timer(handle, kNever);  // off the heap; after_call sets the next one
    due_timers_[due++] = handle;
  }
  for (size_t i = 0; i < due; ++i) {
    const ConnectionHandle handle = due_timers_[i];
    ++stats_.connection_timeouts;
    slots_[handle]->connection->handle_timeout(now);
    after_call(handle);
  }
}

// --- Output ----------------------------------------------------------------------------------

bool Endpoint::poll_transmit(Instant now, const transmit::BurstBuffers& buffers,
                             transmit::BurstDescriptor& out, conn::PathAddresses& path) {
  out.datagram_count = 0;
  while (!replies_.empty()) {
    // Stays valid after pop(): nothing is pushed before it is copied out.
    const StatelessReply& reply = replies_.front();
    replies_.pop();
    if (buffers.datagrams.empty() || buffers.capacity < reply.length) {
      ++stats_.stateless_replies_dropped;  // the caller's buffers cannot hold it
      continue;
    }
    std::copy_n(reply.bytes.data(), reply.length, buffers.datagrams[0]);
    out.datagram_count = 1;
    out.lengths[0] = reply.length;
    out.segment_size = reply.length;
    out.ecn = transmit::EcnCodepoint::kNotEct;
    out.path_id = 0;
    path = reply.path;
    return true;
  }
  while (!transmit_queue_.empty()) {
    const ConnectionHandle handle = transmit_queue_.front();
    transmit_queue_.pop();
    Slot& slot = *slots_[handle];
    slot.in_transmit_queue = false;
    if (!slot.connection) continue;
    (void)slot.connection->poll_transmit(now, *builder_, buffers, out, path);
    const bool sent = out.datagram_count != 0;
    if (sent) {
      // Round-robin: it may have more, after the others had their turn.
      slot.in_transmit_queue = true;
      transmit_queue_.push(handle);
    }
    const Instant deadline = slot.connection->next_timeout();
    if (deadline != slot.timer) push_timer(handle, deadline);
    if (slot.connection->is_finished() && !sent) after_call(handle);
    if (sent) return true;
  }
  return false;
}

Instant Endpoint::poll_timeout() { return timers_.empty() ? kNever : timers_.front().deadline; }

bool Endpoint::poll_event(EndpointEvent& event) {
  if (evicted_closes_read_ < evicted_closes_.size()) {
    event = evicted_closes_[evicted_closes_read_++];
    return true;
  }
  evicted_closes_.clear();
  evicted_closes_read_ = 0;
  while (!event_queue_.empty()) {
    const ConnectionHandle handle = event_queue_.front();
    Slot& slot = *slots_[handle];
    if (slot.connection && slot.connection->poll_event(event.event)) {
      event.connection = handle;
      return true;
    }
    event_queue_.pop();
    slot.in_event_queue = false;
    if (slot.connection && slot.connection->is_finished()) free_slot(handle);
  }
  return false;
}

// --- Application --------------------------------------------------------------------------------

std::optional<ConnectionHandle> Endpoint::connect(Instant now, const conn::PathAddresses& path,
                                                  std::string_view server_name, uint32_t version,
                                                  uint32_t negotiated_from) {
  if (config_.role != wire::Role::kClient) return std::nullopt;
  const auto handle = take_slot();
  if (!handle) return std::nullopt;
  Slot& slot = *slots_[*handle];
  slot.connection =
      std::make_unique<Connection>(core_, config_.connection, wire::Role::kClient, slot);
  attach_tracer(slot);
  ++connection_count_;
  ++half_open_count_;
  slot.established = false;
  if (negotiated_from != 0) slot.connection->follow_version_negotiation(negotiated_from);
  (void)slot.connection->start_client(now, path, server_name, version);
  after_call(*handle);
  return handle;
}

void Endpoint::reset_connections() {
  for (auto& slot : slots_) {
    if (!slot) continue;
    if (slot->connection) free_slot(slot->handle);
    slot->in_event_queue = false;
  }
  transmit_queue_.clear();
  event_queue_.clear();
  evicted_closes_.clear();
  evicted_closes_read_ = 0;
}

// --- Slots, timers and queues
// ---------------------------------------------------------------------

std::optional<ConnectionHandle> Endpoint::take_slot() {
  if (free_slots_.empty()) return std::nullopt;
  const ConnectionHandle handle = free_slots_.back();
  free_slots_.pop_back();
  if (!slots_[handle]) {
    slots_[handle] = std::make_unique<Slot>();
    slots_[handle]->endpoint = this;
    slots_[handle]->handle = handle;
  }
  Slot& slot = *slots_[handle];
  slot.timer = kNever;
  slot.client_dcid_count = 0;
  slot.established = false;
  return handle;
}

DPQUIC_HOT void Endpoint::after_call(ConnectionHandle handle) {
  Slot& slot = *slots_[handle];
  Connection* c = slot.connection.get();
  if (c == nullptr) return;
  if (!slot.established && (c->is_established() || c->is_finished())) {
    slot.established = true;
    --half_open_count_;
  }
  if (unvalidated_.contains(handle) && (slot.established || c->address_validated())) {
    unvalidated_.remove(handle);
  }
  if (!slot.in_transmit_queue && !c->is_finished()) {
    slot.in_transmit_queue = true;
    transmit_queue_.push(handle);
  }
  if (!slot.in_event_queue) {
    slot.in_event_queue = true;
    event_queue_.push(handle);
  }
  const Instant deadline = c->next_timeout();
  if (deadline != slot.timer) push_timer(handle, deadline);
  index_address(slot);
}

DPQUIC_HOT void Endpoint::index_address(Slot& slot) {
  // Compared as an address first: encoding it to compare the bytes read
  // back, on every call, what had just been stored in pieces, and stalled
  // on store forwarding.
  const conn::SocketAddress& remote = slot.connection->active_path().remote;
  if (!slot.indexed_address.empty() && remote == slot.indexed_remote &&
      (slot.owns_address || slot.address_erasures == address_erasures_)) {
    return;
  }
  std::array<uint8_t, conn::SocketAddress::kEncodedMax> encoded;
  const size_t length = remote.encode(encoded);
  const wire::ConnectionId key(std::span<const uint8_t>(encoded.data(), length));
  if (key == slot.indexed_address &&
      (slot.owns_address || slot.address_erasures == address_erasures_)) {
    return;
  }
  unindex_address(slot);
  // Another connection from the same address keeps the entry: detection then
  // checks that one (a heuristic the RFC allows; it only costs a miss).
  slot.indexed_address = key;
  slot.indexed_remote = remote;
  slot.owns_address = address_table_.insert(key, slot.handle);
  slot.address_erasures = address_erasures_;
}

void Endpoint::unindex_address(Slot& slot) {
  if (slot.indexed_address.empty()) return;
  if (slot.owns_address) {
    const auto owner = address_table_.find(slot.indexed_address.span());
    if (owner && *owner == slot.handle) {
      address_table_.erase(slot.indexed_address.span());
      ++address_erasures_;
    }
  }
  slot.indexed_address = wire::ConnectionId();
  slot.owns_address = false;
}

void Endpoint::free_slot(ConnectionHandle handle) {
  Slot& slot = *slots_[handle];
  if (!slot.connection) return;
  if (!slot.established) --half_open_count_;
  unvalidated_.remove(handle);
  unindex_address(slot);
  for (size_t i = 0; i < slot.client_dcid_count; ++i) slot.unregister_cid(slot.client_dcids[i]);
  destroy_connection(slot);  // unregisters its own CIDs
  push_timer(handle, kNever);
  slot.in_transmit_queue = false;
  --connection_count_;
  free_slots_.push_back(handle);
}

void Endpoint::attach_tracer(Slot& slot) {
  if (config_.tracer_factory == nullptr) return;
  slot.connection->set_tracer(config_.tracer_factory->create_tracer(config_.role));
}

void Endpoint::destroy_connection(Slot& slot) {
  conn::ConnectionTracer* tracer = slot.connection->tracer();
  slot.connection.reset();
  if (tracer != nullptr && config_.tracer_factory != nullptr) {
    config_.tracer_factory->release_tracer(tracer);
  }
}

// The timer heap is indexed: each slot knows its entry's position, so a
// changed deadline moves the one entry (no stale entries, no compaction) and
// the heap holds at most one entry per live connection.
void Endpoint::push_timer(ConnectionHandle handle, Instant deadline) {
  Slot& slot = *slots_[handle];
  slot.timer = deadline;
  size_t position = slot.timer_position;
  if (deadline == kNever) {
    if (position == Slot::kNoTimer) return;
    slot.timer_position = Slot::kNoTimer;
    const TimerEntry last = timers_.back();
    timers_.pop_back();
    if (position == timers_.size()) return;
    place_timer(position, last);
    position = sift_timer_up(position);
    sift_timer_down(position);
    return;
  }
  if (position == Slot::kNoTimer) {
    position = timers_.size();
    timers_.push_back(TimerEntry{deadline, handle});  // within the reserved capacity
    slot.timer_position = static_cast<uint32_t>(position);
  } else {
    timers_[position].deadline = deadline;
  }
  position = sift_timer_up(position);
  sift_timer_down(position);
}

void Endpoint::place_timer(size_t position, const TimerEntry& entry) {
  timers_[position] = entry;
  slots_[entry.handle]->timer_position = static_cast<uint32_t>(position);
}

size_t Endpoint::sift_timer_up(size_t position) {
  const TimerEntry entry = timers_[position];
  while (position != 0) {
    const size_t parent = (position - 1) / 2;
    if (timers_[parent].deadline <= entry.deadline) break;
    place_timer(position, timers_[parent]);
    position = parent;
  }
  place_timer(position, entry);
  return position;
}

void Endpoint::sift_timer_down(size_t position) {
  const TimerEntry entry = timers_[position];
  const size_t count = timers_.size();
  while (true) {
    size_t child = 2 * position + 1;
    if (child >= count) break;
    if (child + 1 < count && timers_[child + 1].deadline < timers_[child].deadline) ++child;
    if (entry.deadline <= timers_[child].deadline) break;
    place_timer(position, timers_[child]);
    position = child;
  }
  place_timer(position, entry);
}

}  // namespace dpquic::endpoint
