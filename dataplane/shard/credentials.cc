#include "dataplane/shard/credentials.h"

namespace dpquic::dataplane {

void CredentialSlot::offer(std::shared_ptr<const Credentials> credentials) {
  std::lock_guard<std::mutex> lock(mutex_);
  next_ = std::move(credentials);
  pending_.store(true, std::memory_order_release);
}

std::shared_ptr<const Credentials> CredentialSlot::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.store(false, std::memory_order_relaxed);
  return std::move(next_);
}

bool apply_credentials(const Credentials& credentials, crypto::TlsContext& tls,
                       endpoint::Endpoint& endpoint) {
  if (!tls.replace_server_credentials(*credentials.certificate, credentials.ticket_keys)) {
    return false;
  }
  if (!credentials.address_token_key.empty()) {
    endpoint.replace_keys(credentials.stateless_reset_key, credentials.address_token_key,
                          credentials.previous_address_token_keys);
  }
  return true;
}

}  // namespace dpquic::dataplane
