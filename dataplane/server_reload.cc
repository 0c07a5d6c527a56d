// SIGHUP: Server::reload (server.h).
#include <cstdio>
#include <exception>
#include <memory>

#include "dataplane/server.h"
#include "dataplane/server_keys.h"

namespace dpquic::dataplane {

void Server::reload() {
  std::shared_ptr<const Credentials> credentials;
  try {
    credentials = std::make_shared<const Credentials>(load_credentials(options_, certificate_));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dataplane: SIGHUP: the running configuration stays: %s\n", e.what());
    std::fflush(stderr);
    return;
  }
  certificate_ = credentials->certificate;
  for (ShardCore* core : cores_) core->credentials().offer(credentials);
  wake_shards();
  const std::string source =
      certificate_generated_ ? "self-signed (generated at start)" : options_.certificate_file;
  std::printf(
      "dataplane: reloaded on SIGHUP: certificate %s, SHA-256 fingerprint %s; %zu host key "
      "file(s), %zu ticket key file(s)\n",
      source.c_str(), certificate_->sha256_fingerprint().c_str(), options_.host_key_files.size(),
      options_.ticket_key_files.size());
  std::fflush(stdout);
}

}  // namespace dpquic::dataplane
