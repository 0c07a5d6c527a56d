#include "dataplane/shard/shard.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dataplane/shard/on_cpu.h"

namespace dpquic::dataplane {

namespace {

constexpr size_t kReceiveBatch = 128;      // split datagrams per receive() call
constexpr int kReceiveCallsPerSocket = 8;  // per iteration, so transmit is not starved
constexpr int kWritableWaitMs = 20;        // a full socket buffer drains in well under this
constexpr int kSendAttempts = 3;           // with a wait for room between them, not after the last
constexpr Duration kSpinThreshold = 50'000;  // closer deadlines are spun for, not slept for

}  // namespace

Shard::Shard(const ShardConfig& config, crypto::TlsContext& tls)
    : config_(config), core_(config.endpoint, config.shard_count, tls) {
  core_.set_handshake_histogram(&counters_.handshake_time);
  const size_t segment = config_.max_datagram_size;
  if (segment < 1200 || segment > transmit::kMaxSegmentSize) {
    throw std::runtime_error("shard: max_datagram_size must be 1200..16383");
  }
  for (const conn::SocketAddress& address : config_.listen) {
    UdpSocketOptions options;
    options.bind = address;
    options.reuse_port = config_.reuse_port;
    options.gso = config_.gso;
    sockets_.push_back(std::make_unique<UdpSocket>(options));
    socket_index_.emplace(sockets_.back()->local(), sockets_.size() - 1);
  }
  if (config_.steering_ring_slots == 0 && config_.shard_count > 1) {
    config_.steering_ring_slots = std::max<size_t>(16, 512 / (config_.shard_count - 1));
  }
  for (size_t i = 0; i < config_.shard_count; ++i) {
    inbound_.push_back(
        i == config_.endpoint.core_id || config_.shard_count == 1
            ? nullptr
            : std::make_unique<SpscRing<SteeredDatagram>>(config_.steering_ring_slots));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  bool registered = epoll_fd_ >= 0 && wake_fd_ >= 0;
  epoll_event event{};
  event.events = EPOLLIN;
  for (size_t i = 0; registered && i < sockets_.size(); ++i) {
    event.data.ptr = sockets_[i].get();
    registered = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sockets_[i]->fd(), &event) == 0;
  }
  event.data.ptr = nullptr;  // the wake eventfd
  registered = registered && epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) == 0;
  if (!registered) {
    const int error = errno;
    // The destructor does not run for a constructor that throws.
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    throw std::runtime_error(std::string("shard: epoll/eventfd: ") + std::strerror(error));
  }

  received_.resize(kReceiveBatch);
  transmit_buffer_.resize(transmit::kMaxBurstDatagrams * segment);
  transmit_slices_.resize(transmit::kMaxBurstDatagrams);
  sent_slices_.resize(transmit::kMaxBurstDatagrams);
  transmit::lend_gso_buffer(transmit_buffer_.data(), segment, transmit_slices_);
}

Shard::~Shard() {
  // (ShardCore drops the connections, which hold the application's chunks.)
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

const UdpSocket& Shard::add_socket(const conn::SocketAddress& address, size_t receive_batch) {
  UdpSocketOptions options;
  options.bind = address;
  options.reuse_port = false;
  options.gso = config_.gso;
  options.receive_batch = receive_batch;
  sockets_.push_back(std::make_unique<UdpSocket>(options));
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = sockets_.back().get();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sockets_.back()->fd(), &event) != 0) {
    const int error = errno;
    sockets_.pop_back();
    throw std::runtime_error(std::string("shard: epoll_ctl: ") + std::strerror(error));
  }
  socket_index_.emplace(sockets_.back()->local(), sockets_.size() - 1);
  if (sockets_.size() == kScannedSockets + 1) {
    // From now on only readable sockets are read: keep those with datagrams left.
    for (auto& socket : sockets_) {
      if (socket->has_pending()) carried_.push_back(socket.get());
    }
  }
  return *sockets_.back();
}

bool Shard::remove_socket(const conn::SocketAddress& local) {
  const auto it = socket_index_.find(local);
  if (it == socket_index_.end()) return false;
  const size_t index = it->second;
  socket_index_.erase(it);
  UdpSocket* socket = sockets_[index].get();
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, socket->fd(), nullptr);
  std::erase(carried_, socket);
  const UdpSocketStats& s = socket->stats();
  removed_.datagrams_received += s.datagrams_received;
  removed_.datagrams_sent += s.datagrams_sent;
  removed_.bytes_received += s.bytes_received;
  removed_.bytes_sent += s.bytes_sent;
  removed_.receive_truncated += s.receive_truncated;
  removed_.gso_fallbacks += s.gso_fallbacks;
  if (index + 1 != sockets_.size()) {
    sockets_[index] = std::move(sockets_.back());
    socket_index_[sockets_[index]->local()] = index;
  }
  sockets_.pop_back();
  return true;
}

void Shard::clear_wake() {
  uint64_t value;
  [[maybe_unused]] ssize_t r = read(wake_fd_, &value, sizeof(value));
}

