#pragma once
// Packet protection keys derived from a TLS traffic secret (RFC 9001 §5.1):
// the AEAD key and IV, and the header protection key, with the key schedules
// ipsec-mb needs expanded once at install, not per packet.

#include <intel-ipsec-mb.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "crypto/header_protection.h"
#include "crypto/mb_manager.h"
#include "crypto/types.h"

namespace dpquic::crypto {

using AeadNonce = std::array<uint8_t, kAeadIvLength>;

// The raw values HKDF-Expand-Label yields for one secret; wiped on
// destruction. Only the first aead_key_length(suite) bytes of key and
// hp are used.
struct KeyMaterial {
  CipherSuite suite = CipherSuite::kAes128Gcm;
  std::array<uint8_t, kMaxAeadKeyLength> key{};
  std::array<uint8_t, kAeadIvLength> iv{};
  std::array<uint8_t, kMaxAeadKeyLength> hp{};

  KeyMaterial() = default;
  KeyMaterial(const KeyMaterial&) = delete;
  KeyMaterial& operator=(const KeyMaterial&) = delete;
  ~KeyMaterial();

  std::span<const uint8_t> key_bytes() const { return {key.data(), aead_key_length(suite)}; }
  std::span<const uint8_t> hp_bytes() const { return {hp.data(), aead_key_length(suite)}; }
};

// key, iv and hp from `secret` with the version's labels ("quic key" ... or
// "quicv2 key" ...). `secret` must be secret_length(suite) bytes.
bool derive_key_material(CipherSuite suite, uint32_t version, std::span<const uint8_t> secret,
                         KeyMaterial& out);

// The next generation's secret for a key update (RFC 9001 §6.1):
// HKDF-Expand-Label(secret, "quic ku" / "quicv2 ku", "", Hash.length).
// `secret` and `next` are secret_length(suite) bytes; they may alias.
bool derive_next_secret(CipherSuite suite, uint32_t version, std::span<const uint8_t> secret,
                        std::span<uint8_t> next);

// An AEAD key and IV in the form ipsec-mb uses: precomputed GCM key data
// (round keys and GHASH powers) or the raw ChaCha20 key.
class AeadKey {
 public:
  AeadKey() = default;
  ~AeadKey() { wipe(); }
  AeadKey(const AeadKey&) = delete;
  AeadKey& operator=(const AeadKey&) = delete;

  // `key` is aead_key_length(suite) bytes, `iv` 12 bytes.
  bool install(const MbManager& mb, CipherSuite suite, std::span<const uint8_t> key,
               std::span<const uint8_t> iv);
  // Key and IV from a traffic secret (the HP key is not derived).
  bool derive(const MbManager& mb, CipherSuite suite, uint32_t version,
              std::span<const uint8_t> secret);
  // Moves this key into `to` and wipes it here (key rotation without a copy
  // left behind).
  void move_to(AeadKey& to);
  void wipe();

  bool installed() const { return installed_; }
  CipherSuite suite() const { return suite_; }
  const std::array<uint8_t, kAeadIvLength>& iv() const { return iv_; }

  // RFC 9001 §5.3: the IV XOR the packet number, left-padded to 12 bytes.
  void nonce(uint64_t packet_number, AeadNonce& out) const {
    // The packet number, big-endian, XORed into the IV's last 8 bytes as one
    // 64-bit word (this runs once per packet). Both words are read from the
    // IV and each byte of `out` is stored once: reading `out` back after
    // copying the IV into it spans two stores, which the CPU cannot forward
    // to the load, and that stall cost more than the rest of the nonce.
    static_assert(kAeadIvLength == 12);
    uint32_t head;
    uint64_t tail;
    std::memcpy(&head, iv_.data(), 4);
    std::memcpy(&tail, iv_.data() + 4, 8);
    tail ^= __builtin_bswap64(packet_number);
    std::memcpy(out.data(), &head, 4);
    std::memcpy(out.data() + 4, &tail, 8);
  }

  // The key pointer an ipsec-mb job takes: gcm_key_data or the ChaCha20 key.
  const void* job_key() const {
    return suite_ == CipherSuite::kChaCha20Poly1305 ? static_cast<const void*>(chacha_key_)
                                                    : static_cast<const void*>(&gcm_);
  }
  const gcm_key_data& gcm() const { return gcm_; }

 private:
  union {
    alignas(64) gcm_key_data gcm_;
    alignas(64) uint8_t chacha_key_[kMaxAeadKeyLength];
  };
  std::array<uint8_t, kAeadIvLength> iv_{};
  CipherSuite suite_ = CipherSuite::kAes128Gcm;
  bool installed_ = false;
};

// Everything needed to protect or unprotect packets in one direction at one
// key generation.
class PacketKeys {
 public:
  // Derives and installs key, iv and hp from `secret`.
  bool derive(const MbManager& mb, CipherSuite suite, uint32_t version,
              std::span<const uint8_t> secret);
  bool install(const MbManager& mb, const KeyMaterial& material);
  // Moves these keys into `to` and wipes them here.
  void move_to(PacketKeys& to);
  void wipe();

  bool installed() const { return aead_.installed(); }
  CipherSuite suite() const { return aead_.suite(); }
  AeadKey& aead() { return aead_; }
  const AeadKey& aead() const { return aead_; }
  const HeaderProtectionKey& header_protection() const { return hp_; }

 private:
  AeadKey aead_;
  HeaderProtectionKey hp_;
};

}  // namespace dpquic::crypto
