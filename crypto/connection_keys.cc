#include "crypto/connection_keys.h"

#include <openssl/mem.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "crypto/initial_secrets.h"

namespace dpquic::crypto {

KeyGeneration KeyPhase::classify(bool key_phase, uint64_t packet_number, bool have_previous) const {
  if (key_phase == read_phase()) return KeyGeneration::kCurrent;
  // Phases alternate, so the previous and the next generation share a phase
  // bit; the packet number tells them apart.
  if (have_previous && lowest_current_packet_number_ &&
      packet_number < *lowest_current_packet_number_) {
    return KeyGeneration::kPrevious;
  }
  return KeyGeneration::kNext;
}

void KeyPhase::on_current_opened(uint64_t packet_number) {
  if (!lowest_current_packet_number_ || packet_number < *lowest_current_packet_number_) {
    lowest_current_packet_number_ = packet_number;
  }
  if (!highest_current_packet_number_ || packet_number > *highest_current_packet_number_) {
    highest_current_packet_number_ = packet_number;
  }
}

bool KeyPhase::advance_read(uint64_t packet_number) {
  ++read_generation_;
  lowest_current_packet_number_ = packet_number;
  highest_current_packet_number_ = packet_number;
  const bool peer_started = write_generation_ < read_generation_;
  if (peer_started) {
    peer_update_packet_ = packet_number;
  } else {
    peer_update_packet_.reset();  // the peer answered ours
  }
  return peer_started;
}

void KeyPhase::on_ack_sent(uint64_t largest) {
  if (peer_update_packet_ && largest >= *peer_update_packet_) peer_update_packet_.reset();
}

void ConnectionKeys::Secret::wipe() {
  OPENSSL_cleanse(bytes.data(), bytes.size());
  length = 0;
}

ConnectionKeys::ConnectionKeys(const MbManager& mb, wire::Role role, uint32_t version)
    : mb_(mb), role_(role), version_(version) {}

bool ConnectionKeys::HandshakeLevels::any_installed() const {
  if (original_initial_read.installed()) return true;
  for (const auto& level : slots) {
    for (const DirectionKeys& direction : level) {
      if (direction.keys.installed()) return true;
    }
  }
  return false;
}

ConnectionKeys::DirectionKeys* ConnectionKeys::find_slot(EncryptionLevel level,
                                                         Direction direction) {
  if (level == EncryptionLevel::kApplication) return &application_[direction_index(direction)];
  if (!handshake_levels_) return nullptr;
  return &handshake_levels_->slots[static_cast<size_t>(level)][direction_index(direction)];
}

const ConnectionKeys::DirectionKeys* ConnectionKeys::find_slot(EncryptionLevel level,
                                                               Direction direction) const {
  return const_cast<ConnectionKeys*>(this)->find_slot(level, direction);
}

ConnectionKeys::DirectionKeys* ConnectionKeys::slot_for_install(EncryptionLevel level,
                                                                Direction direction) {
  if (level != EncryptionLevel::kApplication && !handshake_levels_) {
    // Once per connection, at its start: not a per-packet allocation.
    handshake_levels_.reset(new (std::nothrow) HandshakeLevels());
  }
  return find_slot(level, direction);
}

void ConnectionKeys::release_handshake_levels_if_unused() {
  // Every slot in it was wiped when discarded; nothing secret is freed.
  if (handshake_levels_ && !handshake_levels_->any_installed()) handshake_levels_.reset();
}

const PacketKeys* ConnectionKeys::original_initial_read_keys() const {
  if (!handshake_levels_ || !handshake_levels_->original_initial_read.installed()) return nullptr;
  return &handshake_levels_->original_initial_read;
}

void ConnectionKeys::discard_original_initial_read() {
  if (!handshake_levels_) return;
  handshake_levels_->original_initial_read.wipe();
  release_handshake_levels_if_unused();
}

ConnectionKeys::~ConnectionKeys() {
  for (int level = 0; level < kEncryptionLevelCount; ++level) {
    discard(static_cast<EncryptionLevel>(level));
  }
}

bool InitialKeys::derive(const MbManager& mb, uint32_t initial_version,
                         std::span<const uint8_t> client_dcid) {
  client.wipe();
  version = initial_version;
  return derive_initial_secrets(initial_version, client_dcid, secrets) &&
         client.derive(mb, kInitialCipherSuite, initial_version, secrets.client);
}

bool ConnectionKeys::install_initial_keys(std::span<const uint8_t> client_dcid) {
  InitialSecrets secrets;
  if (!derive_initial_secrets(version_, client_dcid, secrets)) return false;
  const bool client = role_ == wire::Role::kClient;
  initial_keys_version_ = version_;
  return install_secret(EncryptionLevel::kInitial, Direction::kWrite, kInitialCipherSuite,
                        client ? secrets.client : secrets.server) &&
         install_secret(EncryptionLevel::kInitial, Direction::kRead, kInitialCipherSuite,
                        client ? secrets.server : secrets.client);
}

bool ConnectionKeys::install_initial_keys(InitialKeys& derived) {
  if (derived.version != version_ || !derived.client.installed()) return false;
  const bool client = role_ == wire::Role::kClient;
  DirectionKeys* own =
      slot_for_install(EncryptionLevel::kInitial, client ? Direction::kWrite : Direction::kRead);
  if (own == nullptr) return false;
  own->secret.wipe();
  derived.client.move_to(own->keys);
  std::memcpy(own->secret.bytes.data(), derived.secrets.client.data(), kInitialSecretLength);
  own->secret.length = kInitialSecretLength;
  initial_keys_version_ = version_;
  return install_secret(EncryptionLevel::kInitial, client ? Direction::kRead : Direction::kWrite,
                        kInitialCipherSuite, derived.secrets.server);
}

bool ConnectionKeys::switch_initial_version(uint32_t version,
                                            std::span<const uint8_t> client_dcid) {
  DirectionKeys* read = slot_for_install(EncryptionLevel::kInitial, Direction::kRead);
  if (read == nullptr) return false;
  PacketKeys& original = handshake_levels_->original_initial_read;
  if (read->keys.installed() && initial_keys_version_ == version_) {
    read->keys.move_to(original);
  } else {
    InitialSecrets secrets;
    if (!derive_initial_secrets(version_, client_dcid, secrets)) return false;
    const bool client = role_ == wire::Role::kClient;
    if (!original.derive(mb_, kInitialCipherSuite, version_,
                         client ? secrets.server : secrets.client)) {
      return false;
    }
  }
  version_ = version;
  return install_initial_keys(client_dcid);
}

bool ConnectionKeys::install_secret(EncryptionLevel level, Direction direction, CipherSuite suite,
                                    std::span<const uint8_t> secret) {
  DirectionKeys* slot = slot_for_install(level, direction);
  if (slot == nullptr) return false;
  DirectionKeys& target = *slot;
  target.keys.wipe();
  target.secret.wipe();
  if (secret.size() != secret_length(suite)) return false;
  if (!target.keys.derive(mb_, suite, version_, secret)) return false;
  std::memcpy(target.secret.bytes.data(), secret.data(), secret.size());
  target.secret.length = secret.size();
  if (level != EncryptionLevel::kApplication) return true;

  // 1-RTT keys start at generation 0 in both directions.
  if (direction == Direction::kRead) {
    next_read_.wipe();
    next_read_secret_.wipe();
    previous_read_.wipe();
    key_phase_.reset();
    if (!prepare_next_read()) {
      target.keys.wipe();
      target.secret.wipe();
      return false;
    }
  }
  return true;
}

bool ConnectionKeys::prepare_next_read() {
  const DirectionKeys& current = application_[direction_index(Direction::kRead)];
  const CipherSuite suite = current.keys.suite();
  next_read_secret_.length = current.secret.length;
  return derive_next_secret(suite, version_, current.secret.view(), next_read_secret_.view()) &&
         next_read_.derive(mb_, suite, version_, next_read_secret_.view());
}

void ConnectionKeys::discard(EncryptionLevel level) {
  for (Direction direction : {Direction::kRead, Direction::kWrite}) {
    DirectionKeys* target = find_slot(level, direction);
    if (target == nullptr) continue;
    target->keys.wipe();
    target->secret.wipe();
  }
  if (level == EncryptionLevel::kApplication) {
    wipe_key_update_state();
    return;
  }
  if (level == EncryptionLevel::kInitial && handshake_levels_) {
    handshake_levels_->original_initial_read.wipe();
  }
  release_handshake_levels_if_unused();
}

void ConnectionKeys::wipe_key_update_state() {
  next_read_.wipe();
  next_read_secret_.wipe();
  previous_read_.wipe();
  previous_read_expiry_ = 0;
  key_phase_.reset();
}

bool ConnectionKeys::has_keys(EncryptionLevel level, Direction direction) const {
  const DirectionKeys* slot = find_slot(level, direction);
  return slot != nullptr && slot->keys.installed();
}

const PacketKeys* ConnectionKeys::write_keys(EncryptionLevel level) const {
  const DirectionKeys* slot = find_slot(level, Direction::kWrite);
  return slot != nullptr && slot->keys.installed() ? &slot->keys : nullptr;
}

const HeaderProtectionKey* ConnectionKeys::read_header_protection(EncryptionLevel level) const {
  const DirectionKeys* slot = find_slot(level, Direction::kRead);
  return slot != nullptr && slot->keys.installed() ? &slot->keys.header_protection() : nullptr;
}

std::span<const uint8_t> ConnectionKeys::secret(EncryptionLevel level, Direction direction) const {
  const DirectionKeys* slot = find_slot(level, direction);
  if (slot == nullptr) return {};
  return slot->secret.view();
}

void ConnectionKeys::discard_expired_keys(uint64_t now) {
  if (previous_read_.installed() && now >= previous_read_expiry_) previous_read_.wipe();
}

ReadKeySelection ConnectionKeys::select_read_key(EncryptionLevel level, bool key_phase,
                                                 uint64_t packet_number, uint64_t now) {
  const DirectionKeys* slot = find_slot(level, Direction::kRead);
  if (slot == nullptr || !slot->keys.installed()) return {};
  const PacketKeys& current = slot->keys;
  if (level != EncryptionLevel::kApplication) return {&current.aead(), KeyGeneration::kCurrent};

  discard_expired_keys(now);
  const KeyGeneration generation =
      key_phase_.classify(key_phase, packet_number, previous_read_.installed());
  switch (generation) {
    case KeyGeneration::kCurrent: return {&current.aead(), generation};
    case KeyGeneration::kPrevious: return {&previous_read_, generation};
    case KeyGeneration::kNext: return {next_read_.installed() ? &next_read_ : nullptr, generation};
  }
  return {};
}

bool ConnectionKeys::on_packet_opened(EncryptionLevel level, KeyGeneration generation,
                                      uint64_t packet_number, uint64_t now, uint64_t pto) {
  if (level != EncryptionLevel::kApplication || generation == KeyGeneration::kPrevious) {
    return true;
  }
  if (generation == KeyGeneration::kCurrent) {
    key_phase_.on_current_opened(packet_number);
    return true;
  }
  DirectionKeys& read = application_[direction_index(Direction::kRead)];
  if (!read.keys.installed() || !next_read_.installed()) return false;
  // An update of ours that the peer answers is not one of its own.
  const bool consecutive = !key_phase_.update_pending() && key_phase_.peer_update_unacknowledged();
  if (key_phase_.precedes_current(packet_number) || consecutive) {
    key_update_error_ = true;
    return false;
  }
  // previous <- current <- next; the secret moves on with the keys and the
  // generation after next is derived now, ready for the following flip.
  read.keys.aead().move_to(previous_read_);
  // Saturating: a huge PTO must not wrap the expiry into the past.
  previous_read_expiry_ = pto > (UINT64_MAX - now) / 3 ? UINT64_MAX : now + 3 * pto;
  next_read_.move_to(read.keys.aead());
  std::memcpy(read.secret.bytes.data(), next_read_secret_.bytes.data(), read.secret.length);
  const bool peer_started = key_phase_.advance_read(packet_number);
  if (!prepare_next_read()) return false;
  return !peer_started || update_write_keys();
}

bool ConnectionKeys::on_authentication_failure(CipherSuite suite) {
  integrity_limit_ = std::min(integrity_limit_, aead_integrity_limit(suite));
  if (authentication_failures_ != UINT64_MAX) ++authentication_failures_;
  return authentication_failures_ <= integrity_limit_;
}

bool ConnectionKeys::initiate_key_update() {
  if (!application_[direction_index(Direction::kRead)].keys.installed() ||
      key_phase_.update_pending()) {
    return false;
  }
  return update_write_keys();
}

bool ConnectionKeys::update_write_keys() {
  DirectionKeys& write = application_[direction_index(Direction::kWrite)];
  if (!write.keys.installed()) return false;
  const CipherSuite suite = write.keys.suite();
  // The header protection key stays (RFC 9001 §6); only the AEAD key and IV
  // move to the next generation, and the old secret is overwritten.
  if (!derive_next_secret(suite, version_, write.secret.view(), write.secret.view()) ||
      !write.keys.aead().derive(mb_, suite, version_, write.secret.view())) {
    write.keys.wipe();
    write.secret.wipe();
    return false;
  }
  key_phase_.advance_write();
  return true;
}

}  // namespace dpquic::crypto