void Shard::wake() {
  // Pairs with the fence in wait(): either the sleeper sees the datagram
  // committed before this fence, or this load sees it going to sleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_relaxed)) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void Shard::deliver(Instant now, std::span<ReceivedDatagram> batch) {
  // Datagrams of connections on other shards are steered there; the others
  // keep their order and go to the endpoint together.
  size_t kept = 0;
  for (ReceivedDatagram& datagram : batch) {
    if (const auto owner = core_.foreign_owner(datagram.bytes)) {
      if (!steer(*owner, datagram.path, datagram.ecn, datagram.bytes)) ++steering_drops_;
      continue;
    }
    batch[kept++] = datagram;
  }
  core_.endpoint().handle_datagrams(now, batch.first(kept));
}

bool Shard::steer(uint8_t owner, const conn::PathAddresses& path, transmit::EcnCodepoint ecn,
                  std::span<const uint8_t> bytes) {
  if (bytes.size() > SteeredDatagram::kMaxBytes) return false;
  if (owner >= peers_.size() || peers_[owner] == nullptr) return false;
  SpscRing<SteeredDatagram>& ring = peers_[owner]->inbound_from(config_.endpoint.core_id);
  SteeredDatagram* slot = ring.producer_slot();
  if (slot == nullptr) return false;
  slot->path = path;
  slot->ecn = ecn;
  slot->length = static_cast<uint16_t>(bytes.size());
  std::memcpy(slot->bytes, bytes.data(), bytes.size());
  ring.producer_commit();
  ++steered_out_;
  peers_[owner]->wake();
  return true;
}

bool Shard::drain_steered(Instant now) {
  bool any = false;
  for (auto& ring : inbound_) {
    if (!ring) continue;
    // Bounded by what is there now: the producer keeps adding.
    for (size_t budget = config_.steering_ring_slots; budget != 0; --budget) {
      SteeredDatagram* item = ring->consumer_slot();
      if (item == nullptr) break;
      core_.endpoint().handle_datagram(now, item->path, item->ecn, {item->bytes, item->length});
      ring->consumer_release();
      ++steered_in_;
      any = true;
    }
  }
  return any;
}

bool Shard::receive_socket(Instant now, UdpSocket& socket) {
  bool any = false;
  for (int call = 0; call < kReceiveCallsPerSocket; ++call) {
    const size_t count = socket.receive(received_);
    if (count == 0) break;
    any = true;
    deliver(now, {received_.data(), count});
    // A short batch means the socket is drained (datagrams kept from a GRO
    // split come back first on the next call, without a system call).
    if (count < UdpSocket::kReceiveBatch && !socket.has_pending()) break;
  }
  return any;
}

UdpSocket* Shard::socket_for(const conn::SocketAddress& local) {
  if (const auto it = socket_index_.find(local); it != socket_index_.end()) {
    return sockets_[it->second].get();
  }
  for (auto& socket : sockets_) {
    const conn::SocketAddress& bound = socket->local();
    if (bound.family == local.family && bound.port == local.port &&
        bound.ip == conn::SocketAddress().ip) {
      return socket.get();
    }
  }
  return nullptr;
}

bool Shard::transmit(Instant now) {
  transmit::BurstBuffers buffers;
  buffers.datagrams = transmit_slices_;
  buffers.capacity = config_.max_datagram_size;
  buffers.segment_size = config_.max_datagram_size;
  buffers.mode = transmit::BurstMode::kGsoTrain;
  transmit::BurstDescriptor burst;
  conn::PathAddresses path;
  bool any = false;
  // Bounded: each connection stops at its congestion window or pacer.
  for (int bursts = 0; bursts < 1024 && core_.endpoint().poll_transmit(now, buffers, burst, path);
       ++bursts) {
    any = true;
    UdpSocket* socket = socket_for(path.local);
    if (socket == nullptr) {
      send_drops_ += burst.datagram_count;
      continue;
    }
    // The train is back to back at the segment size the connection used
    // (its path MTU), not at the lent stride (burst.h).
    for (size_t i = 0; i < burst.datagram_count; ++i) {
      sent_slices_[i] = transmit::burst_datagram(buffers, burst, i);
    }
    size_t sent = 0;
    bool socket_full = false;
    for (int attempt = 0; sent < burst.datagram_count; ++attempt) {
      transmit::BurstDescriptor rest = burst;
      rest.datagram_count = burst.datagram_count - sent;
      std::copy(burst.lengths.begin() + sent, burst.lengths.begin() + burst.datagram_count,
                rest.lengths.begin());
      const SendOutcome outcome =
          socket->send(path, rest, std::span<uint8_t* const>(sent_slices_).subspan(sent));
      sent += outcome.datagrams_sent;
      socket_full = outcome.error == EAGAIN || outcome.error == EWOULDBLOCK;
      if (!socket_full || attempt == kSendAttempts - 1) break;
      socket->wait_writable(kWritableWaitMs);
    }
    // Unsent datagrams are lost to the network as far as QUIC knows: its
    // recovery resends what they carried. EMSGSIZE (a PMTU probe above the
    // interface MTU: the sockets never fragment) is just a lost probe.
    send_drops_ += burst.datagram_count - sent;
    // A socket still full after waiting: building more bursts now would only
    // lose them; receive and timers run first, and the next iteration sends.
    if (socket_full && sent < burst.datagram_count) break;
  }
  return any;
}

