#pragma once
// What SIGHUP re-reads (the certificate and key, host keys, ticket keys),
// handed from the supervisor to every shard. A shard's TLS context and
// endpoint belong to its thread, so the shard applies new credentials
// itself, between two iterations of its loop (ShardCore::run); handshakes
// already under way keep what they started with, and no connection is
// dropped.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/ticket_keys.h"
#include "crypto/tls_context.h"
#include "quic/endpoint/endpoint.h"

namespace dpquic::dataplane {

struct Credentials {
  std::shared_ptr<const crypto::CertificateChain> certificate;
  // The first encrypts new tickets; all decrypt.
  std::vector<crypto::TicketKey> ticket_keys;
  // Empty: the endpoint keeps the keys it has (no --host-key: random keys
  // of this process, which a reload must not change).
  std::vector<uint8_t> stateless_reset_key;
  std::vector<uint8_t> address_token_key;
  std::vector<std::vector<uint8_t>> previous_address_token_keys;
};

// One per shard: the supervisor offers, the shard takes. The shard's check
// is one relaxed atomic load per loop iteration.
class CredentialSlot {
 public:
  void offer(std::shared_ptr<const Credentials> credentials);
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  // The latest offer, or null when none is pending.
  std::shared_ptr<const Credentials> take();

 private:
  std::atomic<bool> pending_{false};
  std::mutex mutex_;
  std::shared_ptr<const Credentials> next_;
};

// Installs `credentials` in a shard's TLS context and endpoint (on the
// shard's thread). The credentials were checked when loaded: a failure here
// leaves the old ones and returns false.
bool apply_credentials(const Credentials& credentials, crypto::TlsContext& tls,
                       endpoint::Endpoint& endpoint);

}  // namespace dpquic::dataplane
