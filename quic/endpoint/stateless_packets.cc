#include "quic/endpoint/stateless_packets.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "quic/wire/varint.h"
#include "quic/wire/version_negotiation.h"

namespace dpquic::endpoint {

// --- Version Negotiation --------------------------------------------------------

bool should_send_version_negotiation(const wire::ParsedHeader& header, size_t datagram_size) {
  return header.long_header && !wire::is_supported_version(header.version) &&
         header.version != wire::kVersionNegotiationVersion &&
         datagram_size >= wire::kMinInitialDatagramSize;
}

size_t write_version_negotiation(std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid, uint64_t entropy,
                                 std::span<uint8_t> out) {
  wire::ByteWriter writer(out);
  return wire::build_version_negotiation(writer, received_dcid, received_scid, kOfferedVersions,
                                         entropy);
}

size_t write_version_negotiation(std::span<const uint8_t> received_dcid,
                                 std::span<const uint8_t> received_scid,
                                 std::span<const uint32_t> versions, uint64_t entropy,
                                 std::span<uint8_t> out) {
  wire::ByteWriter writer(out);
  return wire::build_version_negotiation(writer, received_dcid, received_scid, versions, entropy);
}

// --- Retry ------------------------------------------------------------------------

size_t write_retry_with_token(const crypto::RetryIntegrity& integrity, uint32_t version,
                              std::span<const uint8_t> dcid, std::span<const uint8_t> scid,
                              std::span<const uint8_t> token,
                              const wire::ConnectionId& original_dcid, uint8_t unused_bits,
                              std::span<uint8_t> out) {
  const size_t length =
      1 + 4 + 1 + dcid.size() + 1 + scid.size() + token.size() + wire::kRetryIntegrityTagLength;
  if (out.size() < length) return 0;
  wire::ByteWriter writer(out.first(length - wire::kRetryIntegrityTagLength));
  if (!wire::encode_retry_without_tag(writer, version, dcid, scid, token, unused_bits)) return 0;
  crypto::RetryIntegrityTag tag;
  if (!integrity.compute(version, original_dcid, writer.written(), tag)) return 0;
  std::memcpy(out.data() + writer.position(), tag.data(), tag.size());
  return length;
}

size_t write_retry(const crypto::RetryIntegrity& integrity, const crypto::AddressTokens& tokens,
                   uint32_t version, const conn::SocketAddress& client,
                   std::span<const uint8_t> client_dcid, std::span<const uint8_t> client_scid,
                   const wire::ConnectionId& new_scid, uint64_t now_us, std::span<uint8_t> out) {
  if (!wire::is_supported_version(version) || !client.valid() ||
      client_dcid.size() > wire::kMaxConnectionIdLength ||
      client_scid.size() > wire::kMaxConnectionIdLength) {
    return 0;
  }
  const wire::ConnectionId original_dcid(client_dcid);
  if (new_scid == original_dcid) return 0;

  uint8_t address[conn::SocketAddress::kEncodedMax];
  const size_t address_length = client.encode(address);
  uint8_t token[crypto::kMaxAddressTokenLength];
  const size_t token_length = tokens.issue(crypto::AddressTokenType::kRetry,
                                           {address, address_length}, original_dcid, now_us, token);
  if (token_length == 0) return 0;
  // The unused first-byte bits are arbitrary (RFC 9000 §17.2.5); the token's
  // last byte belongs to its AEAD tag and is as unpredictable as anything.
  const uint8_t unused_bits = token[token_length - 1] & 0x0f;
  return write_retry_with_token(integrity, version, client_scid, new_scid.span(),
                                {token, token_length}, original_dcid, unused_bits, out);
}

size_t write_retry(const crypto::MbManager& mb, const crypto::AddressTokens& tokens,
                   uint32_t version, const conn::SocketAddress& client,
                   std::span<const uint8_t> client_dcid, std::span<const uint8_t> client_scid,
                   const wire::ConnectionId& new_scid, uint64_t now_us, std::span<uint8_t> out) {
  // RetryIntegrity reports a failed key setup (which ipsec-mb does not do
  // for valid AES-128 keys) by throwing; here that becomes "send nothing".
  try {
    const crypto::RetryIntegrity integrity(mb);
    return write_retry(integrity, tokens, version, client, client_dcid, client_scid, new_scid,
                       now_us, out);
  } catch (const std::exception&) {
    return 0;
  }
}

// --- Initial tokens ---------------------------------------------------------------

crypto::TokenValidation validate_initial_token(const crypto::AddressTokens& tokens,
                                               std::span<const uint8_t> token,
                                               const conn::SocketAddress& client, uint64_t now_us,
                                               crypto::ValidatedToken& out) {
  // The claimed type picks the address bytes to compare; validate()
  // authenticates it, so a token relabelled to dodge the port check fails.
  const std::optional<crypto::AddressTokenType> type = crypto::AddressTokens::claimed_type(token);
  if (!type) return crypto::TokenValidation::kMalformed;
  uint8_t address[conn::SocketAddress::kEncodedMax];
  const size_t address_length = *type == crypto::AddressTokenType::kNewToken
                                    ? client.encode_ip(address)
                                    : client.encode(address);
  return tokens.validate(token, type, {address, address_length}, now_us, out);
}

InitialTokenAction check_initial_token(const crypto::AddressTokens& tokens,
                                       std::span<const uint8_t> token,
                                       const conn::SocketAddress& client, uint64_t now_us,
                                       crypto::ValidatedToken& out,
                                       crypto::TokenValidation* validation) {
  if (token.empty()) return InitialTokenAction::kNoToken;
  const crypto::TokenValidation result = validate_initial_token(tokens, token, client, now_us, out);
  if (validation != nullptr) *validation = result;
  switch (result) {
    case crypto::TokenValidation::kValid: return InitialTokenAction::kValidated;
    case crypto::TokenValidation::kWrongAddress:
    case crypto::TokenValidation::kExpired:
      // The token authenticated, so the type in its first byte is ours to
      // trust. A failed NEW_TOKEN token only costs the client its shortcut
      // (RFC 9000 §8.1.3).
      return crypto::AddressTokens::claimed_type(token) == crypto::AddressTokenType::kRetry
                 ? InitialTokenAction::kCloseInvalidToken
                 : InitialTokenAction::kUnvalidated;
    default:
      // Malformed or unauthentic: its claimed type cannot be trusted, and it
      // may be another server's NEW_TOKEN token.
      return InitialTokenAction::kUnvalidated;
  }
}

// --- Stateless reset ------------------------------------------------------------

size_t max_stateless_reset_length(size_t trigger_size) {
  if (trigger_size <= kMinStatelessResetLength) return 0;
  return std::min(trigger_size - 1, kMaxStatelessResetLength);
}

size_t stateless_reset_random_bytes_needed(size_t trigger_size) {
  const size_t max_length = max_stateless_reset_length(trigger_size);
  if (max_length == 0) return 0;
  const size_t unpredictable = max_length - sizeof(crypto::StatelessResetToken);
  return trigger_size <= kShortStatelessResetTrigger ? unpredictable : unpredictable + 2;
}

size_t write_stateless_reset(size_t trigger_size, const crypto::StatelessResetToken& token,
                             std::span<const uint8_t> random_bytes, std::span<uint8_t> out) {
  const size_t max_length = max_stateless_reset_length(trigger_size);
  if (max_length == 0 || out.size() < max_length ||
      random_bytes.size() < stateless_reset_random_bytes_needed(trigger_size)) {
    return 0;
  }
  size_t length = max_length;
  if (trigger_size > kShortStatelessResetTrigger) {
    // A length that varies like real packets' rather than tracking the
    // trigger's; the two bytes after the body's share pick it.
    const size_t body = max_length - sizeof(token);
    const size_t pick = static_cast<size_t>(random_bytes[body]) << 8 | random_bytes[body + 1];
    length = kMinLongStatelessResetLength + pick % (max_length - kMinLongStatelessResetLength + 1);
  }
  const size_t unpredictable = length - sizeof(token);
  std::memcpy(out.data(), random_bytes.data(), unpredictable);
  // Short-header form: Header Form 0, Fixed Bit 1 (RFC 9000 §10.3).
  out[0] = static_cast<uint8_t>((out[0] & 0x3f) | 0x40);
  std::memcpy(out.data() + unpredictable, token.data(), token.size());
  return length;
}

}  // namespace dpquic::endpoint
