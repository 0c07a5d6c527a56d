#pragma once
// All packet protection keys of one connection: per encryption level and
// direction, plus 1-RTT key updates (RFC 9001 §6).
//
// ConnectionKeys is the SecretSink the TLS handshake installs secrets into.
// It is sans-IO like the rest of quic/: time comes in as `now` (any unit,
// e.g. microseconds) and the PTO in the same unit; nothing here reads a
// clock. Secrets and keys are wiped (OPENSSL_cleanse) when discarded, when
// rotated out and on destruction.
//
// Receiving a 1-RTT packet, in order:
//   1. remove header protection with read_header_protection(kApplication);
//   2. decode the packet number, read the key phase bit;
//   3. select_read_key(key_phase, packet_number, now) and open with it;
//   4. on success, on_packet_opened(generation, packet_number, now, pto),
//      which commits a key update the peer started (and answers it). If it
//      returns false, drop the packet unprocessed and close the connection:
//      with KEY_UPDATE_ERROR (0x0e) if key_update_error(), else
//      INTERNAL_ERROR;
//   5. on an authentication failure, on_authentication_failure(); once it
//      returns false, close with AEAD_LIMIT_REACHED (RFC 9001 §6.6).
//
// AEAD limits (RFC 9001 §6.6): the confidentiality limit counts packets
// sealed under one write key and is the sender's to enforce (initiate a key
// update before aead_confidentiality_limit(suite) packets); the integrity
// limit counts failed opens over the connection, across all keys, here.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "crypto/header_protection.h"
#include "crypto/initial_secrets.h"
#include "crypto/mb_manager.h"
#include "crypto/packet_keys.h"
#include "crypto/secret_sink.h"
#include "crypto/types.h"
#include "quic/wire/role.h"

namespace dpquic::crypto {

// RFC 9001 §6.6 packet counts per suite: 2^23 sealed packets per key and
// 2^52 forgeries for AES-GCM; ChaCha20-Poly1305 has no practical
// confidentiality limit (more than 2^62 packets) and an integrity limit of
// 2^36.
constexpr uint64_t aead_confidentiality_limit(CipherSuite suite) {
  return suite == CipherSuite::kChaCha20Poly1305 ? UINT64_MAX : uint64_t{1} << 23;
}
constexpr uint64_t aead_integrity_limit(CipherSuite suite) {
  return suite == CipherSuite::kChaCha20Poly1305 ? uint64_t{1} << 36 : uint64_t{1} << 52;
}

// Which 1-RTT read key generation a received packet belongs to.
enum class KeyGeneration : uint8_t { kPrevious, kCurrent, kNext };

struct ReadKeySelection {
  const AeadKey* key = nullptr;  // null: no key for this packet, drop it
  KeyGeneration generation = KeyGeneration::kCurrent;
};

// Key phase bookkeeping for 1-RTT keys: generation numbers only, no key
// material. The key phase bit is the generation's low bit.
class KeyPhase {
 public:
  uint64_t read_generation() const { return read_generation_; }
  uint64_t write_generation() const { return write_generation_; }
  bool read_phase() const { return (read_generation_ & 1) != 0; }
  bool write_phase() const { return (write_generation_ & 1) != 0; }
  // We started an update the peer has not answered yet (no packet in the
  // new phase received): another one must wait (RFC 9001 §6.1).
  bool update_pending() const { return write_generation_ > read_generation_; }
  // The peer started the current read generation and we have not yet sent
  // an acknowledgment of the packet that started it (RFC 9001 §6.2): a
  // further update from the peer now would be consecutive updates.
  bool peer_update_unacknowledged() const { return peer_update_packet_.has_value(); }
  // We sent an ACK frame whose largest acknowledged is `largest`, in a 1-RTT
  // packet (protected with the current write keys, which follow the peer's
  // update as soon as it is read). Our ACK frames cover every packet
  // received up to their largest, so this acknowledges the packet that
  // started the peer's update once `largest` reaches it.
  void on_ack_sent(uint64_t largest);

  // Which generation a packet with `key_phase` and `packet_number` uses
  // (RFC 9001 §6.3, §6.5): its own phase is the current keys; the other
  // phase is the previous keys for packets older than the first one opened
  // in the current phase, and the next keys otherwise.
  KeyGeneration classify(bool key_phase, uint64_t packet_number, bool have_previous) const;