void Shard::publish_counters() {
  const auto& stats = core_.endpoint().stats();
  uint64_t in = removed_.datagrams_received, out = removed_.datagrams_sent,
           bytes_in = removed_.bytes_received, bytes_out = removed_.bytes_sent,
           truncated = removed_.receive_truncated, fallbacks = removed_.gso_fallbacks;
  for (const auto& socket : sockets_) {
    const UdpSocketStats& s = socket->stats();
    in += s.datagrams_received;
    out += s.datagrams_sent;
    bytes_in += s.bytes_received;
    bytes_out += s.bytes_sent;
    truncated += s.receive_truncated;
    fallbacks += s.gso_fallbacks;
  }
  constexpr auto kRelaxed = std::memory_order_relaxed;
  counters_.connections.store(core_.endpoint().connection_count(), kRelaxed);
  counters_.handshakes.store(core_.handshakes(), kRelaxed);
  counters_.datagrams_in.store(in, kRelaxed);
  counters_.datagrams_out.store(out, kRelaxed);
  counters_.bytes_in.store(bytes_in, kRelaxed);
  counters_.bytes_out.store(bytes_out, kRelaxed);
  counters_.drops.store(stats.datagrams_dropped + steering_drops_ + send_drops_ + truncated,
                        kRelaxed);
  counters_.retries.store(stats.retries_sent, kRelaxed);
  counters_.refused.store(stats.connections_refused, kRelaxed);
  counters_.steered.store(steered_out_, kRelaxed);
  counters_.gso_fallbacks.store(fallbacks, kRelaxed);
  counters_.version_negotiations.store(stats.version_negotiations_sent, kRelaxed);
  counters_.half_open_dropped.store(stats.half_open_evicted + stats.half_open_expired, kRelaxed);
  counters_.stateless_resets.store(stats.stateless_resets_sent, kRelaxed);
}

bool Shard::receive(Instant now) {
  bool any = false;
  if (sockets_.size() > kScannedSockets) {
    any = receive_ready(now);
  } else {
    for (auto& socket : sockets_) any |= receive_socket(now, *socket);
  }
  any |= drain_steered(now);
  return any;
}

bool Shard::receive_ready(Instant now) {
  bool any = false;
  size_t kept = 0;
  for (UdpSocket* socket : carried_) {
    any |= receive_socket(now, *socket);
    if (socket->has_pending()) carried_[kept++] = socket;
  }
  carried_.resize(kept);
  epoll_event events[kReceiveBatch];
  const int n = epoll_wait(epoll_fd_, events, static_cast<int>(kReceiveBatch), 0);
  for (int i = 0; i < n; ++i) {
    auto* socket = static_cast<UdpSocket*>(events[i].data.ptr);
    if (socket == nullptr) {
      clear_wake();
      continue;
    }
    any |= receive_socket(now, *socket);
    if (socket->has_pending() &&
        std::find(carried_.begin(), carried_.end(), socket) == carried_.end()) {
      carried_.push_back(socket);
    }
  }
  return any;
}

void Shard::wait(Instant limit) {
  const Instant now = monotonic_now();
  const Instant deadline = std::min(limit, core_.next_deadline(now));
  if (deadline <= now || deadline - now < kSpinThreshold || config_.busy_poll) return;
  sleeping_.store(true, std::memory_order_relaxed);
  // A store then a load on each side (Dekker): without a full fence the
  // producer's commit and our check could both miss each other, and a
  // steered datagram would wait for the next deadline.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A steered datagram pushed before `sleeping_` was set would not wake us,
  // and datagrams a socket kept from its last batch do not make it readable.
  bool pending = false;
  for (auto& socket : sockets_) pending |= socket->has_pending();
  for (auto& ring : inbound_) pending |= ring && ring->consumer_slot() != nullptr;
  if (!pending) {
    const Duration wait = deadline - now;
    timespec timeout{static_cast<time_t>(wait / kSecond), static_cast<long>(wait % kSecond)};
    epoll_event events[8];
    int n = epoll_pwait2(epoll_fd_, events, 8, &timeout, nullptr);
    if (n < 0 && errno == ENOSYS) {
      // Kernels before 5.11: millisecond timeouts, rounded up.
      n = epoll_wait(epoll_fd_, events, 8,
                     static_cast<int>(
                         std::min<Duration>((wait + kMillisecond - 1) / kMillisecond, INT32_MAX)));
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) clear_wake();
    }
  }
  sleeping_.store(false, std::memory_order_release);
}

void Shard::close_all(Instant now) { core_.close_all(now); }

void Shard::run(const std::atomic<RunPhase>& phase) {
  if (config_.cpu >= 0) pin_current_thread(config_.cpu);
  core_.run(*this, phase, config_.drain_timeout);
}

}  // namespace dpquic::dataplane
