#pragma once
// Packets the endpoint sends without connection state: Version Negotiation
// (RFC 9000 §6), Retry (RFC 9000 §8.1.2, §17.2.5; RFC 9001 §5.8) and the
// stateless reset (RFC 9000 §10.3), plus the check of a client Initial's
// token. Each writer fills `out` and returns the length written, or 0 (send
// nothing) when it cannot: invalid input or `out` too small. Nothing here
// allocates or reads a clock or an RNG: randomness and `now` come from the
// caller.

#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/mb_manager.h"
#include "crypto/retry_integrity.h"
#include "crypto/tokens.h"
#include "quic/conn/socket_address.h"
#include "quic/wire/connection_id.h"
#include "quic/wire/header.h"
#include "quic/wire/version.h"

namespace dpquic::endpoint {

// --- Version Negotiation --------------------------------------------------------

// The versions we offer, in order of preference, before the greased one.
inline constexpr uint32_t kOfferedVersions[] = {wire::kVersion1, wire::kVersion2};
// The largest Version Negotiation packet: two 255-byte CIDs (RFC 8999) and
// three versions.
inline constexpr size_t kMaxVersionNegotiationLength = 1 + 4 + 1 + 255 + 1 + 255 + 4 * 3;

// True if `header` (parsed from a datagram of `datagram_size` bytes) should be
// answered with Version Negotiation: a long header of a version we do not
// support, not itself Version Negotiation (RFC 9000 §6.1), in a datagram of
// at least 1200 bytes (RFC 9000 §14.1: smaller ones are dropped, so the
// answer never amplifies).
bool should_send_version_negotiation(const wire::ParsedHeader& header, size_t datagram_size);

// A Version Negotiation packet answering a packet that carried `received_dcid`
// and `received_scid` (each up to 255 bytes): the IDs swapped, then
// kOfferedVersions with one reserved version (0x?a?a?a?a) inserted at a
// position picked by `entropy`, which also fills the unused first-byte bits.
size_t write_version_negotiation(std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid, uint64_t entropy,
                                 std::span<uint8_t> out);
// The same, offering `versions` (an endpoint's configured versions) instead
// of kOfferedVersions.
size_t write_version_negotiation(std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid,
                                 std::span<const uint32_t> versions, uint64_t entropy,
                                 std::span<uint8_t> out);

// --- Retry ------------------------------------------------------------------------

// The largest Retry we write: 20-byte CIDs and the largest address token.
inline constexpr size_t kMaxRetryLength =
    1 + 4 + 1 + wire::kMaxConnectionIdLength + 1 + wire::kMaxConnectionIdLength +
    crypto::kMaxAddressTokenLength + wire::kRetryIntegrityTagLength;

// A Retry answering a client Initial (or 0-RTT) of `version`: DCID = the
// client's SCID, SCID = `new_scid` (which the client will use as its next
// DCID), token = a kRetry address token bound to `client`'s encoded address
// with the client's DCID as the original DCID, then the integrity tag.
// 0 if the version is unsupported, a CID exceeds 20 bytes, `new_scid` equals
// the client's DCID (RFC 9000 §17.2.5.1: the client would discard it), the
// client address is invalid, or `out` is shorter than the packet.
// Prefer this overload: `integrity` holds expanded keys and is built once per
// core.
size_t write_retry(const crypto::RetryIntegrity& integrity, const crypto::AddressTokens& tokens,
                   uint32_t version, const conn::SocketAddress& client,
                   std::span<const uint8_t> client_dcid, std::span<const uint8_t> client_scid,
                   const wire::ConnectionId& new_scid, uint64_t now_us, std::span<uint8_t> out);
// The same, expanding the two Retry integrity keys on every call.
size_t write_retry(const crypto::MbManager& mb, const crypto::AddressTokens& tokens,
                   uint32_t version, const conn::SocketAddress& client,
                   std::span<const uint8_t> client_dcid, std::span<const uint8_t> client_scid,
                   const wire::ConnectionId& new_scid, uint64_t now_us, std::span<uint8_t> out);

// The Retry writer under write_retry(), with the token given: DCID `dcid`,
// SCID `scid`, `token` (non-empty), the first byte's unused bits from
// `unused_bits`, and the tag computed with `original_dcid`.
size_t write_retry_with_token(const crypto::RetryIntegrity& integrity, uint32_t version,
                              std::span<const uint8_t> dcid, std::span<const uint8_t> scid,
                              std::span<const uint8_t> token,
                              const wire::ConnectionId& original_dcid, uint8_t unused_bits,
                              std::span<uint8_t> out);

// --- Initial tokens ---------------------------------------------------------------

// Validates the Token of a client Initial received from `client`: either type
// is accepted, a kRetry token bound to the client's IP and port
// (SocketAddress::encode), a kNewToken one to its IP only
// (SocketAddress::encode_ip: a later connection has another port). `now_us`
// is on the clock the tokens were issued on (see
// EndpointConfig::token_clock_offset). On kValid, `out` holds
// the type, issue time and original DCID. For a kRetry token the connection's
// original_destination_connection_id is `out.original_dcid` and its
// retry_source_connection_id is the Initial's DCID (the Retry's SCID, RFC 9000
// §7.3, §17.2.5.3); no further Retry may be sent (RFC 9000 §8.1.2).
crypto::TokenValidation validate_initial_token(const crypto::AddressTokens& tokens,
                                               std::span<const uint8_t> token,
                                               const conn::SocketAddress& client, uint64_t now_us,
                                               crypto::ValidatedToken& out);

// What the endpoint does with a client Initial given its token.
enum class InitialTokenAction : uint8_t {
  kNoToken,      // empty token: the Retry policy decides
  kValidated,    // address validated; `out` is filled in
  kUnvalidated,  // not ours, forged or a stale NEW_TOKEN one: proceed as if no token
                 // was sent, a Retry included (RFC 9000 §8.1.3)
  // An authentic Retry token that failed (another address, expired): the
  // client accepts no second Retry, so close with INVALID_TOKEN (RFC 9000
  // §8.1.2) instead of letting it time out.
  kCloseInvalidToken,
};

// validate_initial_token() and the decision above. `validation`, if given,
// receives the detailed result (left alone for an empty token).
InitialTokenAction check_initial_token(const crypto::AddressTokens& tokens,
                                       std::span<const uint8_t> token,
                                       const conn::SocketAddress& client, uint64_t now_us,
                                       crypto::ValidatedToken& out,
                                       crypto::TokenValidation* validation = nullptr);

// --- Stateless reset ------------------------------------------------------------

// RFC 9000 §10.3: 5 bytes that pass for a short header, then the 16-byte token.
inline constexpr size_t kMinStatelessResetLength = 21;
// Triggers up to this size are answered one byte shorter (RFC 9000 §10.3);
// larger ones with a random length from kMinLongStatelessResetLength up.
inline constexpr size_t kShortStatelessResetTrigger = 43;
inline constexpr size_t kMinLongStatelessResetLength = kShortStatelessResetTrigger - 1;
// Resets never exceed this, however large the trigger.
inline constexpr size_t kMaxStatelessResetLength = 1200;

// The largest reset sent for a `trigger_size`-byte datagram: trigger_size - 1
// (always smaller than the trigger, so resets cannot loop, RFC 9000 §10.3.3,
// nor amplify) capped at kMaxStatelessResetLength; 0 (send nothing) when that
// is below kMinStatelessResetLength, i.e. for triggers of 21 bytes or less.
size_t max_stateless_reset_length(size_t trigger_size);
// How many random bytes write_stateless_reset() needs for this trigger: the
// unpredictable part of the largest reset plus 2 bytes that pick the length.
// Never more than kMaxStatelessResetLength.
size_t stateless_reset_random_bytes_needed(size_t trigger_size);

// A stateless reset answering a `trigger_size`-byte datagram: first byte
// 0b01 plus 6 random bits, random bytes, the 16-byte `token` last. Its length
// is trigger_size - 1 for triggers of at most 43 bytes, otherwise uniform in
// [42, max_stateless_reset_length(trigger_size)]. `random_bytes` must hold
// stateless_reset_random_bytes_needed(trigger_size) bytes and `out`
// max_stateless_reset_length(trigger_size) bytes, else 0.
size_t write_stateless_reset(size_t trigger_size, const crypto::StatelessResetToken& token,
                             std::span<const uint8_t> random_bytes, std::span<uint8_t> out);

}  // namespace dpquic::endpoint