  void on_current_opened(uint64_t packet_number);
  // RFC 9001 §6.4: a packet opened with the next keys whose number is below
  // one opened with the current keys means the peer protected a higher
  // packet number with older keys.
  bool precedes_current(uint64_t packet_number) const {
    return highest_current_packet_number_ && packet_number < *highest_current_packet_number_;
  }
  // A packet opened with the next keys: the read side moves on. Returns true
  // if the write side must follow (the peer started the update).
  bool advance_read(uint64_t packet_number);
  void advance_write() { ++write_generation_; }
  void reset() { *this = KeyPhase(); }

 private:
  uint64_t read_generation_ = 0;
  uint64_t write_generation_ = 0;
  // Lowest packet number opened with the current read keys.
  std::optional<uint64_t> lowest_current_packet_number_;
  // Highest packet number opened with the current read keys.
  std::optional<uint64_t> highest_current_packet_number_;
  // The packet that started the peer's update, until we acknowledged it.
  std::optional<uint64_t> peer_update_packet_;
};

// Initial keys derived for one client Destination Connection ID before a
// connection exists (RFC 9001 §5.2): a server opens the client's first
// Initial with `client` to check it, and the connection then takes them
// (ConnectionKeys::install_initial_keys), so no key is derived twice.
struct InitialKeys {
  // Both secrets and the client's packet keys for `version` (v1 or v2).
  // False, with no keys installed, for an unsupported version.
  bool derive(const MbManager& mb, uint32_t version, std::span<const uint8_t> client_dcid);

  uint32_t version = 0;
  InitialSecrets secrets;
  PacketKeys client;
};

class ConnectionKeys final : public SecretSink {
 public:
  // `mb` expands key schedules at install and must outlive this object.
  ConnectionKeys(const MbManager& mb, wire::Role role, uint32_t version);
  ~ConnectionKeys() override;
  ConnectionKeys(const ConnectionKeys&) = delete;
  ConnectionKeys& operator=(const ConnectionKeys&) = delete;

  // Version whose labels keys installed from now on use (after compatible
  // version negotiation, RFC 9369 §4.1; Initial keys of the original version
  // stay as they are until reinstalled).
  void set_version(uint32_t version) { version_ = version; }
  uint32_t version() const { return version_; }

  // RFC 9001 §5.2: Initial keys of both directions from the client's first
  // Destination Connection ID. A client calls it again after a Retry.
  bool install_initial_keys(std::span<const uint8_t> client_dcid);
  // The same from keys derived earlier (`derived`, of this object's
  // version): the client's packet keys move in and only the server's are
  // derived. False, installing nothing, if `derived` is of another version
  // or holds no keys.
  bool install_initial_keys(InitialKeys& derived);

  // Compatible version negotiation (RFC 9368 §4, RFC 9369 §4.1): Initial
  // keys of both directions for `version` from `client_dcid`, while the read
  // keys of the current version are kept for the peer's Initials still in
  // it (a server reads the client's first-version Initials until the client
  // follows). Later keys use `version`'s labels. `client_dcid` is the one
  // the installed Initial keys are for: their read keys are kept as the
  // original version's, not derived again.
  bool switch_initial_version(uint32_t version, std::span<const uint8_t> client_dcid);
  // The Initial read keys of the version before the switch, or null.
  const PacketKeys* original_initial_read_keys() const;
  // The peer switched too: the old version's keys are not needed.
  void discard_original_initial_read();

  // SecretSink: installs one direction of a level. For 1-RTT read keys the
  // next generation is derived at once, ready for a key phase flip.
  bool install_secret(EncryptionLevel level, Direction direction, CipherSuite suite,
                      std::span<const uint8_t> secret) override;

  // Wipes both directions of `level` (RFC 9001 §4.9).
  void discard(EncryptionLevel level);

  bool has_keys(EncryptionLevel level, Direction direction) const;
  // The keys to seal with at `level`, or null. For 1-RTT these are the
  // current write generation's; mark short headers with write_key_phase().
  const PacketKeys* write_keys(EncryptionLevel level) const;
  const HeaderProtectionKey* read_header_protection(EncryptionLevel level) const;

