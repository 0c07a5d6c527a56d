#pragma once
// How a connection is configured, and the per-core resources all connections
// of one shard share (pools, buffers, keys and the TLS context).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "crypto/mb_manager.h"
#include "crypto/retry_integrity.h"
#include "crypto/tls_context.h"
#include "crypto/tokens.h"
#include "quic/conn/block_pool.h"
#include "quic/conn/cid_generator.h"
#include "quic/conn/random.h"
#include "quic/conn/receive_burst.h"
#include "quic/conn/socket_address.h"
#include "quic/conn/transport_config.h"
#include "quic/recovery/ack_processing.h"
#include "quic/recovery/congestion_controller.h"
#include "quic/recovery/sent_packet_pool.h"
#include "quic/time.h"
#include "quic/transmit/burst_builder.h"

namespace dpquic::conn {

struct ConnectionConfig {
  TransportConfig transport;
  recovery::CongestionControlAlgorithm congestion_control =
      recovery::CongestionControlAlgorithm::kCubic;
  // Initiate a 1-RTT key update after this many packets sealed under one key
  // (RFC 9001 §6); 0 turns it off. Always kept below the AEAD confidentiality
  // limit.
  uint64_t key_update_interval_packets = 1'000'000;
  // Keep-alive (RFC 9000 §10.1.2): an established connection that sent no
  // ack-eliciting packet for this long sends a PING, so that a quiet peer's
  // idle timer does not close it. 0 (the default) turns it off; choose well
  // under the idle timeout either side may set.
  Duration keep_alive_interval = 0;
  // Handshake timeout: a connection not established by then is closed.
  Duration handshake_timeout = 10 * kSecond;
  // Versions this endpoint speaks, in order of preference. A server that
  // prefers v2 upgrades a v1 client offering v2 (RFC 9368 compatible
  // negotiation).
  std::vector<uint32_t> versions{0x6b3343cf, 0x00000001};
  // Bytes an application may queue on one stream beyond what is
  // acknowledged.
  uint64_t max_stream_send_buffer = 4 << 20;
  // Received DATAGRAM frames queued for the application.
  size_t datagram_receive_queue = 64;
  // Server: send NEW_TOKEN after the handshake.
  bool issue_new_tokens = true;
  // Server: preferred_address transport parameter (empty family: none).
  SocketAddress preferred_address_v4;
  SocketAddress preferred_address_v6;
  // Bytes of CRYPTO data buffered out of order per encryption level.
  size_t max_crypto_buffer = 64 * 1024;
  // Datagram Packetization Layer PMTU Discovery (RFC 8899, RFC 9000 §14.3):
  // UDP payload sizes. Datagrams start at the base (never above what the
  // caller lends or the peer accepts); probes search up to
  // min(max_datagram_size, the peer's max_udp_payload_size, the lent
  // capacity). max_datagram_size <= base_datagram_size turns probing off
  // (then datagrams are as large as the caller lends and the peer accepts).
  size_t base_datagram_size = 1452;
  size_t max_datagram_size = 1452;
};

// Client-side store of NEW_TOKEN tokens, by server name (RFC 9000 §8.1.3).
class ClientTokenStore {
 public:
  void store(const std::string& server_name, std::span<const uint8_t> token) {
    if (tokens_.size() >= kCapacity && !tokens_.count(server_name)) tokens_.erase(tokens_.begin());
    tokens_[server_name].assign(token.begin(), token.end());
  }
  // Removes and returns the token (tokens are used once).
  std::vector<uint8_t> take(const std::string& server_name) {
    auto it = tokens_.find(server_name);
    if (it == tokens_.end()) return {};
    std::vector<uint8_t> token = std::move(it->second);
    tokens_.erase(it);
    return token;
  }

 private:
  static constexpr size_t kCapacity = 1024;
  std::unordered_map<std::string, std::vector<uint8_t>> tokens_;
};

// What write_frames learnt about a packet, read back by on_packet_sent in
// the same burst. Only one connection builds a burst at a time on a core, so
// the core keeps the one array instead of 2 KB in every connection.
struct PendingPacket {
  uint32_t frames = 0;
  bool ack_written = false;
  bool probe = false;
  bool path_challenge = false;
  bool mtu_probe = false;
};
using PendingPackets = std::array<PendingPacket, transmit::kMaxPacketsPerBurst>;

// One per core shard. Everything outlives the connections using it.
struct CoreContext {
  const crypto::MbManager* mb = nullptr;
  recovery::SentPacketPool* sent_packet_pool = nullptr;
  recovery::AckXorBuffer* ack_buffer = nullptr;
  BlockPool* blocks = nullptr;
  crypto::TlsContext* tls = nullptr;
  RandomSource* random = nullptr;
  CidGenerator* cid_generator = nullptr;
  const crypto::StatelessResetTokens* reset_tokens = nullptr;
  const crypto::AddressTokens* address_tokens = nullptr;
  // Added to `now` for the times address tokens carry (see
  // EndpointConfig::token_clock_offset).
  int64_t token_clock_offset = 0;
  const crypto::RetryIntegrity* retry_integrity = nullptr;
  ClientTokenStore* client_tokens = nullptr;
  PendingPackets* pending_packets = nullptr;
  // Scratch for Connection::handle_datagrams (receive_burst.h).
  ReceiveBurst* receive_burst = nullptr;

  // The time address tokens are issued and validated at, in microseconds:
  // `now` plus token_clock_offset (modulo 2^64, which no real offset reaches).
  uint64_t token_time_us(Instant now) const {
    return (now + static_cast<uint64_t>(token_clock_offset)) / kMicrosecond;
  }
};

}  // namespace dpquic::conn
