#pragma once
// The keys a server shares with the other hosts of its fleet, read from the
// --host-key and --ticket-key files (docs/fleet.md). Without those flags
// every key is drawn at random at start: right for a single host, whose
// tokens, tickets and stateless resets then mean nothing to any other
// process, including itself after a restart.

#include <cstdint>
#include <string>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/ticket_keys.h"
#include "dataplane/server_options.h"
#include "dataplane/shard/credentials.h"

namespace dpquic::dataplane {

struct ServerKeys {
  std::vector<uint8_t> stateless_reset_key;
  std::vector<uint8_t> address_token_key;
  // From the second and later --host-key files: tokens made under them are
  // still accepted.
  std::vector<std::vector<uint8_t>> previous_address_token_keys;
  // The first encrypts new tickets; every one decrypts.
  std::vector<crypto::TicketKey> ticket_keys;
};

// Reads every key file of `options`; random keys where no file is given.
// Throws std::runtime_error with one line ("--host-key=PATH: reason") for a
// missing, unreadable or malformed file.
ServerKeys load_server_keys(const ServerOptions& options);

// What SIGHUP installs: the --cert/--key files (or `running`, the
// certificate generated at start, without them) and the key files, checked
// as start-up checks them (the certificate and key are loaded into a TLS
// context that is then thrown away). Without --host-key or --ticket-key
// those keys are left empty: the running random keys stay. Throws
// std::runtime_error with one line on any error.
Credentials load_credentials(const ServerOptions& options,
                             std::shared_ptr<const crypto::CertificateChain> running);

// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds (the unit of the shards'
// `now`): added to `now` for address-token times, so that hosts whose
// monotonic clocks differ read each other's tokens.
int64_t token_clock_offset();

// One banner line: the server ID and where the keys come from.
std::string describe_server_keys(const ServerOptions& options);

}  // namespace dpquic::dataplane