  // The AEAD key for a received packet (key_phase only matters at
  // kApplication). Drops previous 1-RTT read keys whose time is up.
  ReadKeySelection select_read_key(EncryptionLevel level, bool key_phase, uint64_t packet_number,
                                   uint64_t now);
  // Call after a packet opened. Opening with the next generation commits the
  // peer's key update: the current read keys become the previous ones, kept
  // until now + 3 * pto (RFC 9001 §6.5), and the write keys follow if the
  // peer started it (§6.2). Returns false, committing nothing, if the
  // keys cannot be derived, or (key_update_error() turns true) if the packet
  // opened with the next keys has a lower packet number than one already
  // opened with the current keys (RFC 9001 §6.4), or starts a second update
  // of the peer's before we acknowledged the packet that started its first
  // (§6.2: consecutive updates; a peer flipping the phase on every packet
  // would make us derive keys for each).
  bool on_packet_opened(EncryptionLevel level, KeyGeneration generation, uint64_t packet_number,
                        uint64_t now, uint64_t pto);

  // Starts a key update of our own (RFC 9001 §6.1): new write keys now, the
  // read side follows when the peer answers. The caller checks the
  // handshake is confirmed and a packet of the current phase was
  // acknowledged; this refuses while an update of ours is unanswered.
  bool initiate_key_update();

  // A 1-RTT packet we sent carries an ACK frame up to `largest` (see
  // KeyPhase::on_ack_sent).
  void on_ack_sent(uint64_t largest) { key_phase_.on_ack_sent(largest); }

  bool write_key_phase() const { return key_phase_.write_phase(); }
  bool read_key_phase() const { return key_phase_.read_phase(); }
  const KeyPhase& key_phase() const { return key_phase_; }
  bool has_previous_read_key() const { return previous_read_.installed(); }
  // The peer broke the key update rules: close with KEY_UPDATE_ERROR.
  bool key_update_error() const { return key_update_error_; }

  // Counts a received packet that failed authentication at any level. Returns
  // false once the count exceeds the integrity limit of any suite in use
  // (RFC 9001 §6.6): close with AEAD_LIMIT_REACHED and open nothing more.
  bool on_authentication_failure(CipherSuite suite);
  uint64_t authentication_failures() const { return authentication_failures_; }
  // Drops the previous 1-RTT read keys once now >= their expiry.
  void discard_expired_keys(uint64_t now);

  // The current traffic secret of one direction (empty if none): for
  // diagnostics and tests. Points into storage that is wiped on discard.
  std::span<const uint8_t> secret(EncryptionLevel level, Direction direction) const;

  // True while Initial, 0-RTT or Handshake keys are held (their storage is
  // released when the last of them is discarded).
  bool holds_handshake_keys() const { return handshake_levels_ != nullptr; }

 private:
  struct Secret {
    std::array<uint8_t, kMaxSecretLength> bytes{};
    size_t length = 0;
    std::span<const uint8_t> view() const { return {bytes.data(), length}; }
    std::span<uint8_t> view() { return {bytes.data(), length}; }
    void wipe();
  };
  struct DirectionKeys {
    PacketKeys keys;
    Secret secret;
  };

  // The Initial, 0-RTT and Handshake keys, and the original version's
  // Initial read keys: on the heap while any of them is installed, so an
  // established connection does not carry ~10 KB of wiped key schedules.
  struct HandshakeLevels {
    DirectionKeys slots[kEncryptionLevelCount - 1][2];
    PacketKeys original_initial_read;
    bool any_installed() const;
  };

  static size_t direction_index(Direction direction) {
    return direction == Direction::kWrite ? 1 : 0;
  }
  // The slot of an installed-or-not level, or null for a handshake level
  // while no handshake keys are held.
  DirectionKeys* find_slot(EncryptionLevel level, Direction direction);
  const DirectionKeys* find_slot(EncryptionLevel level, Direction direction) const;
  // As find_slot, creating the handshake levels' storage if needed; null
  // only if that allocation fails.
  DirectionKeys* slot_for_install(EncryptionLevel level, Direction direction);
  // Frees the handshake levels' storage once nothing in it is installed.
  void release_handshake_levels_if_unused();
  bool prepare_next_read();
  bool update_write_keys();
  void wipe_key_update_state();

  const MbManager& mb_;
  const wire::Role role_;
  uint32_t version_;
  // The version the installed Initial keys were derived with.
  uint32_t initial_keys_version_ = 0;
  DirectionKeys application_[2];
  std::unique_ptr<HandshakeLevels> handshake_levels_;

  // 1-RTT key update state.
  KeyPhase key_phase_;
  AeadKey next_read_;
  Secret next_read_secret_;
  AeadKey previous_read_;
  uint64_t previous_read_expiry_ = 0;
  bool key_update_error_ = false;
  uint64_t authentication_failures_ = 0;
  uint64_t integrity_limit_ = UINT64_MAX;
};

}  // namespace dpquic::crypto
