#include "dataplane/server_keys.h"

#include <openssl/rand.h>
#include <time.h>

#include <stdexcept>

#include "crypto/host_keys.h"

namespace dpquic::dataplane {

namespace {

std::vector<uint8_t> random_key(size_t length) {
  std::vector<uint8_t> key(length);
  RAND_bytes(key.data(), key.size());
  return key;
}

std::string hex(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void load_host_keys(const ServerOptions& options, ServerKeys& keys) {
  for (size_t i = 0; i < options.host_key_files.size(); ++i) {
    std::string error;
    auto secret = crypto::load_host_secret(options.host_key_files[i], error);
    if (!secret) throw std::runtime_error("--host-key=" + error);
    crypto::HostKeys derived = crypto::derive_host_keys(*secret);
    if (i == 0) {
      keys.stateless_reset_key = std::move(derived.stateless_reset_key);
      keys.address_token_key = std::move(derived.address_token_key);
    } else {
      keys.previous_address_token_keys.push_back(std::move(derived.address_token_key));
    }
  }
}

// The keys the files of `options` name; empty where no file is given.
ServerKeys load_key_files(const ServerOptions& options) {
  ServerKeys keys;
  load_host_keys(options, keys);
  for (const std::string& path : options.ticket_key_files) {
    std::string error;
    auto key = crypto::load_ticket_key_file(path, error);
    if (!key) throw std::runtime_error("--ticket-key=" + error);
    keys.ticket_keys.push_back(std::move(*key));
  }
  return keys;
}

}  // namespace

ServerKeys load_server_keys(const ServerOptions& options) {
  ServerKeys keys = load_key_files(options);
  if (options.host_key_files.empty()) {
    keys.stateless_reset_key = random_key(32);
    keys.address_token_key = random_key(16);
  }
  if (keys.ticket_keys.empty()) keys.ticket_keys.push_back(crypto::random_ticket_key());
  return keys;
}

Credentials load_credentials(const ServerOptions& options,
                             std::shared_ptr<const crypto::CertificateChain> running) {
  Credentials credentials;
  credentials.certificate = options.certificate_file.empty()
                                ? std::move(running)
                                : std::make_shared<const crypto::CertificateChain>(
                                      crypto::CertificateChain::load_pem_files(
                                          options.certificate_file, options.key_file));
  ServerKeys keys = load_key_files(options);
  crypto::TlsServerConfig check;
  check.certificate = credentials.certificate.get();
  check.ticket_keys = keys.ticket_keys;
  crypto::TlsContext::create_server(check);  // throws if the key does not match
  credentials.ticket_keys = std::move(keys.ticket_keys);
  credentials.stateless_reset_key = std::move(keys.stateless_reset_key);
  credentials.address_token_key = std::move(keys.address_token_key);
  credentials.previous_address_token_keys = std::move(keys.previous_address_token_keys);
  return credentials;
}

int64_t token_clock_offset() { return clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC); }

std::string describe_server_keys(const ServerOptions& options) {
  std::string text = "dataplane: ";
  text += options.server_id.empty() ? "no server ID"
                                    : "server ID " + hex(options.server_id) + " in every CID";
  if (options.host_key_files.empty()) {
    text += "; stateless-reset and token keys random (this process only)";
  } else {
    text += "; keys from --host-key=" + options.host_key_files.front();
    const size_t more = options.host_key_files.size() - 1;
    if (more) text += " (+" + std::to_string(more) + " still accepted)";
  }
  if (options.ticket_key_files.empty()) {
    text += "; ticket key random (this process only)";
  } else {
    text += "; tickets under --ticket-key=" + options.ticket_key_files.front();
    const size_t more = options.ticket_key_files.size() - 1;
    if (more) text += " (+" + std::to_string(more) + " still accepted)";
  }
  return text + "\n";
}

}  // namespace dpquic::dataplane
