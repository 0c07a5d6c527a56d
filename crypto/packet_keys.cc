#include "crypto/packet_keys.h"

#include <openssl/mem.h>

#include <cstring>

#include "crypto/hkdf_label.h"

namespace dpquic::crypto {

KeyMaterial::~KeyMaterial() {
  OPENSSL_cleanse(key.data(), key.size());
  OPENSSL_cleanse(iv.data(), iv.size());
  OPENSSL_cleanse(hp.data(), hp.size());
}

namespace {

bool derive_key_and_iv(CipherSuite suite, const QuicLabels& labels, std::span<const uint8_t> secret,
                       KeyMaterial& out) {
  const size_t key_length = aead_key_length(suite);
  return hkdf_expand_label(suite, secret, labels.key, {}, {out.key.data(), key_length}) &&
         hkdf_expand_label(suite, secret, labels.iv, {}, out.iv);
}

}  // namespace

bool derive_key_material(CipherSuite suite, uint32_t version, std::span<const uint8_t> secret,
                         KeyMaterial& out) {
  if (secret.size() != secret_length(suite)) return false;
  out.suite = suite;
  const QuicLabels& labels = quic_labels(version);
  return derive_key_and_iv(suite, labels, secret, out) &&
         hkdf_expand_label(suite, secret, labels.hp, {}, {out.hp.data(), aead_key_length(suite)});
}

bool derive_next_secret(CipherSuite suite, uint32_t version, std::span<const uint8_t> secret,
                        std::span<uint8_t> next) {
  const size_t length = secret_length(suite);
  if (secret.size() != length || next.size() != length) return false;
  // HKDF-Expand reads the secret while writing the output, so a copy keeps
  // an in-place update correct.
  std::array<uint8_t, kMaxSecretLength> current;
  std::memcpy(current.data(), secret.data(), length);
  const bool ok =
      hkdf_expand_label(suite, {current.data(), length}, quic_labels(version).ku, {}, next);
  OPENSSL_cleanse(current.data(), current.size());
  return ok;
}

bool AeadKey::install(const MbManager& mb, CipherSuite suite, std::span<const uint8_t> key,
                      std::span<const uint8_t> iv) {
  wipe();
  if (key.size() != aead_key_length(suite) || iv.size() != kAeadIvLength) return false;
  switch (suite) {
    case CipherSuite::kAes128Gcm: IMB_AES128_GCM_PRE(mb.get(), key.data(), &gcm_); break;
    case CipherSuite::kAes256Gcm: IMB_AES256_GCM_PRE(mb.get(), key.data(), &gcm_); break;
    case CipherSuite::kChaCha20Poly1305: std::memcpy(chacha_key_, key.data(), key.size()); break;
  }
  std::memcpy(iv_.data(), iv.data(), kAeadIvLength);
  suite_ = suite;
  installed_ = true;
  return true;
}

bool AeadKey::derive(const MbManager& mb, CipherSuite suite, uint32_t version,
                     std::span<const uint8_t> secret) {
  wipe();
  if (secret.size() != secret_length(suite)) return false;
  KeyMaterial material;
  material.suite = suite;
  return derive_key_and_iv(suite, quic_labels(version), secret, material) &&
         install(mb, suite, material.key_bytes(), material.iv);
}

void AeadKey::move_to(AeadKey& to) {
  if (&to == this) return;
  to.wipe();
  std::memcpy(static_cast<void*>(&to.gcm_), &gcm_, sizeof(gcm_));
  to.iv_ = iv_;
  to.suite_ = suite_;
  to.installed_ = installed_;
  wipe();
}

void AeadKey::wipe() {
  OPENSSL_cleanse(static_cast<void*>(&gcm_), sizeof(gcm_));
  OPENSSL_cleanse(iv_.data(), iv_.size());
  installed_ = false;
}

bool PacketKeys::derive(const MbManager& mb, CipherSuite suite, uint32_t version,
                        std::span<const uint8_t> secret) {
  wipe();
  KeyMaterial material;
  return derive_key_material(suite, version, secret, material) && install(mb, material);
}

bool PacketKeys::install(const MbManager& mb, const KeyMaterial& material) {
  wipe();
  if (!aead_.install(mb, material.suite, material.key_bytes(), material.iv) ||
      !hp_.install(mb, material.suite, material.hp_bytes())) {
    wipe();
    return false;
  }
  return true;
}

void PacketKeys::move_to(PacketKeys& to) {
  aead_.move_to(to.aead_);
  hp_.move_to(to.hp_);
}

void PacketKeys::wipe() {
  aead_.wipe();
  hp_.wipe();
}

}  // namespace dpquic::crypto
