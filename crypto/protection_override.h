#pragma once
// A replacement for the AEAD and header protection ciphers, for fuzzing only.
//
// Production never installs one: MbManager::protection_override() is null and
// every seal, open and mask runs on ipsec-mb / BoringSSL as usual, behind one
// never-taken branch per burst (AEAD) or per mask. The only implementation,
// a null cipher (payload copied as is, a fixed 16-byte tag, an all-zero header
// protection mask), lives in tests/fuzz/null_packet_protection.h and is linked
// into fuzz targets and their corpus tests only. With it installed on the
// MbManager both endpoints of an in-memory pair use, fuzz input is plaintext
// QUIC packets that reach the frame parsers through the real endpoint, while
// the TLS handshake (BoringSSL) stays real.
//
// Everything that protects packets goes through the manager it is given, so
// the override covers all of it: Initial, Handshake, 0-RTT and 1-RTT packets,
// the Retry integrity tag and address-validation tokens.

#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/aead_gather.h"
#include "crypto/header_protection.h"
#include "crypto/packet_keys.h"

namespace dpquic::crypto {

class PacketProtectionOverride {
 public:
  virtual ~PacketProtectionOverride() = default;

  // One AEAD operation in place of the real cipher, with the arguments
  // already validated as for the real one. `segments` tile the message in
  // order: each run's plaintext (seal) or ciphertext (open) is read from `in`
  // and its output written to `out` (in == out: in place; in may be null for
  // an empty run). `tag` receives the 16-byte tag the cipher computes: a seal
  // appends it, an open compares it with the received one in constant time
  // (a mismatch is an authentication failure, as with the real cipher).
  // Returns false for an engine failure.
  virtual bool aead(bool seal, const AeadKey& key, const AeadNonce& nonce,
                    std::span<const uint8_t> aad, std::span<const GatherSegment> segments,
                    uint8_t* tag) const = 0;

  // The header protection mask for one 16-byte sample.
  virtual void header_protection_mask(const HeaderProtectionKey& key, const uint8_t* sample,
                                      HeaderProtectionMask& mask) const = 0;
};

}  // namespace dpquic::crypto
