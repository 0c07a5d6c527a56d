#pragma once
// The seam between the TLS handshake and packet protection: the handshake
// hands each traffic secret to a sink as BoringSSL derives it, and the sink
// (ConnectionKeys in practice) turns it into packet keys.

#include <cstdint>
#include <span>

#include "crypto/types.h"

namespace dpquic::crypto {

class SecretSink {
 public:
  virtual ~SecretSink() = default;
  // Returns false if the keys cannot be installed; the handshake then fails
  // with an internal error. The secret is only valid during the call.
  virtual bool install_secret(EncryptionLevel level, Direction direction, CipherSuite suite,
                              std::span<const uint8_t> secret) = 0;
};

}  // namespace dpquic::crypto
